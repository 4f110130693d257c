"""What every state store offers (:class:`StoreAPI`), and the pieces both stores share:
numbered migrations recorded in ``reach_schema``, settling a batch of queued writes.

The SQLite store is :mod:`reach_core.stores.sqlite`, the PostgreSQL one
:mod:`reach_core.stores.postgres`; :func:`reach_core.stores.open_store` picks one from
``[reach] store``. Nothing here imports either.
"""

from __future__ import annotations

import concurrent.futures
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

__all__ = ["StoreAPI", "StoreClosed", "apply_migrations", "fail_batch", "is_postgres_url", "settle_batch"]

T = TypeVar("T")

_POSTGRES_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://", "postgresql+psycopg2://")


def is_postgres_url(url: str) -> bool:
    """True for the URL forms ``[reach] store`` accepts for PostgreSQL (SQLAlchemy's included)."""
    return url.startswith(_POSTGRES_SCHEMES)

_SCHEMA_TABLE = """
CREATE TABLE IF NOT EXISTS reach_schema (
    component TEXT NOT NULL,
    version INTEGER NOT NULL,
    applied_at REAL NOT NULL,
    PRIMARY KEY (component, version)
)
"""


class StoreClosed(RuntimeError):
    """The store was closed; no further statements are accepted."""


class _Job:
    __slots__ = ("fn", "future", "deferred")

    def __init__(self, fn: Callable[[sqlite3.Connection], Any], deferred: bool) -> None:
        self.fn = fn
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.deferred = deferred


_STOP = object()


_DIALECT_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def settle_batch(results: Iterable[tuple[Any, Any, BaseException | None]]) -> None:
    """Hand each job of a committed batch of deferred writes its value or its own error."""
    for job, value, err in results:
        if err is None:
            job.future.set_result(value)
        else:
            job.future.set_exception(err)


def fail_batch(jobs: Iterable[Any], exc: BaseException) -> None:
    """A batch that did not commit: every job not settled yet gets the error."""
    for job in jobs:
        if not job.future.done():
            job.future.set_exception(exc)


def apply_migrations(conn: Any, component: str, migrations: Sequence[Any], dialect: str) -> int:
    """Apply ``component``'s migrations that ``reach_schema`` does not list yet, inside the
    caller's transaction (both stores run this; only the transaction around it differs).

    ``migrations[i]`` is version ``i + 1``: SQL (statements separated by ``;``), a callable
    taking the connection, or a dict choosing one of those by ``dialect``
    (``{"sqlite": ..., "postgresql": ..., "default": ...}``).
    """
    row = conn.execute("SELECT MAX(version) FROM reach_schema WHERE component = ?", (component,)).fetchone()
    current = row[0] or 0
    if current > len(migrations):
        raise RuntimeError(
            f"the store {component!r} schema is at version {current}, newer than this "
            f"code knows ({len(migrations)}); upgrade the package"
        )
    for version in range(current + 1, len(migrations) + 1):
        step = migrations[version - 1]
        if isinstance(step, Mapping):
            step = step.get(dialect, step.get("default"))
            if step is None:
                raise RuntimeError(
                    f"migration {version} of {component!r} has no {_DIALECT_NAMES.get(dialect, dialect)} form")
        if callable(step):
            step(conn)
        else:
            for stmt in (s.strip() for s in str(step).split(";")):
                if stmt:
                    conn.execute(stmt)
        conn.execute(
            "INSERT INTO reach_schema (component, version, applied_at) VALUES (?, ?, ?)",
            (component, version, time.time()),
        )
    return len(migrations)


class StoreAPI:
    """The statements every store offers, async and blocking, written once.

    A store supplies ``_await(job)`` / ``_submit(job)`` (run a job of the
    connection off the event loop) and the job builders ``_exec``, ``_execmany``,
    ``_all``, ``_one`` and ``_tx(fn, exclusive)``.
    """

    _await: Callable[..., Any]
    _submit: Callable[..., Any]
    _exec: Callable[..., Any]
    _execmany: Callable[..., Any]
    _all: Callable[..., Any]
    _one: Callable[..., Any]
    _tx: Callable[..., Any]

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement (autocommit); durable when it returns. Returns the rowcount."""
        return await self._await(self._exec(sql, params))  # type: ignore[no-any-return]

    async def executemany(self, sql: str, seq_of_params: Iterable[Sequence[Any]]) -> int:
        """Run one statement for each parameter tuple, all in one transaction."""
        return await self._await(self._execmany(sql, seq_of_params))  # type: ignore[no-any-return]

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return await self._await(self._all(sql, params))  # type: ignore[no-any-return]

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return await self._await(self._one(sql, params))  # type: ignore[no-any-return]

    async def transaction(self, fn: Callable[[Any], T], *, exclusive: bool = True) -> T:
        """Run ``fn(conn)`` off the event loop inside one transaction; an exception rolls back.

        ``fn`` must be quick and must not touch the event loop. ``exclusive`` (default,
        like SQLite's BEGIN IMMEDIATE): no other exclusive transaction on this database
        runs at the same time, in any process.
        """
        return await self._await(self._tx(fn, exclusive))  # type: ignore[no-any-return]

    # blocking twins for CLI commands (never call these on the event loop)
    def execute_sync(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._submit(self._exec(sql, params)).result()  # type: ignore[no-any-return]

    def executemany_sync(self, sql: str, seq_of_params: Iterable[Sequence[Any]]) -> int:
        return self._submit(self._execmany(sql, seq_of_params)).result()  # type: ignore[no-any-return]

    def fetchall_sync(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._submit(self._all(sql, params)).result()  # type: ignore[no-any-return]

    def fetchone_sync(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self._submit(self._one(sql, params)).result()  # type: ignore[no-any-return]

    def transaction_sync(self, fn: Callable[[Any], T], *, exclusive: bool = True) -> T:
        return self._submit(self._tx(fn, exclusive)).result()  # type: ignore[no-any-return]
