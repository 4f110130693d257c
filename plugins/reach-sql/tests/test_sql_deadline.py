"""Denial of service on PostgreSQL: no read may outlive its deadline, on the server either.

Each attack carries a marker comment; after the call, ``pg_stat_activity`` must
show no session still running it (the statement was cancelled on the server,
not merely abandoned by reach). Attacks that would switch the timeout off are
refused by the parser; the client-side cancel is tested on its own with the
parser bypassed and ``set_config`` allowed (the owner role).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from typing import Any

import psycopg
import pytest
import reach_sql.database as database
from reach_sql.database import Database, SqlTimeout

# Switching the statement timeout off from inside a query: refused before it runs.
SWITCH_OFF = [
    "SELECT set_config('statement_timeout','0',true) UNION ALL SELECT pg_sleep(40)::text",
    "SELECT set_config('statement_timeout','0',false) UNION ALL SELECT pg_sleep(40)::text",
    "SELECT SET_CONFIG('statement_timeout','0',true), pg_sleep(40)",
    "SELECT Set_Config('STATEMENT_TIMEOUT', '0', TRUE), pg_sleep(40)",
    "SELECT pg_catalog.set_config('statement_timeout','0',true), pg_sleep(40)",
    'SELECT "pg_catalog"."set_config"(\'statement_timeout\',\'0\',true), pg_sleep(40)',
    "SELECT \"set_config\"('statement_timeout','0',true), pg_sleep(40)",
    "SELECT U&\"set\\005fconfig\"('statement_timeout','0',true), pg_sleep(40)",
    "SELECT \"pg_catalog\".\"SET_CONFIG\"('statement_timeout','0',true), pg_sleep(40)",
    "WITH off AS (SELECT set_config('statement_timeout','0',true) AS x) SELECT x, pg_sleep(40) FROM off",
    "WITH off AS MATERIALIZED (SELECT set_config('statement_timeout','0',true)) SELECT pg_sleep(40) FROM off",
    "SELECT pg_sleep(40) FROM (SELECT set_config('statement_timeout','0',true)) AS s",
    "SELECT pg_sleep(40) WHERE set_config('statement_timeout','0',true) IS NOT NULL",
    "SELECT pg_sleep(40) FROM generate_series(1,1) g, LATERAL (SELECT set_config('statement_timeout','0',true)) l",
    "SELECT coalesce(NULL, set_config('statement_timeout','0',true)), pg_sleep(40)",
    "SELECT (SELECT set_config('statement_timeout','0',true)) || pg_sleep(40)::text",
    "SELECT pg_sleep(40) ORDER BY set_config('statement_timeout','0',true)",
    "SELECT CASE WHEN set_config('statement_timeout','0',true) = '0' THEN pg_sleep(40) END",
    "SELECT set_config(name, '0', true), pg_sleep(40) FROM pg_settings WHERE name = 'statement_timeout'",
    "SELECT set_config(E'statement\\x5ftimeout', '0', true), pg_sleep(40)",
    "SELECT set_config(U&'statement\\005ftimeout', '0', true), pg_sleep(40)",
    "/* hi */ SELECT set_config('statement_timeout','0',true) -- x\n UNION ALL SELECT pg_sleep(40)::text",
    "SELECT set_config('lock_timeout','0',true), set_config('idle_in_transaction_session_timeout','0',true)",
    "SET LOCAL statement_timeout = 0; SELECT pg_sleep(40)",
    "SET statement_timeout = 0",
    "SET LOCAL statement_timeout TO DEFAULT",
    "RESET statement_timeout",
    "SELECT query_to_xml('SELECT set_config(''statement_timeout'',''0'',false)', true, false, '')",
    "SELECT query_to_xml_and_xmlschema('SELECT pg_sleep(40)', true, false, '')",
    "SELECT ts_stat('SELECT to_tsvector(pg_sleep(40)::text)')",
    "SELECT cursor_to_xml('c', 1, true, false, '')",
    "UPDATE pg_settings SET setting = '0' WHERE name = 'statement_timeout'",
    "WITH u AS (UPDATE pg_settings SET setting = '0' WHERE name = 'statement_timeout' RETURNING 1) SELECT pg_sleep(40)",
    "SELECT 1; SELECT pg_sleep(40)",
    "BEGIN; SET LOCAL statement_timeout = 0; SELECT pg_sleep(40)",
]

# Slow statements with nothing to refuse: they run, and are cancelled on the server at the deadline.
SLOW = [
    "SELECT pg_sleep(40)",
    "SELECT pg_sleep_for('40 seconds')",
    "SELECT pg_sleep_until(now() + interval '40 seconds')",
    "SELECT 1 UNION ALL SELECT pg_sleep(40)::text::int",
    "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b",
    "SELECT count(*) FROM generate_series(1,3000) a CROSS JOIN generate_series(1,3000) b "
    "CROSS JOIN generate_series(1,3000) c",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
    "SELECT max(md5(g::text)) FROM generate_series(1, 1000000000) g",
    "SELECT * FROM (SELECT pg_sleep(40)) s, (SELECT 1) t",
    "SELECT string_agg(md5(a::text || b::text), '') FROM generate_series(1,100000) a, generate_series(1,1000) b",
]


def _pg_dsn(var: str) -> str:
    url = os.environ.get(var)
    if not url:
        pytest.fail(f"{var} is not set; run eval \"$(scripts/start-postgres.sh)\"")
    return url.replace("postgresql+psycopg://", "postgresql://")


def running(marker: str) -> int:
    """Sessions whose current statement carries ``marker`` and still runs."""
    with psycopg.connect(_pg_dsn("REACH_TEST_POSTGRES_URL"), autocommit=True) as con:
        row = con.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() "
            "AND position(%s in query) > 0",
            (marker,),
        ).fetchone()
    return int(row[0]) if row else 0


async def gone(marker: str, within: float = 6.0) -> bool:
    """Wait (bounded) until no session runs the marked statement; cancels take effect quickly."""
    end = time.monotonic() + within
    while running(marker):
        if time.monotonic() > end:
            return False
        await asyncio.sleep(0.1)
    return True


def marked(sql: str) -> tuple[str, str]:
    marker = f"reach-attack-{secrets.token_hex(6)}"
    return f"/* {marker} */ {sql}", marker


@pytest.mark.parametrize("sql", SWITCH_OFF)
async def test_switching_the_timeout_off_is_refused(postgresql_backend, sql: str) -> None:
    text, marker = marked(sql)
    r = await postgresql_backend.reach.invoke("sql_query", {"sql": text})
    assert not r.ok, f"ran: {sql}"
    assert r.error.code in ("execution_failed", "timeout"), r.error
    assert await gone(marker)
    # the next call on the pool is bounded as before
    ok = await postgresql_backend.reach.invoke("sql_query", {"sql": "SELECT current_setting('statement_timeout') AS t"})
    assert ok.ok and ok.content["rows"][0][0] not in ("0", "0ms"), ok.content


@pytest.mark.parametrize("sql", SLOW)
async def test_slow_statements_are_cancelled_on_the_server(postgresql_backend, sql: str) -> None:
    text, marker = marked(sql)
    r = await postgresql_backend.reach.invoke("sql_query", {"sql": text})
    assert not r.ok and r.error.code == "timeout", r.error
    assert "cancelled on the server" in r.error.message
    assert await gone(marker), "the server still runs the statement after reach reported a timeout"


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT set_config('statement_timeout','0',true) UNION ALL SELECT pg_sleep(40)::text",
        "SELECT set_config('statement_timeout','0',false), pg_sleep(40)",
        "WITH off AS (SELECT set_config('statement_timeout','0',true)) SELECT pg_sleep(40) FROM off",
        "SELECT pg_sleep_for('40 seconds') FROM (SELECT set_config('statement_timeout','0',true)) s",
        "SELECT count(*) FROM (SELECT set_config('statement_timeout','0',true)) s, "
        "generate_series(1,100000) a, generate_series(1,100000) b",
    ],
)
def test_client_cancel_holds_when_the_query_switched_the_timeout_off(monkeypatch, sql: str) -> None:
    """Parser bypassed and set_config allowed (owner role as reader): the watchdog still cancels."""
    monkeypatch.setattr(database, "pg_read_statement", lambda s: (None, s))
    db = Database(os.environ["REACH_TEST_POSTGRES_URL"])
    text, marker = marked(sql)
    try:
        started = time.monotonic()
        with pytest.raises(SqlTimeout):
            db.query(text, None, 10, 1.0)
        assert time.monotonic() - started < 10  # not the 40 s the query asked for
        assert asyncio.run(gone(marker))
        assert db.query("SELECT 1 AS one", None, 10, 5).rows == [(1,)]
    finally:
        db.dispose()


def test_a_failed_cancel_drops_the_connection_and_frees_the_thread(monkeypatch) -> None:
    """The driver's cancel raising: the socket is shut down, the connection discarded."""

    tried: list[int] = []

    def broken_cancel(raw: Any) -> Any:
        def cancel() -> None:
            tried.append(1)
            raise OSError("cancel request could not be sent")

        return cancel

    monkeypatch.setattr(database, "pg_read_statement", lambda s: (None, s))
    monkeypatch.setattr(database, "pg_cancel", broken_cancel)
    # the server's own statement_timeout (SET LOCAL, armed when the statement arrives) would
    # race the client's watchdog at the same deadline, and on a loaded host win it: then no
    # cancel is needed and this test has nothing to see. Set it well past the deadline.
    monkeypatch.setattr(database, "_ms", lambda timeout: max(1, int(timeout * 1000)) + 30_000)
    db = Database(os.environ["REACH_TEST_POSTGRES_URL"])
    text, marker = marked("SELECT set_config('statement_timeout','0',true), pg_sleep(40)")
    try:
        before = db.query("SELECT pg_backend_pid() AS pid", None, 1, 5).rows[0][0]
        with pytest.raises(SqlTimeout):
            # a deadline long enough for the statement to reach the server even on a loaded
            # host: a deadline that passes before it is sent needs no cancel, and then the
            # connection rightly goes back to the pool
            db.query(text, None, 10, 3.0)
        assert tried, "the statement never reached the server, so nothing needed cancelling"
        # client_connection_check_interval (role set-up) makes the server drop the orphan
        assert asyncio.run(gone(marker, within=10))
        after = db.query("SELECT pg_backend_pid() AS pid", None, 1, 5).rows[0][0]
        assert after != before, "the connection that needed a cancel went back to the pool"
    finally:
        db.dispose()


async def test_six_attacks_at_once_do_not_starve_an_honest_query(tmp_path, sql_reach) -> None:
    reach = sql_reach(
        tmp_path,
        {
            "url": os.environ["REACH_TEST_POSTGRES_URL"],
            "read_url": os.environ["REACH_TEST_POSTGRES_READ_URL"],
            "statement_timeout": 3,
        },
    )
    markers = []
    attacks = []
    for sql in ["SELECT pg_sleep(40)", "SELECT pg_sleep_for('40 s')"] * 3:
        text, marker = marked(sql)
        markers.append(marker)
        attacks.append(asyncio.create_task(reach.invoke("sql_query", {"sql": text})))
    await asyncio.sleep(0.3)  # the attacks hold their connections and threads now
    honest = await reach.invoke("sql_query", {"sql": "SELECT 1 AS one"})
    assert honest.ok and honest.content["rows"] == [[1]], honest.error
    results = await asyncio.gather(*attacks)
    assert all(not r.ok and r.error.code == "timeout" for r in results)
    for marker in markers:
        assert await gone(marker)
    again = await reach.invoke("sql_query", {"sql": "SELECT 2 AS two"})
    assert again.ok
    for conn in reach.connectors():
        getattr(conn, "db", None) and conn.db.dispose()


async def test_write_path_is_cancelled_on_the_server_too(postgresql_backend) -> None:
    # the condition reads a column: a WHERE that reads none is refused before it runs
    table = postgresql_backend.table
    text, marker = marked(f"UPDATE {table} SET owner = 'x' WHERE id = 1 AND pg_sleep(40) IS NOT NULL")
    before = postgresql_backend.snapshot()
    r = await postgresql_backend.reach.invoke("sql_execute", {"sql": text})
    assert not r.ok and r.error.code in ("timeout", "outcome_unknown"), r.error
    assert await gone(marker)
    assert postgresql_backend.snapshot() == before


@pytest.mark.parametrize(
    "sql", ["SELECT pg_sleep(40)", "SELECT count(*) FROM generate_series(1,100000) a, generate_series(1,100000) b"]
)
async def test_the_core_deadline_cancels_on_the_server_too(tmp_path, sql: str) -> None:
    """The tool's own timeout (core) is shorter than statement_timeout: the statement still stops."""
    import reach_sql.plugin

    from reach_core import Reach

    config = {
        "reach": {"data_dir": str(tmp_path)},
        "plugins": {"reach-sql": {
            "url": os.environ["REACH_TEST_POSTGRES_URL"],
            "read_url": os.environ["REACH_TEST_POSTGRES_READ_URL"],
            "statement_timeout": 30,
        }},
        "connectors": {"sql_query": {"timeout": 1.5, "retries": 0}},
    }
    reach = Reach(config, plugins=[("reach-sql", reach_sql.plugin)])
    text, marker = marked(sql)
    try:
        r = await reach.invoke("sql_query", {"sql": text})
        assert not r.ok and r.error.code == "timeout", r.error
        assert await gone(marker), "the core's timeout left the statement running on the server"
    finally:
        for conn in reach.connectors():
            getattr(conn, "db", None) and conn.db.dispose()
