"""Engines and the three operations, with the database enforcing the limits.

This module knows nothing about reach: it runs synchronously (the connectors
call it from a worker thread) and raises the small exception family below,
which the connectors translate into reach's error codes.

Read path, per dialect:

- SQLite: a second engine on the same file opened with ``mode=ro`` plus the
  read-only authorizer (``sqlite_guard``); a progress handler stops the
  statement at its deadline.
- PostgreSQL: the ``read_url`` role (SELECT rights only), inside a transaction
  made ``READ ONLY`` before any query ran, with ``SET LOCAL statement_timeout``,
  and a snapshot taken first so ``SET TRANSACTION READ WRITE`` can no longer
  succeed. The statement runs through a server-side cursor (``DECLARE``):
  one SELECT/VALUES statement only, rows streamed rather than loaded whole.
  The transaction is always rolled back, which also undoes ``set_config``.

Write path: SQLite uses the write authorizer; PostgreSQL connections prepare
every statement (``prepare_threshold = 0``), and the server refuses to prepare
more than one command, so ``...; DROP TABLE`` cannot ride along.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .sqlite_guard import Authorizer, read_only_authorizer, write_authorizer

if TYPE_CHECKING:  # SQLAlchemy is imported on first use: listing tools stays fast
    from sqlalchemy import Connection, Engine
    from sqlalchemy.engine import URL

_COUNT_CHUNK = 1000


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
    ) -> None:
        self.url = url
        self.read_url = read_url
        # "postgresql+psycopg://..." -> "postgresql", without importing SQLAlchemy yet
        self.dialect = url.split(":", 1)[0].split("+", 1)[0].lower()
        if self.dialect == "postgres":
            self.dialect = "postgresql"
        self.count_cap = count_cap
        self.create_missing = create_missing
        self._lock = threading.Lock()
        self._write: Engine | None = None
        self._read: Engine | None = None

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

    def _make_write_engine(self) -> Engine:
        from sqlalchemy import create_engine, event

        engine = create_engine(self.url, pool_pre_ping=self.dialect != "sqlite")
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
        engine = create_engine(self.read_url or self.url)
        if self.dialect == "postgresql":
            event.listen(engine, "connect", _prepare_everything)
        return engine

    def dispose(self) -> None:
        for engine in (self._read, self._write):
            if engine is not None:
                engine.dispose()
        self._read = self._write = None

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
            conn.close()

    @contextmanager
    def _read_transaction(self, timeout: float) -> Iterator[Connection]:
        with self._connect(self.read_engine()) as conn:
            with _translate(timeout, read=True):
                if self.dialect == "postgresql":
                    conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                    # A query, so it also takes the snapshot: no READ WRITE from here on.
                    conn.exec_driver_sql(
                        f"SELECT set_config('statement_timeout', '{max(1, int(timeout * 1000))}', true)"
                    )
                with _sqlite_deadline(conn, timeout):
                    try:
                        yield conn
                    finally:
                        conn.rollback()
                        if self.dialect == "postgresql":
                            _release_session_state(conn)

    # -- operations ----------------------------------------------------------

    def query(self, sql: str, params: dict[str, Any] | None, limit: int, timeout: float) -> Rows:
        """Run one read-only statement; return at most ``limit`` rows and count the rest."""
        from sqlalchemy import text

        with self._read_transaction(timeout) as conn, _translate(timeout, read=True):
            result = conn.execution_options(stream_results=True, max_row_buffer=limit + _COUNT_CHUNK).execute(
                text(sql), params or {}
            )
            if not result.returns_rows:
                raise SqlRefused("sql_query runs one SELECT statement; this statement returns no rows")
            return self._collect(result, limit)

    def execute(
        self, sql: str, params: dict[str, Any] | None, *, admin: bool, limit: int, timeout: float
    ) -> Rows:
        """Run one changing statement and commit it; RETURNING rows come back capped."""
        from sqlalchemy import text

        with self._connect(self.write_engine()) as conn, _translate(timeout, read=False):
            if self.dialect == "postgresql":
                conn.exec_driver_sql(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
            with _sqlite_deadline(conn, timeout), _sqlite_authorizer(conn, write_authorizer(admin=admin)):
                result = conn.execute(text(sql), params or {})
                if result.returns_rows:
                    out = self._collect(result, limit)
                    out.rowcount = result.rowcount if result.rowcount >= 0 else None
                else:
                    out = Rows(columns=[], rows=[], rowcount=result.rowcount)
                    result.close()
            conn.commit()
            return out

    def schema(self, table: str | None, timeout: float, max_tables: int = 200) -> dict[str, Any]:
        """Tables (or one table) with columns, keys and exact row counts."""
        from sqlalchemy import inspect, text

        with self._read_transaction(timeout) as conn, _translate(timeout, read=True):
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
        columns = list(result.keys())
        rows = [tuple(r) for r in result.fetchmany(limit)]
        more = 0
        capped = False
        if len(rows) == limit:
            while True:
                chunk = result.fetchmany(_COUNT_CHUNK)
                more += len(chunk)
                if not chunk or len(chunk) < _COUNT_CHUNK:
                    break
                if more >= self.count_cap:
                    capped = True
                    break
        result.close()
        return Rows(columns=columns, rows=rows, more_rows=more, more_rows_capped=capped)


def _type_name(sa_type: Any) -> str:
    """SQLAlchemy prints timestamptz as plain TIMESTAMP; the model needs to know about the zone."""
    name = str(sa_type)
    if getattr(sa_type, "timezone", False) and "ZONE" not in name.upper():
        name += " WITH TIME ZONE"
    return name


# -- connection-level helpers ------------------------------------------------


def _release_session_state(conn: Connection) -> None:
    """Session-level advisory locks survive a rollback and would stay with the pooled
    connection; a read may not leave anything behind. A connection that cannot do
    this is dropped from the pool instead."""
    try:
        conn.exec_driver_sql("SELECT pg_advisory_unlock_all()")
        conn.rollback()
    except Exception:  # noqa: BLE001 - the original error, if any, is the one to report
        conn.invalidate()


def _prepare_everything(dbapi_conn: Any, _record: Any) -> None:
    """Make psycopg prepare each statement: the server refuses to prepare two commands at once."""
    dbapi_conn.prepare_threshold = 0


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
def _sqlite_deadline(conn: Connection, timeout: float) -> Iterator[None]:
    """SQLite has no statement_timeout; a progress handler interrupts past the deadline."""
    raw = _sqlite_raw(conn)
    if raw is None:
        yield
        return
    deadline = time.monotonic() + timeout
    raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 2000)
    try:
        yield
    finally:
        raw.set_progress_handler(None, 0)


_REFUSED_SQLSTATES = {"25006", "42501", "25001", "0A000"}


@contextmanager
def _translate(timeout: float, *, read: bool) -> Iterator[None]:
    """Map driver errors onto the four outcomes a connector reports."""
    from sqlalchemy import exc as sa_exc

    try:
        yield
    except SqlProblem:
        raise
    except sa_exc.DBAPIError as exc:
        orig = exc.orig
        msg = _first_line(orig)
        state = getattr(orig, "sqlstate", None)
        lowered = msg.lower()
        if state == "57014" or lowered == "interrupted":
            raise SqlTimeout(
                f"the statement ran longer than {timeout:g} s and was stopped; "
                "narrow it (WHERE, LIMIT, fewer joins) and send it again"
            ) from exc
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
                "(INSERT/UPDATE/DELETE); schema changes, ATTACH, PRAGMA and transaction control are not allowed"
            ) from exc
        if isinstance(exc, sa_exc.OperationalError) and state and state.startswith("08"):
            raise SqlUnavailable(f"lost the database connection ({msg}); try again later") from exc
        if state == "42601" and read:
            raise SqlFailed(f"{msg} (sql_query accepts one SELECT, WITH … SELECT or VALUES statement)") from exc
        raise SqlFailed(msg) from exc
    except sa_exc.StatementError as exc:  # e.g. a :name placeholder without a value
        raise SqlFailed(_first_line(exc.orig) if exc.orig else _first_line(exc)) from exc
    except sa_exc.ArgumentError as exc:
        raise SqlFailed(_first_line(exc)) from exc
