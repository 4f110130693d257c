"""Readers and writers cannot signal other sessions or leave state on a pooled connection.

Three layers, each tested on its own: the role set-up of scripts/start-postgres.sh
(EXECUTE revoked from PUBLIC), the parser refusing those functions, and
``DISCARD ALL`` after every call (tested with ``sql_admin``, which may run
anything a person confirmed, so only the reset stands between calls).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import reach_sql.plugin

from reach_core import Reach


def _dsn(var: str) -> str:
    url = os.environ.get(var)
    if not url:
        pytest.fail(f"{var} is not set; run eval \"$(scripts/start-postgres.sh)\"")
    return url.replace("postgresql+psycopg://", "postgresql://")


@pytest.fixture
def victim() -> Iterator[psycopg.Connection[Any]]:
    """Another reach session (the read role), idle in the pool, that attacks try to kill."""
    con = psycopg.connect(_dsn("REACH_TEST_POSTGRES_READ_URL"), autocommit=True)
    try:
        yield con
    finally:
        con.close()


def _alive(con: psycopg.Connection[Any]) -> bool:
    try:
        return con.execute("SELECT 1").fetchone() == (1,)
    except psycopg.Error:
        return False


SIGNAL_SQL = [
    "SELECT pg_terminate_backend({pid})",
    "SELECT pg_cancel_backend({pid})",
    "SELECT pg_catalog.pg_terminate_backend({pid})",
    'SELECT "pg_catalog"."pg_terminate_backend"({pid})',
    "SELECT PG_TERMINATE_BACKEND({pid})",
    "SELECT U&\"pg_terminate\\005fbackend\"({pid})",
    "SELECT \"PG_CANCEL_BACKEND\"({pid})",
    "SELECT pg_terminate_backend({pid}, 1000)",
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = {pid}",
    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = current_user AND pid <> pg_backend_pid()",
    "WITH k AS (SELECT pg_terminate_backend({pid}) AS x) SELECT * FROM k",
    "SELECT 1 WHERE pg_terminate_backend({pid})",
    "SELECT (SELECT pg_terminate_backend({pid}))",
    "SELECT * FROM generate_series(1,1) g, LATERAL (SELECT pg_cancel_backend({pid})) l",
    "SELECT CASE WHEN true THEN pg_terminate_backend({pid}) END",
    "SELECT pg_terminate_backend(x) FROM (VALUES ({pid})) v(x)",
    "VALUES (pg_terminate_backend({pid}))",
    "SELECT pg_notify('reach', 'hello')",
    "SELECT query_to_xml('SELECT pg_terminate_backend({pid})', true, false, '')",
    "SELECT pg_terminate_backend({pid}) /* ; */ -- ;",
]


@pytest.mark.parametrize("tool", ["sql_query", "sql_execute"])
@pytest.mark.parametrize("sql", SIGNAL_SQL)
async def test_no_tool_can_signal_another_session(postgresql_backend, victim, tool: str, sql: str) -> None:
    pid = victim.info.backend_pid
    r = await postgresql_backend.reach.invoke(tool, {"sql": sql.format(pid=pid)})
    assert not r.ok, f"{tool} ran {sql}"
    assert _alive(victim), f"{tool}: {sql} killed another session"


SIGNALS_DENIED = [
    "SELECT pg_terminate_backend({pid})",
    "SELECT pg_cancel_backend({pid})",
    "SELECT pg_catalog.pg_terminate_backend({pid}, 100)",
    "SELECT pg_notify('reach', 'x')",
]
ROLE_DENIED = SIGNALS_DENIED + [
    "SELECT pg_advisory_lock(1)",
    "SELECT pg_advisory_lock(1, 2)",
    "SELECT pg_advisory_lock_shared(1)",
    "SELECT pg_try_advisory_lock(1)",
    "SELECT pg_try_advisory_lock_shared(1, 2)",
    "SELECT pg_advisory_xact_lock(1, 2)",
    "SELECT pg_try_advisory_xact_lock(1)",
    "SELECT pg_advisory_unlock_all()",
]


@pytest.mark.parametrize("sql", ROLE_DENIED)
def test_the_read_role_itself_cannot_signal_or_lock(victim, sql: str) -> None:
    """Outside reach entirely: the role set-up of start-postgres.sh refuses these."""
    with psycopg.connect(_dsn("REACH_TEST_POSTGRES_READ_URL"), autocommit=True) as con:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            con.execute(sql.format(pid=victim.info.backend_pid))
    assert _alive(victim)


@pytest.mark.parametrize("sql", SIGNALS_DENIED)
def test_the_write_role_itself_cannot_signal(victim, sql: str) -> None:
    with psycopg.connect(_dsn("REACH_TEST_POSTGRES_URL"), autocommit=True) as con:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            con.execute(sql.format(pid=victim.info.backend_pid))
    assert _alive(victim)


def test_the_read_role_cannot_switch_its_timeout_off() -> None:
    with psycopg.connect(_dsn("REACH_TEST_POSTGRES_READ_URL"), autocommit=True) as con:
        for sql in (
            "SELECT set_config('statement_timeout', '0', false)",
            "SELECT pg_catalog.set_config('statement_timeout', '0', true)",
            "UPDATE pg_settings SET setting = '0' WHERE name = 'statement_timeout'",
        ):
            with pytest.raises(psycopg.Error):
                con.execute(sql)
        assert con.execute("SHOW statement_timeout").fetchone() == ("30s",)  # the role's default


ADVISORY = [
    "SELECT pg_advisory_lock({k})",
    "SELECT pg_advisory_lock_shared({k})",
    "SELECT pg_try_advisory_lock({k})",
    "SELECT pg_advisory_lock(0, {k})",
    "SELECT pg_catalog.pg_advisory_lock({k})",
    "SELECT PG_ADVISORY_LOCK({k})",
    "SELECT \"pg_advisory_lock\"({k})",
    "SELECT pg_try_advisory_lock(x) FROM (VALUES ({k}::bigint)) v(x)",
    "WITH l AS (SELECT pg_advisory_lock({k})) SELECT 1 FROM l",
    "SELECT 1 WHERE pg_try_advisory_lock({k})",
    "SELECT pg_advisory_xact_lock({k})",
]


@pytest.mark.parametrize("tool", ["sql_query", "sql_execute"])
@pytest.mark.parametrize("sql", ADVISORY)
async def test_no_advisory_lock_outlives_the_call(postgresql_backend, tool: str, sql: str) -> None:
    key = secrets.randbelow(2**30) + 1000
    await postgresql_backend.reach.invoke(tool, {"sql": sql.format(k=key)})
    held = postgresql_backend.owner_exec(
        f"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND (objid = {key} OR classid = {key})"
    )
    assert held == [(0,)], f"{tool}: {sql} left an advisory lock held"


@pytest.fixture
def admin_reach(tmp_path: Path) -> Iterator[tuple[Reach, str]]:
    """sql_admin allowed without a person (auto_tier dangerous) on the owner role, one table."""
    import psycopg as pg

    table = f"accounts_{secrets.token_hex(4)}"
    dsn = _dsn("REACH_TEST_POSTGRES_URL")
    with pg.connect(dsn, autocommit=True) as con:
        con.execute(f"CREATE TABLE {table} (id integer PRIMARY KEY, owner text)")
        con.execute(f"INSERT INTO {table} VALUES (1, 'ada')")
    config = {
        "reach": {"data_dir": str(tmp_path)},
        "plugins": {"reach-sql": {
            "url": os.environ["REACH_TEST_POSTGRES_URL"], "read_url": os.environ["REACH_TEST_POSTGRES_READ_URL"],
            "admin_tool": True, "statement_timeout": 2,
        }},
        "agents": {"ops": {"auto_tier": "dangerous"}},
    }
    reach = Reach(config, plugins=[("reach-sql", reach_sql.plugin)], strict=True)
    try:
        yield reach, table
    finally:
        for conn in reach.connectors():
            getattr(conn, "db", None) and conn.db.dispose()
        with pg.connect(dsn, autocommit=True) as con:
            con.execute(f"DROP TABLE IF EXISTS {table}")


async def _pid(reach: Reach) -> int:
    r = await reach.invoke("sql_execute", {"sql": "SELECT pg_backend_pid() AS pid"}, agent="ops")
    assert r.ok, r.error
    return int(r.content["rows"][0][0])


# (statement sql_admin runs, query that must show it left nothing, expected answer)
LEAKS = [
    ("SET search_path = pg_temp, public", "SELECT current_setting('search_path')", '"$user", public'),
    ("SET statement_timeout = 0", "SELECT current_setting('statement_timeout') <> '0'", True),
    ("SET application_name = 'evil'", "SELECT current_setting('application_name') <> 'evil'", True),
    ("SELECT set_config('work_mem', '1GB', false)", "SELECT current_setting('work_mem') <> '1GB'", True),
    ("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
     "SELECT current_setting('default_transaction_read_only')", "off"),
    ("PREPARE leak AS SELECT 1", "SELECT count(*) FROM pg_prepared_statements WHERE name = 'leak'", 0),
    ("PREPARE leak2(int) AS DELETE FROM {t} WHERE id = $1",
     "SELECT count(*) FROM pg_prepared_statements WHERE name = 'leak2'", 0),
    ("LISTEN reach_leak", "SELECT count(*) FROM pg_listening_channels()", 0),
    ("CREATE TEMP TABLE {t} (id integer, owner text)",
     "SELECT count(*) FROM pg_tables WHERE schemaname LIKE 'pg_temp%%'", 0),
    ("SELECT * INTO TEMP {t} FROM {t}", "SELECT count(*) FROM pg_tables WHERE schemaname LIKE 'pg_temp%%'", 0),
    ("CREATE TEMP TABLE scratch AS SELECT 1 AS x", "SELECT to_regclass('pg_temp.scratch') IS NULL", True),
    # by name: the probe's own SELECT runs through sql_execute's cursor (reach_rows), open while it runs
    ("DECLARE leak_cursor CURSOR WITH HOLD FOR SELECT 1",
     "SELECT count(*) FROM pg_cursors WHERE name = 'leak_cursor'", 0),
]


@pytest.mark.parametrize(("statement", "probe", "expected"), LEAKS)
async def test_admin_statements_leave_nothing_on_the_pooled_connection(admin_reach, statement, probe, expected) -> None:
    reach, table = admin_reach
    pid = await _pid(reach)
    r = await reach.invoke("sql_admin", {"sql": statement.format(t=table)}, agent="ops")
    assert r.ok, r.error
    assert await _pid(reach) == pid  # same pooled connection serves the next call
    seen = await reach.invoke("sql_execute", {"sql": probe.replace("%%", "%")}, agent="ops")
    assert seen.ok, seen.error
    assert seen.content["rows"][0][0] == expected, (statement, seen.content)


async def test_temp_table_cannot_shadow_the_real_table_for_later_writes(admin_reach) -> None:
    """The issue's scenario: SELECT * INTO TEMP <table> then ordinary writes on the same pool."""
    reach, table = admin_reach
    refused = await reach.invoke("sql_execute", {"sql": f"SELECT * INTO TEMP {table} FROM {table}"}, agent="ops")
    assert not refused.ok and "SELECT … INTO" in refused.error.message
    shadow = await reach.invoke("sql_admin", {"sql": f"SELECT * INTO TEMP {table} FROM {table}"}, agent="ops")
    assert shadow.ok, shadow.error
    w = await reach.invoke("sql_execute", {"sql": f"UPDATE {table} SET owner = 'bob' WHERE id = 1"}, agent="ops")
    assert w.ok and w.content["rows_changed"] == 1
    with psycopg.connect(_dsn("REACH_TEST_POSTGRES_URL"), autocommit=True) as con:
        assert con.execute(f"SELECT owner FROM public.{table} WHERE id = 1").fetchone() == ("bob",)


async def test_reads_leave_nothing_either(postgresql_backend) -> None:
    b = postgresql_backend
    pids = set()
    for _ in range(3):
        r = await b.reach.invoke("sql_query", {"sql": "SELECT pg_backend_pid() AS pid, "
                                              "(SELECT count(*) FROM pg_prepared_statements) AS prepared, "
                                              "(SELECT count(*) FROM pg_cursors) AS cursors"})
        assert r.ok, r.error
        pid, prepared, cursors = r.content["rows"][0]
        pids.add(pid)
        assert prepared == 0
        assert cursors <= 2  # only this call's own cursors
    assert len(pids) == 1
