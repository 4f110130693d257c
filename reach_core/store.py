"""The state store: one SQLite database (WAL) that budgets, the operation ledger,
audit and pending confirmations share.

Why it looks like this:

* **Nothing acknowledged is lost on kill -9.** WAL journal with
  ``synchronous=FULL``: when ``await store.execute(...)`` returns, the row is on disk.
* **The event loop never blocks.** One dedicated thread owns the connection and
  runs every statement in submission order (so a read sees every earlier write);
  coroutines await a future. The ``*_sync`` twins are for CLI commands.
* **Hot counters stay cheap.** :meth:`Store.defer` queues a write without waiting;
  the thread commits all queued deferred writes in one transaction as soon as it
  is free (budgets use it: the in-memory counter is authoritative, the store
  keeps it across restarts).
* **Portable SQL.** ``?`` placeholders, ``INSERT ... ON CONFLICT``, no SQLite-only
  types, so a PostgreSQL store can follow with the same statements.
* **Versioned schema.** :meth:`Store.migrate` applies a component's numbered
  migrations once, recorded in ``reach_schema``; plugins (audit, confirmation)
  use it for their own tables.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["Store", "StoreAPI", "StoreClosed"]

T = TypeVar("T")

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


class Store(StoreAPI):
    """SQLite state store with one writer thread; opened lazily on first use.

    ``path`` is the database file (its directory is created). ``busy_timeout``
    (ms) lets several processes (a CLI next to a server) share one file.
    """

    #: other processes do not spend this store's budgets (see ``store_pg.PgStore``)
    shared = False

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 10_000) -> None:
        self.path = Path(path)
        self._busy_timeout_ms = busy_timeout_ms
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._open_error: BaseException | None = None
        self._opened = threading.Event()

    # ------------------------------------------------------------------ lifecycle
    def _ensure_started(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._closed:
                raise StoreClosed(f"the store {self.path} is closed")
            if self._thread is None:
                t = threading.Thread(target=self._run, name=f"reach-store:{self.path.name}", daemon=True)
                t.start()
                self._opened.wait()
                if self._open_error is not None:
                    err, self._open_error = self._open_error, None
                    raise err
                self._thread = t

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(_SCHEMA_TABLE)
        return conn

    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:  # reported to the opener
            self._open_error = exc
            self._opened.set()
            return
        self._opened.set()
        try:
            while True:
                job = self._queue.get()
                if job is _STOP:
                    break
                if job.deferred:
                    batch = [job]
                    stop = False
                    while True:  # drain every deferred write already queued into one commit
                        try:
                            nxt = self._queue.get_nowait()
                        except queue.Empty:
                            break
                        if nxt is _STOP:
                            stop = True
                            break
                        if not nxt.deferred:
                            self._run_batch(conn, batch)
                            batch = []
                            self._run_one(conn, nxt)
                            continue
                        batch.append(nxt)
                    if batch:
                        self._run_batch(conn, batch)
                    if stop:
                        break
                else:
                    self._run_one(conn, job)
        finally:
            # fail anything still queued so no awaiter hangs forever
            while True:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is not _STOP and job.future.set_running_or_notify_cancel():
                    job.future.set_exception(StoreClosed(f"the store {self.path} is closed"))
            conn.close()

    @staticmethod
    def _run_one(conn: sqlite3.Connection, job: _Job) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        try:
            job.future.set_result(job.fn(conn))
        except BaseException as exc:
            if conn.in_transaction:
                conn.rollback()
            job.future.set_exception(exc)

    @staticmethod
    def _run_batch(conn: sqlite3.Connection, batch: list[_Job]) -> None:
        live = [j for j in batch if j.future.set_running_or_notify_cancel()]
        if not live:
            return
        results: list[tuple[_Job, Any, BaseException | None]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for j in live:
                conn.execute("SAVEPOINT reach_deferred")
                try:
                    results.append((j, j.fn(conn), None))
                    conn.execute("RELEASE reach_deferred")
                except Exception as exc:  # one bad statement must not sink the batch
                    conn.execute("ROLLBACK TO reach_deferred")
                    conn.execute("RELEASE reach_deferred")
                    results.append((j, None, exc))
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.rollback()
            fail_batch(live, exc)
            return
        settle_batch(results)

    def _submit(self, fn: Callable[[sqlite3.Connection], T], deferred: bool = False) -> concurrent.futures.Future[T]:
        if self._closed:
            raise StoreClosed(f"the store {self.path} is closed")
        self._ensure_started()
        job = _Job(fn, deferred)
        self._queue.put(job)
        return job.future

    async def _await(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.wrap_future(self._submit(fn))

    async def aclose(self) -> None:
        """Finish queued work, then close the connection. Idempotent."""
        thread = self._close_begin()
        if thread is not None:
            await asyncio.to_thread(thread.join)

    def close_sync(self) -> None:
        """Blocking twin of :meth:`aclose`, for CLI commands and atexit."""
        thread = self._close_begin()
        if thread is not None:
            thread.join()

    def _close_begin(self) -> threading.Thread | None:
        with self._lock:
            if self._closed:
                return None
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._queue.put(_STOP)
        return thread

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------------ statements
    @staticmethod
    def _exec(sql: str, params: Sequence[Any]) -> Callable[[sqlite3.Connection], int]:
        def run(conn: sqlite3.Connection) -> int:
            return conn.execute(sql, params).rowcount

        return run

    @staticmethod
    def _execmany(sql: str, seq: Iterable[Sequence[Any]]) -> Callable[[sqlite3.Connection], int]:
        rows = list(seq)

        def run(conn: sqlite3.Connection) -> int:
            conn.execute("BEGIN IMMEDIATE")
            try:
                n = conn.executemany(sql, rows).rowcount
            except BaseException:
                conn.rollback()
                raise
            conn.execute("COMMIT")
            return n

        return run

    @staticmethod
    def _all(sql: str, params: Sequence[Any]) -> Callable[[sqlite3.Connection], list[tuple[Any, ...]]]:
        return lambda conn: conn.execute(sql, params).fetchall()

    @staticmethod
    def _one(sql: str, params: Sequence[Any]) -> Callable[[sqlite3.Connection], tuple[Any, ...] | None]:
        return lambda conn: conn.execute(sql, params).fetchone()

    @staticmethod
    def _tx(fn: Callable[[sqlite3.Connection], T], exclusive: bool = True) -> Callable[[sqlite3.Connection], T]:
        # SQLite transactions here always take the write lock at BEGIN: `exclusive` changes nothing
        def run(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                value = fn(conn)
            except BaseException:
                conn.rollback()
                raise
            conn.execute("COMMIT")
            return value

        return run

    def defer(self, sql: str, params: Sequence[Any] = ()) -> concurrent.futures.Future[int]:
        """Queue a write without waiting; committed with other deferred writes in one
        transaction as soon as the store thread is free. Use for counters whose
        authoritative value lives in memory."""
        return self._submit(self._exec(sql, params), deferred=True)

    def defer_call(self, fn: Callable[[sqlite3.Connection], Any]) -> concurrent.futures.Future[Any]:
        """Like :meth:`defer` for a function of the connection (run in the store thread,
        inside the deferred batch's transaction)."""
        return self._submit(fn, deferred=True)

    async def flush(self) -> None:
        """Wait until every write queued so far is committed."""
        await self._await(lambda conn: None)

    # ------------------------------------------------------------------ schema
    @staticmethod
    def _migrate(component: str, migrations: Sequence[Any]) -> Callable[[sqlite3.Connection], int]:
        def run(conn: sqlite3.Connection) -> int:
            conn.execute("BEGIN IMMEDIATE")
            try:
                n = apply_migrations(conn, component, migrations, "sqlite")
            except BaseException:
                conn.rollback()
                raise
            conn.execute("COMMIT")
            return n

        return run

    async def migrate(self, component: str, migrations: Sequence[Any]) -> int:
        """Apply ``component``'s migrations not yet applied, in order, atomically.

        ``migrations[i]`` is version ``i + 1``: SQL (statements separated by ``;``),
        a callable taking the connection, or a dict of those per database (see
        :func:`apply_migrations`). Append new versions; never edit old ones. Returns
        the schema version now in place.
        """
        return await self._await(self._migrate(component, migrations))

    def migrate_sync(self, component: str, migrations: Sequence[Any]) -> int:
        return self._submit(self._migrate(component, migrations)).result()

    @classmethod
    def for_reach(cls, reach: Any) -> Any:
        """The store a ``Reach`` uses: ``[reach] store`` (a file path, ``sqlite:///path``
        or ``postgresql://...`` for :class:`reach_core.store_pg.PgStore`), else
        ``data_dir/reach.db``."""
        from .errors import ConfigError

        uri = getattr(getattr(reach.config, "reach", None), "store", None)
        if not uri:
            return cls(Path(reach.data_dir) / "reach.db")
        if uri.startswith("sqlite:///"):
            return cls(Path(uri[len("sqlite:///"):]))
        from .store_pg import is_postgres_url

        if is_postgres_url(uri):
            import importlib.util

            if importlib.util.find_spec("psycopg") is None:
                raise ConfigError(
                    "[reach] store is PostgreSQL but psycopg is not installed: pip install \"reach-core[postgres]\""
                )
            from .store_pg import PgStore

            return PgStore(uri)
        if "://" in uri:
            raise ConfigError(
                f"[reach] store = {uri!r}: use a path, sqlite:///path or postgresql://user:pw@host/db"
            )
        return cls(Path(uri))

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

