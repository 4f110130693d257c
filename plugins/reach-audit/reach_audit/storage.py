"""Where audit rows live: the ``audit_log`` table of the Reach state store.

``store_for(reach)`` returns ``reach.store`` (the core's SQLite/WAL store with one
writer thread) and falls back to :class:`LocalStore`, a minimal store with the
same interface on ``<data_dir>/reach.db``, when the core has none. Everything
else in this plugin only uses that small interface.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import orjson

from .chain import _SORTED, GENESIS, _sha256, link
from .record import Row

TABLE = "audit_log"
COMPONENT = "reach-audit"

SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        seq INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        kind TEXT NOT NULL,
        agent TEXT,
        tool TEXT,
        status TEXT,
        elapsed_ms REAL,
        run_id TEXT,
        call_id TEXT,
        record TEXT NOT NULL,
        hash TEXT NOT NULL
    )""",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_ts ON {TABLE}(ts)",
)
# Append-only at the database level too: the writer never updates or deletes, so
# anything that tries is either a bug or tampering. (SQLite syntax; a PostgreSQL
# store gets its own rule.)
SQLITE_APPEND_ONLY = (
    f"""CREATE TRIGGER IF NOT EXISTS {TABLE}_no_update BEFORE UPDATE ON {TABLE}
        BEGIN SELECT RAISE(ABORT, '{TABLE} is append-only'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS {TABLE}_no_delete BEFORE DELETE ON {TABLE}
        BEGIN SELECT RAISE(ABORT, '{TABLE} is append-only'); END""",
)

INSERT = (
    f"INSERT INTO {TABLE} (seq, ts, kind, agent, tool, status, elapsed_ms, run_id, call_id, record, hash)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
COLUMNS = "seq, ts, kind, agent, tool, status, elapsed_ms, run_id, call_id, record, hash"


class Store(Protocol):
    """The part of ``reach_core.stores.Store`` this plugin relies on."""

    path: Path

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...
    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
    async def transaction(self, fn: Callable[[sqlite3.Connection], Any]) -> Any: ...
    async def migrate(self, component: str, migrations: Sequence[Any]) -> int: ...
    def fetchall_sync(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
    def transaction_sync(self, fn: Callable[[sqlite3.Connection], Any]) -> Any: ...
    def migrate_sync(self, component: str, migrations: Sequence[Any]) -> int: ...


class LocalStore:
    """SQLite in WAL mode with synchronous=FULL behind one dedicated thread.

    Used only when the core offers no ``reach.store``; durable when a call returns.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reach-audit-db")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # busy_timeout (connect's timeout) first: switching to WAL takes a lock too
            conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            self._conn = conn
        return self._conn

    def _run(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        with self._lock:
            return fn(self._connection())

    def _tx(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        def body(conn: sqlite3.Connection) -> Any:
            conn.execute("BEGIN IMMEDIATE")
            try:
                out = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return out

        return self._run(body)

    async def _submit(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.wrap_future(self._pool.submit(fn))

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return await self._submit(lambda: self._run(lambda c: c.execute(sql, params).rowcount))

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return await self._submit(lambda: self.fetchall_sync(sql, params))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def transaction(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        return await self._submit(lambda: self._tx(fn))

    def execute_sync(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._run(lambda c: c.execute(sql, params).rowcount)

    def fetchall_sync(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self._run(lambda c: c.execute(sql, params).fetchall())

    def transaction_sync(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        return self._tx(fn)

    async def migrate(self, component: str, migrations: Sequence[Callable[[sqlite3.Connection], None]]) -> int:
        """Idempotent schema set-up (the migrations here all use IF NOT EXISTS)."""

        def run(conn: sqlite3.Connection) -> None:
            for step in migrations:
                step(conn)

        await self.transaction(run)
        return len(migrations)

    def migrate_sync(self, component: str, migrations: Sequence[Callable[[sqlite3.Connection], None]]) -> int:
        def run(conn: sqlite3.Connection) -> None:
            for step in migrations:
                step(conn)

        self.transaction_sync(run)
        return len(migrations)

    async def aclose(self) -> None:
        await self._submit(self.close)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def data_dir_of(reach: Any) -> Path:
    """The Reach data directory (``[reach] data_dir``, default ``./.reach``)."""
    for attr in ("data_dir",):
        value = getattr(reach, attr, None)
        if value:
            return Path(value)
    config = getattr(reach, "config", None)
    section = getattr(config, "reach", None)
    value = getattr(section, "data_dir", None)
    return Path(value) if value else Path(".reach")


def store_for(reach: Any) -> Store:
    """The state store to write into: the core's when it has one."""
    store = getattr(reach, "store", None)
    if store is not None:
        return store
    return LocalStore(data_dir_of(reach) / "reach.db")


def create_schema(conn: sqlite3.Connection) -> None:
    """Create the table, its index and (on SQLite) the append-only triggers."""
    for sql in SCHEMA:
        conn.execute(sql)
    if isinstance(conn, sqlite3.Connection):
        for sql in SQLITE_APPEND_ONLY:
            conn.execute(sql)


MIGRATIONS = (create_schema,)

RETRY_WINDOW = 10_000  # rows another process may have appended since a lost acknowledgement


def _landed(conn: sqlite3.Connection, rows: list[Row], head_seq: int) -> bool:
    """Did a previous attempt at these exact rows commit? (Their hashes were set by it.)"""
    found = conn.execute(
        f"SELECT 1 FROM {TABLE} WHERE seq > ? AND hash = ? LIMIT 1",
        (head_seq - len(rows) - RETRY_WINDOW, rows[-1].hash),
    ).fetchone()
    return found is not None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(text: str) -> str:
    """``text`` with each lone UTF-16 surrogate written as its visible escape (``\\ud800``)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _escaped(value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_surrogates(v) for v in value]
    return value


def _scrub_row(row: Row) -> None:
    """Make a record that holds lone UTF-16 surrogates storable, and keep its columns equal
    to its fields (``verify`` compares them).

    Why: a framework that parses the model's JSON itself (LangChain, the Python API)
    hands reach strings with lone surrogates; reach refuses the call, but its record is
    not UTF-8, so SQLite and the hash refused it and the writer retried that batch for
    ever, with every later record of the process behind it. Written as visible escapes,
    the record keeps what the model sent and the log goes on.
    """
    record = row.record = _without_surrogates(row.record)
    row.agent, row.tool, row.status = record.get("agent"), record.get("tool"), record.get("status")
    row.run_id, row.call_id = record.get("run_id"), record.get("call_id")


def chain(rows: list[Row], prev: str, prev_seq: int) -> list[tuple[Any, ...]]:
    """Number and hash ``rows`` as the continuation of ``(prev_seq, prev)``; return their
    INSERT parameters.

    Each record holds its own ``seq``, so every column of a row is bound by the hash
    (the others are copies of record fields that ``verify`` compares). Pure Python
    work; the writer does it on the event loop, in slices, so the store thread only
    runs SQLite (which releases the GIL) and never makes the loop wait.
    """
    params = []
    dumps, sha256 = orjson.dumps, _sha256
    for row in rows:
        prev_seq += 1
        record = row.record
        row.seq = record["seq"] = prev_seq
        try:  # chain.link, written out: the writer chains every record
            raw = dumps(record, option=_SORTED)
        except TypeError:
            if _has_lone_surrogate(record):  # (orjson refuses them; also ints past 64 bits, kept)
                _scrub_row(row)
                record = row.record
            canonical, prev = link(prev, record)
        else:
            canonical = raw.decode("utf-8")
            prev = sha256(prev.encode("ascii") + b"\n" + raw).hexdigest()
        row.canonical = canonical
        row.hash = prev
        params.append((prev_seq, row.ts, row.kind, row.agent, row.tool, row.status, row.elapsed_ms, row.run_id,
                       row.call_id, canonical, prev))
    return params


def append_rows(
    conn: sqlite3.Connection,
    rows: Iterable[Row],
    *,
    expected_prev: str | None = None,
    params: list[tuple[Any, ...]] | None = None,
) -> tuple[int, str]:
    """Insert ``rows`` as the next links of the chain, inside the caller's transaction.

    ``params`` chained in advance from ``expected_prev`` are used as they are when the
    head of the table is still ``expected_prev`` (the usual case: one writer); else
    the rows are re-chained from the real head (another process appended meanwhile).
    Reading the head and inserting in one BEGIN IMMEDIATE transaction keeps the
    chain linear with several processes on one database. A retry of a batch whose
    commit landed but was never acknowledged is recognised and adds nothing.
    Returns (rows inserted, new head hash).
    """
    rows = list(rows)
    if not rows:
        head = conn.execute(f"SELECT hash FROM {TABLE} ORDER BY seq DESC LIMIT 1").fetchone()
        return 0, head[0] if head else GENESIS
    head = conn.execute(f"SELECT seq, hash FROM {TABLE} ORDER BY seq DESC LIMIT 1").fetchone()
    head_hash = head[1] if head else GENESIS
    if params is not None and head_hash == expected_prev:
        conn.executemany(INSERT, params)
        return len(params), rows[-1].hash  # type: ignore[return-value]
    if head is not None and rows[-1].hash is not None and _landed(conn, rows, head[0]):
        return 0, head_hash  # an earlier attempt committed them (its caller was cancelled)
    fresh = chain(rows, head_hash, int(head[0]) if head else 0)
    conn.executemany(INSERT, fresh)
    return len(fresh), fresh[-1][-1]
