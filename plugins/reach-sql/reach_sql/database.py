"""Engines and the three operations, with the database enforcing the limits.

This module knows nothing about reach: it runs synchronously (the connectors
call it from a worker thread) and raises the small exception family below,
which the connectors translate into reach's error codes.

Read path, per dialect:

- SQLite: a second engine on the same file opened with ``mode=ro`` plus the
  read-only authorizer (``sqlite_guard``); a progress handler stops the
  statement at its deadline.
- PostgreSQL: the statement is parsed first (``classify.pg_read_statement``:
  one SELECT/VALUES calling no refused function such as ``set_config`` or
  ``pg_terminate_backend``), then runs as the ``read_url`` role (SELECT rights
  only) in a ``BEGIN READ ONLY`` transaction with ``SET LOCAL
  statement_timeout``, through server-side cursors (``DECLARE``) with a byte
  budget the server enforces (``pg_read``). The transaction is always rolled
  back.

Write path: SQLite uses the write authorizer; PostgreSQL connections prepare
every statement (``prepare_threshold = 0``), and the server refuses to prepare
more than one command, so ``...; DROP TABLE`` cannot ride along.

Every PostgreSQL statement also has a client-side deadline (``pg_session.Watchdog``
sends the protocol's cancel, which no query can switch off), and every pooled
PostgreSQL connection is reset with ``DISCARD ALL`` after each call.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .classify import SqlParseError, pg_read_statement
from .pg_read import Cut, WrapError, fetch_capped, fetch_written, row_plan, to_pyformat
from .pg_session import Abort, Watchdog, pg_cancel, pg_hard_stop, reset_session
from .sqlite_guard import Authorizer, read_only_authorizer, write_authorizer
from .write_guard import PgWriteGuard, SqliteWriteGuard

if TYPE_CHECKING:  # SQLAlchemy is imported on first use: listing tools stays fast
    from sqlalchemy import Connection, Engine
    from sqlalchemy.engine import URL

_COUNT_CHUNK = 1000
_CAST_AFTER_BIND = re.compile(r"(?<![:\w]):\w+::")
# Worker threads for the synchronous drivers: one per statement that may run at once,
# so statements stuck until their deadline never queue an honest call behind them.
_WORKERS = 32


class SqlProblem(Exception):
    """Base of the failures the connectors translate; ``str()`` is written for a model."""


class SqlRefused(SqlProblem):
    """The database refused the statement for safety (read-only, not authorized, ...)."""


class SqlFailed(SqlProblem):
    """The statement itself is wrong: syntax, unknown table or column, missing parameter."""


class SqlTimeout(SqlProblem):
    """The statement ran past its deadline and was stopped by the database."""


class SqlUnavailable(SqlProblem):
    """The database could not be reached; worth retrying later."""


@dataclass
class Rows:
    """Column names and the first rows of a result, plus how many more there were."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    more_rows: int = 0
    more_rows_capped: bool = False  # True when counting stopped at the cap
    rowcount: int | None = None  # rows changed, for writes
    cut_values: int = 0  # values not sent whole (over max_value_bytes, or past max_result_bytes)
    result_full: bool = False  # True when the result reached max_result_bytes


def _first_line(exc: BaseException | None) -> str:
    msg = str(exc or "").strip().splitlines()
    return msg[0] if msg else type(exc).__name__ if exc else "database error"


def sqlite_file(url: URL) -> Path:
    """The file behind a SQLite URL; in-memory databases cannot have a separate read path."""
    db = url.database or ""
    if db.startswith("file:"):
        db = db[5:].split("?", 1)[0]
    if not db or db == ":memory:":
        raise SqlFailed(
            "reach-sql needs a SQLite *file* (url = \"sqlite:///path/to/db.sqlite3\"); "
            "an in-memory database has no separate read-only connection"
        )
    return Path(db).expanduser().resolve()


class Database:
    """Lazily created write and read engines for one configured database."""

    def __init__(
        self,
        url: str,
        read_url: str | None = None,
        *,
        count_cap: int = 10_000,
        create_missing: bool = False,
        max_value_bytes: int = 64 * 1024,
        max_result_bytes: int = 8 * 1024 * 1024,
        max_chars: int = 500,
        max_write_value_bytes: int = 16 * 1024 * 1024,
        max_write_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.url = url
        self.read_url = read_url
        # "postgresql+psycopg://..." -> "postgresql", without importing SQLAlchemy yet
        self.dialect = url.split(":", 1)[0].split("+", 1)[0].lower()
        if self.dialect == "postgres":
            self.dialect = "postgresql"
        self.count_cap = count_cap
        self.create_missing = create_missing
        self.max_value_bytes = max_value_bytes
        self.max_result_bytes = max_result_bytes
        self.max_chars = max_chars
        self.max_write_value_bytes = max_write_value_bytes
        self.max_write_bytes = max_write_bytes
        self._lock = threading.Lock()
        self._write: Engine | None = None
        self._read: Engine | None = None
        self._executor: ThreadPoolExecutor | None = None

    def executor(self) -> ThreadPoolExecutor:
        """This database's own worker threads (asyncio's default pool has only cpu+4)."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(_WORKERS, thread_name_prefix="reach-sql")
            return self._executor

    @property
    def path(self) -> Path:
        """The SQLite file reads open (from ``read_url`` when given)."""
        from sqlalchemy.engine import make_url

        return sqlite_file(make_url(self.read_url or self.url))

    # -- engines ---------------------------------------------------------

    def write_engine(self) -> Engine:
        with self._lock:
            if self._write is None:
                self._write = self._make_write_engine()
            return self._write

    def read_engine(self) -> Engine:
        with self._lock:
            if self._read is None:
                self._read = self._make_read_engine()
            return self._read

    def _pool_options(self) -> dict[str, Any]:
        """As many pooled connections as worker threads: statements waiting for their
        deadline must not leave an honest call waiting for a connection."""
        if self.dialect == "sqlite":
            return {}
        return {"pool_size": 5, "max_overflow": _WORKERS - 5}

    def _make_write_engine(self) -> Engine:
        from sqlalchemy import create_engine, event

        engine = create_engine(self.url, pool_pre_ping=self.dialect != "sqlite", **self._pool_options())
        if self.dialect == "postgresql":
            event.listen(engine, "connect", _prepare_everything)
        return engine

    def _make_read_engine(self) -> Engine:
        from sqlalchemy import URL, create_engine, event

        if self.dialect == "sqlite":
            path = self.path
            if not path.exists() and self.create_missing:
                path.parent.mkdir(parents=True, exist_ok=True)
                sqlite3.connect(path).close()
            if not path.exists():
                raise SqlFailed(f"the database file {path} does not exist yet")
            ro = URL.create(
                "sqlite+pysqlite",
                database=f"file:{quote(str(path))}",
                query={"mode": "ro", "uri": "true"},
            )
            engine = create_engine(ro)
            event.listen(engine, "connect", _install_read_authorizer)
            return engine
        # No pre-ping: a dropped connection fails the read as upstream_unavailable, the pool
        # discards it, and the core retries (reads are idempotent). Saves a round trip per call.
        engine = create_engine(self.read_url or self.url, **self._pool_options())
        if self.dialect == "postgresql":
            event.listen(engine, "connect", _read_only_session)
        return engine

    def dispose(self) -> None:
        for engine in (self._read, self._write):
            if engine is not None:
                engine.dispose()
        self._read = self._write = None
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None

    # -- connections with guards -------------------------------------------

    @contextmanager
    def _connect(self, engine: Engine) -> Iterator[Connection]:
        from sqlalchemy import exc as sa_exc

        try:
            conn = engine.connect()
        except sa_exc.DBAPIError as exc:
            raise SqlUnavailable(
                f"could not connect to the database ({_first_line(exc.orig)}); try again later"
            ) from exc
        try:
            yield conn
        finally:
            if self.dialect == "postgresql":
                _reset_or_discard(conn)
            conn.close()

    @contextmanager
    def _read_transaction(self, timeout: float, abort: Abort | None = None) -> Iterator[Connection]:
        with self._connect(self.read_engine()) as conn:
            with _translate(timeout, read=True), _deadline(conn, timeout, abort), \
                    _sqlite_deadline(conn, timeout, read_only_authorizer):
                if self.dialect == "postgresql":
                    # The connection is read_only (BEGIN READ ONLY); SET LOCAL ends with the transaction.
                    conn.exec_driver_sql(f"SET LOCAL statement_timeout = {_ms(timeout)}")
                try:
                    yield conn
                finally:
                    conn.rollback()

    # -- operations ----------------------------------------------------------

    def query(
        self, sql: str, params: dict[str, Any] | None, limit: int, timeout: float, abort: Abort | None = None
    ) -> Rows:
        """Run one read-only statement; return at most ``limit`` rows and count the rest."""
        from sqlalchemy import text

        if self.dialect == "postgresql":
            return self._pg_query(sql, params, limit, timeout, abort)
        with self._read_transaction(timeout, abort) as conn, _translate(timeout, read=True):
            result = conn.execution_options(stream_results=True, max_row_buffer=limit + _COUNT_CHUNK).execute(
                text(sql), params or {}
            )
            if not result.returns_rows:
                raise SqlRefused("sql_query runs one SELECT statement; this statement returns no rows")
            return self._collect(result, limit)

    def _pg_query(
        self, sql: str, params: dict[str, Any] | None, limit: int, timeout: float, abort: Abort | None
    ) -> Rows:
        try:
            reason, statement = pg_read_statement(sql)
        except SqlParseError as exc:
            hint = " Write CAST(:name AS type) instead of :name::type." if _CAST_AFTER_BIND.search(sql) else ""
            raise SqlFailed(
                f"{exc} (sql_query accepts one SELECT, WITH … SELECT or VALUES statement).{hint}"
            ) from exc
        if reason:
            raise SqlRefused(
                f"sql_query is read-only and runs one SELECT statement; refused: {reason}. "
                "Use sql_execute for changes"
            )
        query = to_pyformat(statement)
        with self._connect(self.read_engine()) as conn, _translate(timeout, read=True):
            raw = conn.connection.driver_connection
            with _deadline(conn, timeout, abort):
                got = fetch_capped(
                    raw, query, params or {}, limit=limit, count_cap=self.count_cap,
                    max_value=self.max_value_bytes, max_total=self.max_result_bytes, max_chars=self.max_chars,
                    setup=f"SET LOCAL statement_timeout = {_ms(timeout)}",
                )
        return Rows(
            columns=got.columns, rows=got.rows, more_rows=got.more_rows, more_rows_capped=got.more_rows_capped,
            cut_values=got.cut_values, result_full=got.result_full,
        )

    def execute(
        self, sql: str, params: dict[str, Any] | None, *, admin: bool, limit: int, timeout: float,
        abort: Abort | None = None,
    ) -> Rows:
        """Run one changing statement and commit it; RETURNING rows come back capped."""
        from sqlalchemy import text

        with self._connect(self.write_engine()) as conn, _translate(timeout, read=False), \
                _deadline(conn, timeout, abort):
            if self.dialect == "postgresql":
                conn.exec_driver_sql(f"SET LOCAL statement_timeout = {_ms(timeout)}")
            with _sqlite_deadline(conn, timeout):
                guard = None if admin else self._write_guard(conn, sql)
                if guard is not None:
                    guard.start()
                with guard.limits() if isinstance(guard, SqliteWriteGuard) else nullcontext(), \
                        _sqlite_authorizer(conn, write_authorizer(admin=admin)):
                    pg_rows = self._pg_rows(conn, sql, params or {}, limit) if self.dialect == "postgresql" else None
                    if pg_rows is not None:
                        out = pg_rows
                    else:
                        result = conn.execute(text(sql), params or {})
                        if result.returns_rows:
                            out = self._collect(result, limit)
                            out.rowcount = result.rowcount if result.rowcount >= 0 else None
                        else:
                            out = Rows(columns=[], rows=[], rowcount=result.rowcount)
                        result.close()
                if guard is not None and (why := guard.refusal()):
                    conn.rollback()
                    raise SqlRefused(f"sql_execute refused this statement: {why}.")
            conn.commit()
            return out

    def _pg_rows(self, conn: Connection, sql: str, params: dict[str, Any], limit: int) -> Rows | None:
        """The rows a PostgreSQL statement answers ``sql_execute``, capped on the server before
        they are fetched as ``sql_query``'s are (``pg_read``): a SELECT through cursors run to
        its end, a statement that writes as the CTE of one capping query (run exactly once).
        None, without running it, for a statement that answers no rows."""
        raw = conn.connection.driver_connection
        caps: dict[str, Any] = {"limit": limit, "max_value": self.max_value_bytes,
                                "max_total": self.max_result_bytes, "max_chars": self.max_chars}
        try:
            plan = row_plan(sql)
            if plan is None:
                return None
            if plan.cursor:
                got = fetch_capped(raw, to_pyformat(plan.statement), params, count_cap=self.count_cap,
                                   run_to_end=True, **caps)
                total = len(got.rows) + got.more_rows
            else:
                got, total = fetch_written(raw, plan, sql, params, **caps)
        except WrapError as exc:
            raise SqlFailed(str(exc)) from exc
        return Rows(columns=got.columns, rows=got.rows, more_rows=got.more_rows, more_rows_capped=got.more_rows_capped,
                    cut_values=got.cut_values, result_full=got.result_full, rowcount=total)

    def _write_guard(self, conn: Connection, sql: str) -> SqliteWriteGuard | PgWriteGuard | None:
        """The every-row check and size caps of ``write_guard`` for this dialect (none for others)."""
        raw = conn.connection.driver_connection
        caps = {"max_value_bytes": self.max_write_value_bytes, "max_write_bytes": self.max_write_bytes}
        if isinstance(raw, sqlite3.Connection):
            return SqliteWriteGuard(raw, sql, **caps)
        if self.dialect == "postgresql" and raw is not None:
            return PgWriteGuard(raw.cursor(), sql, **caps)
        return None

    def schema(
        self, table: str | None, timeout: float, max_tables: int = 200, abort: Abort | None = None
    ) -> dict[str, Any]:
        """Tables (or one table) with columns, keys and exact row counts."""
        from sqlalchemy import inspect, text

        with self._read_transaction(timeout, abort) as conn, _translate(timeout, read=True):
            insp = inspect(conn)
            tables = sorted(insp.get_table_names())
            views = sorted(insp.get_view_names())
            if table is not None:
                if table not in tables and table not in views:
                    raise SqlFailed(f"no table or view named {table!r}; known: {', '.join(tables + views) or 'none'}")
                names = [table]
            else:
                names = tables[:max_tables]
            quote_ident = conn.dialect.identifier_preparer.quote
            described = []
            for name in names:
                pk = set(insp.get_pk_constraint(name).get("constrained_columns") or [])
                columns = [
                    {
                        "name": c["name"],
                        "type": _type_name(c["type"]),
                        "nullable": bool(c.get("nullable", True)),
                        **({"primary_key": True} if c["name"] in pk else {}),
                    }
                    for c in insp.get_columns(name)
                ]
                entry: dict[str, Any] = {"name": name, "columns": columns}
                if name in views:
                    entry["view"] = True
                else:
                    entry["rows"] = conn.execute(text(f"SELECT count(*) FROM {quote_ident(name)}")).scalar()
                    fks = [
                        {
                            "columns": fk["constrained_columns"],
                            "references": f"{fk['referred_table']}({', '.join(fk['referred_columns'])})",
                        }
                        for fk in insp.get_foreign_keys(name)
                    ]
                    if fks:
                        entry["foreign_keys"] = fks
                described.append(entry)
            out: dict[str, Any] = {"dialect": self.dialect, "tables": described}
            if table is None:
                if views:
                    out["views"] = views
                if len(tables) > max_tables:
                    out["more_tables"] = len(tables) - max_tables
            return out

    def _collect(self, result: Any, limit: int) -> Rows:
        """The first ``limit`` rows with the byte caps applied, then count the rest.

        Used for SQLite (whose read connections cannot build a value over
        ``READ_MAX_VALUE_BYTES``) and for RETURNING rows. Rows are taken one at a
        time from the driver's cursor, so at most one row beyond the budget is held.
        """
        columns = list(result.keys())
        cursor = getattr(result, "cursor", None) or result
        rows: list[tuple[Any, ...]] = []
        total = 0
        cut = 0
        full = False
        max_value, max_total = self.max_value_bytes, self.max_result_bytes
        it = iter(cursor)
        more = 0
        for row in it:
            for value in row:
                if value.__class__ in _SIZED:
                    break
            else:  # no text or bytes: numbers, NULLs, dates ... count at their fixed width
                row_bytes = len(row) * _FIXED_VALUE_BYTES
                if total + row_bytes > max_total and rows:
                    full = True
                    more = 1
                    break
                total += row_bytes
                rows.append(tuple(row))
                if len(rows) >= limit:
                    break
                continue
            values = list(row)
            row_bytes = 0
            for i, value in enumerate(values):
                size = _byte_size(value)
                if size is None:
                    row_bytes += _FIXED_VALUE_BYTES
                    continue
                if size > max_value:
                    values[i] = Cut(size, _prefix(value, self.max_chars), "value")
                    cut += 1
                else:
                    row_bytes += size
            if total + row_bytes > max_total:
                full = True
                if rows:  # this row and the rest are counted, not sent
                    more = 1
                    break
                for i, value in enumerate(values):  # one row alone over the budget: send it cut
                    size = _byte_size(value)
                    if size is not None and not isinstance(value, Cut):
                        values[i] = Cut(size, _prefix(value, self.max_chars), "total")
                        cut += 1
            total += row_bytes
            rows.append(tuple(values))
            if len(rows) >= limit:
                break
        capped = False
        if len(rows) == limit or full:
            for _ in it:
                more += 1
                if more >= self.count_cap:
                    capped = True
                    break
        result.close()
        return Rows(columns=columns, rows=rows, more_rows=more, more_rows_capped=capped, cut_values=cut,
                    result_full=full)


_SIZED = frozenset({str, bytes, bytearray, memoryview})
# What a number, NULL or date counts towards max_result_bytes (the longest float is 24
# characters): 2,000 columns of numbers over 500 rows are 15 MB of answer, and went out whole
# under a 64 KB cap when such values counted nothing.
_FIXED_VALUE_BYTES = 24


def _byte_size(value: Any) -> int | None:
    """Bytes a str/bytes value holds (None for small fixed-size values)."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", errors="replace"))
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    return None


def _prefix(value: Any, max_chars: int) -> Any:
    if isinstance(value, str):
        return value[:max_chars]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value[:32])
    return None


def _type_name(sa_type: Any) -> str:
    """SQLAlchemy prints timestamptz as plain TIMESTAMP; the model needs to know about the zone."""
    name = str(sa_type)
    if getattr(sa_type, "timezone", False) and "ZONE" not in name.upper():
        name += " WITH TIME ZONE"
    return name


# -- connection-level helpers ------------------------------------------------


def _ms(timeout: float) -> int:
    return max(1, int(timeout * 1000))


def _reset_or_discard(conn: Connection) -> None:
    """Leave nothing with the pooled connection (``DISCARD ALL``), or drop it from the pool.

    Dropped too when the watchdog had to cancel: a cancel may arrive late, and it
    must not hit the next caller's statement."""
    discard = bool(conn.info.pop("reach_discard", False)) if not conn.invalidated else False
    if conn.invalidated:
        return
    try:
        conn.rollback()
    except Exception:  # noqa: BLE001 - the original error, if any, is the one to report
        discard = True
    if discard or not reset_session(conn.connection.driver_connection):
        conn.invalidate()


@contextmanager
def _deadline(conn: Connection, timeout: float, abort: Abort | None) -> Iterator[Watchdog | None]:
    """A client-side deadline for everything run inside: cancel on the server when it passes.

    PostgreSQL: the protocol's cancel (psycopg ``cancel_safe``), then the socket is
    shut down if that fails; SQLite: ``interrupt()``. ``abort`` lets the awaiting
    coroutine cancel early, when the core's deadline passed first."""
    raw = conn.connection.driver_connection
    cancel: Callable[[], None] | None = None
    hard_stop: Callable[[], None] | None = None
    if isinstance(raw, sqlite3.Connection):
        cancel = raw.interrupt
    elif hasattr(raw, "cancel"):
        cancel, hard_stop = pg_cancel(raw), pg_hard_stop(raw)
    if cancel is None:
        yield None
        return
    # Started on SQLite too: its progress handler looks at the clock only every 2,000
    # instructions, and one instruction may take 50 ms (hex(randomblob(8e6)) per row), so a
    # 0.3 s statement ran until the core's 15 s deadline; interrupt() stops at the next one.
    watchdog = Watchdog(cancel, timeout, hard_stop).start()
    if abort is not None:
        abort.attach(watchdog)
    try:
        yield watchdog
    except SqlProblem as exc:
        if watchdog.fired and not isinstance(exc, (SqlTimeout, SqlUnavailable)):
            raise SqlTimeout(_timeout_message(timeout)) from exc
        raise
    except Exception as exc:
        if watchdog.fired and not _locked(exc):
            raise SqlTimeout(_timeout_message(timeout)) from exc
        raise
    finally:
        watchdog.stop()
        if abort is not None:
            abort.attach(None)
        # An invalidated connection (the watchdog shut its socket down: the cancel failed, or the
        # server sat in a function that ignores interrupts) is dropped by the pool anyway; asking
        # it for .info would raise PendingRollbackError over the timeout.
        if watchdog.fired and not isinstance(raw, sqlite3.Connection) and not conn.invalidated:
            conn.info["reach_discard"] = True


def _locked(exc: BaseException) -> bool:
    """SQLite's "database is locked": the statement waited its whole time for another
    connection's lock and never ran (reported as such, not as a statement cut short)."""
    orig = getattr(exc, "orig", None) or exc
    return isinstance(orig, sqlite3.OperationalError) and _first_line(orig).lower().startswith(
        ("database is locked", "database table is locked"))


def _timeout_message(timeout: float) -> str:
    return (
        f"the statement ran longer than {timeout:g} s and was cancelled on the server; "
        "nothing it did was kept. Narrow it (WHERE, LIMIT, fewer joins) and send it again"
    )


def _prepare_everything(dbapi_conn: Any, _record: Any) -> None:
    """Make psycopg prepare each statement: the server refuses to prepare two commands at once."""
    dbapi_conn.prepare_threshold = 0


def _read_only_session(dbapi_conn: Any, _record: Any) -> None:
    """Read connections: every transaction is BEGIN READ ONLY; statements are not prepared
    (the reads run inside DECLARE, which takes one query only, and a prepare costs a round trip)."""
    dbapi_conn.read_only = True
    dbapi_conn.prepare_threshold = None


# Largest string or blob a read may build (randomblob(1e9) would allocate 1 GB).
READ_MAX_VALUE_BYTES = 16 * 1024 * 1024


def _install_read_authorizer(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.set_authorizer(read_only_authorizer)
    dbapi_conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, READ_MAX_VALUE_BYTES)
    dbapi_conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)


def _sqlite_raw(conn: Connection) -> sqlite3.Connection | None:
    raw = conn.connection.driver_connection
    return raw if isinstance(raw, sqlite3.Connection) else None


@contextmanager
def _sqlite_authorizer(conn: Connection, authorizer: Authorizer) -> Iterator[None]:
    """Guard one user statement; removed again so the tool's own COMMIT can run."""
    raw = _sqlite_raw(conn)
    if raw is None:
        yield
        return
    raw.set_authorizer(authorizer)
    try:
        yield
    finally:
        raw.set_authorizer(None)


@contextmanager
def _sqlite_deadline(conn: Connection, timeout: float, authorizer: Authorizer | None = None) -> Iterator[None]:
    """SQLite has no statement_timeout; a progress handler interrupts past the deadline.

    The busy timeout is the same deadline: a statement that meets another connection's
    lock waits for it as long as it may run (Python's default is 5 s, whatever the setting),
    and past it fails as `_raise_driver_problem` says, "another connection holds the lock".
    `authorizer` is the one the connection holds (reads: installed at connect), lifted for
    that one pragma of reach's own and put back before any statement of the model's."""
    raw = _sqlite_raw(conn)
    if raw is None:
        yield
        return
    deadline = time.monotonic() + timeout
    raw.set_authorizer(None)
    try:
        raw.execute(f"PRAGMA busy_timeout = {_ms(timeout)}")
    finally:
        raw.set_authorizer(authorizer)
    raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 2000)
    try:
        yield
    finally:
        raw.set_progress_handler(None, 0)


_REFUSED_SQLSTATES = {"25006", "42501", "25001", "0A000"}


@contextmanager
def _translate(timeout: float, *, read: bool) -> Iterator[None]:
    """Map driver errors (through SQLAlchemy, or raised by psycopg directly) onto the
    outcomes a connector reports."""
    from sqlalchemy import exc as sa_exc

    try:
        yield
    except SqlProblem:
        raise
    except sa_exc.DBAPIError as exc:
        state = getattr(exc.orig, "sqlstate", None)
        lost = isinstance(exc, sa_exc.OperationalError) and bool(state) and str(state).startswith("08")
        _raise_driver_problem(exc.orig, exc, timeout, read=read, lost=lost)
    except sa_exc.StatementError as exc:  # e.g. a :name placeholder without a value
        raise SqlFailed(_first_line(exc.orig) if exc.orig else _first_line(exc)) from exc
    except sa_exc.ArgumentError as exc:
        raise SqlFailed(_first_line(exc)) from exc
    except sqlite3.Error as exc:  # rows read from the driver's cursor directly
        _raise_driver_problem(exc, exc, timeout, read=read, lost=False)
    except Exception as exc:
        if not type(exc).__module__.startswith("psycopg"):
            raise
        import psycopg

        lost = (isinstance(exc, psycopg.OperationalError)
                and str(getattr(exc, "sqlstate", None) or "08").startswith("08"))
        _raise_driver_problem(exc, exc, timeout, read=read, lost=lost)


def _raise_driver_problem(
    orig: BaseException | None, exc: BaseException, timeout: float, *, read: bool, lost: bool
) -> None:
    msg = _first_line(orig)
    state = getattr(orig, "sqlstate", None)
    lowered = msg.lower()
    if state == "57014" or lowered == "interrupted":
        raise SqlTimeout(_timeout_message(timeout)) from exc
    if "multiple commands" in lowered or "one statement at a time" in lowered:
        raise SqlRefused("send exactly one SQL statement per call (no `;` between statements)") from exc
    if read and (
        state in _REFUSED_SQLSTATES
        or "not authorized" in lowered
        or "readonly database" in lowered
        or "read-only" in lowered
    ):
        raise SqlRefused(
            f"sql_query is read-only and runs one SELECT statement; the database refused: {msg}. "
            "Use sql_execute for changes"
        ) from exc
    if "not authorized" in lowered:
        raise SqlRefused(
            f"the database refused this statement ({msg}): sql_execute changes rows only "
            "(INSERT/UPDATE/DELETE) in the database's own tables; schema changes, system tables (sqlite_*), "
            "ATTACH, PRAGMA and transaction control are not allowed"
        ) from exc
    if state == "42501":
        raise SqlRefused(f"the database refused this statement: {msg}") from exc
    if not read and ("string or blob too big" in lowered or "database or disk is full" in lowered):
        # SQLite's own caps on sql_execute (write_guard.SqliteWriteGuard.limits)
        raise SqlRefused(
            f"sql_execute refused this statement ({msg}): one call may build no value longer than "
            "max_write_value_bytes and grow the database by at most max_write_bytes ([plugins.reach-sql]); "
            "nothing was changed. Write smaller values or fewer rows per call"
        ) from exc
    if lost:
        raise SqlUnavailable(f"lost the database connection ({msg}); try again later") from exc
    if orig is not None and _locked(orig):
        raise SqlUnavailable(
            f"another connection holds the database's lock and kept it for the whole {timeout:g} s this "
            f"statement may run ({msg}); nothing was changed. Try again later"
        ) from exc
    if state == "42601" and read:
        raise SqlFailed(f"{msg} (sql_query accepts one SELECT, WITH … SELECT or VALUES statement)") from exc
    raise SqlFailed(msg) from exc
