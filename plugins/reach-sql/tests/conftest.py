"""Fixtures: a seeded SQLite file and, when available, the real PostgreSQL server.

PostgreSQL comes from ``eval "$(scripts/start-postgres.sh)"``, which exports
``REACH_TEST_POSTGRES_URL`` (owner) and ``REACH_TEST_POSTGRES_READ_URL``
(SELECT-only role). Without them the PostgreSQL half skips with the reason,
unless ``REACH_REQUIRE_SERVICES=1`` (CI), where a missing server fails.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import reach_sql.plugin

from reach_core import Reach

SEED = [(1, "ada", "10.50"), (2, "bob", "20.00"), (3, "cyd", "0.01")]


def make_reach(data_dir: Path, settings: dict[str, Any] | None = None) -> Reach:
    """A Reach with only reach-sql loaded (no auto-discovery of other plugins)."""
    config: dict[str, Any] = {"reach": {"data_dir": str(data_dir)}}
    if settings:
        config["plugins"] = {"reach-sql": settings}
    return Reach(config, plugins=[("reach-sql", reach_sql.plugin)], strict=True)


@dataclass
class Backend:
    """One database under test: its Reach, table name and an owner-side snapshot."""

    name: str
    reach: Reach
    table: str
    snapshot: Callable[[], Any]
    owner_exec: Callable[[str], Any]


def _postgres_urls() -> tuple[str, str]:
    url = os.environ.get("REACH_TEST_POSTGRES_URL")
    read_url = os.environ.get("REACH_TEST_POSTGRES_READ_URL")
    if not url or not read_url:
        reason = (
            "PostgreSQL tests need REACH_TEST_POSTGRES_URL and REACH_TEST_POSTGRES_READ_URL; "
            'run eval "$(scripts/start-postgres.sh)" first'
        )
        if os.environ.get("REACH_REQUIRE_SERVICES") == "1":
            pytest.fail(reason + " (REACH_REQUIRE_SERVICES=1 forbids skipping)")
        pytest.skip(reason)
    return url, read_url


def sqlite_owner_exec(path: Path) -> Callable[[str], Any]:
    """Run SQL on the SQLite file as its owner, outside reach (one committed connection per statement)."""

    def owner_exec(sql: str) -> Any:
        con = sqlite3.connect(path)
        try:
            with con:
                return con.execute(sql).fetchall()
        finally:
            con.close()

    return owner_exec


@contextmanager
def _sqlite(tmp: Path) -> Iterator[Backend]:
    path = tmp / "shop.sqlite3"
    table = "accounts"
    with sqlite3.connect(path) as con:
        con.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance TEXT)")
        con.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", SEED)

    def snapshot() -> Any:
        with sqlite3.connect(path) as con:
            tables = con.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
            rows = con.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()
        return tables, rows

    reach = make_reach(tmp / "data", {"url": f"sqlite:///{path}", "admin_tool": True, "statement_timeout": 1})
    try:
        yield Backend("sqlite", reach, table, snapshot, sqlite_owner_exec(path))
    finally:
        _dispose(reach)


def pg_owner_exec(url: str) -> Callable[[str], Any]:
    """Run SQL on the PostgreSQL server as the database owner, outside reach (autocommit)."""
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")

    def owner_exec(sql: str) -> Any:
        with psycopg.connect(dsn, autocommit=True) as con:
            cur = con.execute(sql)
            return cur.fetchall() if cur.description else None

    return owner_exec


@contextmanager
def _postgresql(tmp: Path) -> Iterator[Backend]:
    url, read_url = _postgres_urls()
    table = f"accounts_{secrets.token_hex(4)}"
    owner_exec = pg_owner_exec(url)

    owner_exec(f"CREATE TABLE {table} (id integer PRIMARY KEY, owner text NOT NULL, balance numeric(12,2))")
    owner_exec(f"INSERT INTO {table} VALUES " + ", ".join(f"({i}, '{o}', {b})" for i, o, b in SEED))

    def snapshot() -> Any:
        tables = owner_exec(
            "SELECT table_name FROM information_schema.tables WHERE table_schema NOT IN "
            "('pg_catalog', 'information_schema') AND table_name LIKE 'accounts%' "
            # other fixtures' tables (suites running at the same time on the shared server) are not ours
            f"AND (table_name = '{table}' OR table_name !~ '^accounts_[0-9a-f]{{8}}$') ORDER BY 1"
        )
        return tables, owner_exec(f"SELECT * FROM {table} ORDER BY id")

    reach = make_reach(tmp / "data", {"url": url, "read_url": read_url, "admin_tool": True, "statement_timeout": 1})
    try:
        yield Backend("postgresql", reach, table, snapshot, owner_exec)
    finally:
        _dispose(reach)
        owner_exec(f"DROP TABLE IF EXISTS {table}")


def _dispose(reach: Reach) -> None:
    for conn in reach.connectors():
        db = getattr(conn, "db", None)
        if db is not None:
            db.dispose()


@pytest.fixture
def sqlite_backend(tmp_path: Path) -> Iterator[Backend]:
    with _sqlite(tmp_path) as b:
        yield b


@pytest.fixture
def postgresql_backend(tmp_path: Path) -> Iterator[Backend]:
    with _postgresql(tmp_path) as b:
        yield b


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def shared_backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    """One backend for a whole module, for tests that assert nothing changes (the attacks)."""
    factory = _sqlite if request.param == "sqlite" else _postgresql
    with factory(tmp_path_factory.mktemp(f"shared-{request.param}")) as b:
        yield b


@pytest.fixture
def sql_reach() -> Callable[..., Reach]:
    """``sql_reach(data_dir, settings=None)``: a Reach holding only reach-sql."""
    return make_reach


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")
