"""Red-team variants of issue 19's reach-sql classes that the first families did not spell.

* Functions refused by family, not by a list of today's names: ``pg_logical_emit_message``
  writes WAL from the *read* role inside a READ ONLY transaction (a read-only agent could
  fill the server's disk), ``pg_stat_reset*`` (``pg_stat_reset_backend_stats`` is new in
  PostgreSQL 18), ``pg_*replication*``, ``pg_ls_*``, ``pg_file_*``, backup and WAL replay
  control, and ``setseed`` (the session's random sequence, left on a pooled connection).
  Each in every spelling (schema-qualified, quoted, upper case, ``U&``) and call site
  (select list, ``ROWS FROM``, WHERE, CTE, VALUES, SET, RETURNING, ON CONFLICT, LATERAL).
* SQLite line comments end only at ``\\n``: a WHERE after ``--`` and a CR, VT, FF, NEL or
  U+2028 is comment to SQLite, so the DELETE/UPDATE is unbounded and must be refused.
"""

from __future__ import annotations

import os

import pytest
from reach_sql.classify import classify, read_refusal

FAMILY = [
    "pg_logical_emit_message(false, 'x', repeat('x', 10))", "pg_logical_slot_get_changes('s', NULL, NULL)",
    "pg_stat_reset_backend_stats(1)", "pg_stat_reset()", "pg_create_logical_replication_slot('s', 'pgoutput')",
    "pg_replication_slot_advance('s', '0/0')", "pg_copy_logical_replication_slot('a', 'b')", "pg_ls_waldir()",
    "pg_ls_logdir()", "pg_ls_tmpdir()", "pg_file_write('x', 'y', false)", "pg_backup_start('x')",
    "pg_wal_replay_pause()", "setseed(0.5)", "pg_start_backup('x')",
]


def _spellings(call: str) -> list[str]:
    name, rest = call.split("(", 1)
    escaped = "".join(f"\\{ord(c):04x}" if c == "_" else c for c in name)
    return [call, f"pg_catalog.{call}", f'"{name}"({rest}', f'pg_catalog."{name}"({rest}', f"{name.upper()}({rest}",
            f'U&"{escaped}"({rest}', f"  {name} \t( {rest}"]


SITES_READ = [
    "SELECT {f}", "SELECT * FROM ROWS FROM ({f}) AS r", "SELECT 1 WHERE {f} IS NOT NULL",
    "WITH c AS (SELECT {f} AS v) SELECT * FROM c", "SELECT * FROM (VALUES (({f})::text)) AS v(x)",
    "SELECT x FROM generate_series(1, 1) AS g(x), LATERAL (SELECT {f}) AS l", "SELECT 1 ORDER BY {f}",
    "SELECT CASE WHEN false THEN {f} END", "SELECT (SELECT {f})",
]
SITES_WRITE = [
    "INSERT INTO t VALUES (({f})::text)", "UPDATE t SET a = ({f})::text WHERE id = 1",
    "DELETE FROM t WHERE id = 1 RETURNING {f}",
    "INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET a = ({f})::text",
    "WITH c AS (SELECT {f} AS v) UPDATE t SET a = 'x' WHERE id = 1",
    "UPDATE t SET a = 'x' WHERE id = 1 AND ({f}) IS NOT NULL",
]
READ_CASES = [site.format(f=s) for call in FAMILY for s in _spellings(call) for site in SITES_READ[:3]] + [
    site.format(f=call) for call in FAMILY for site in SITES_READ]
WRITE_CASES = [site.format(f=s) for call in FAMILY for s in _spellings(call)[:4] for site in SITES_WRITE[:2]] + [
    site.format(f=call) for call in FAMILY for site in SITES_WRITE]


@pytest.mark.parametrize("sql", READ_CASES)
def test_family_functions_are_refused_on_the_read_path(sql: str) -> None:
    why = read_refusal(sql)
    assert why is not None and "not allowed" in why, sql


@pytest.mark.parametrize("sql", WRITE_CASES)
def test_family_functions_are_refused_on_the_write_path(sql: str) -> None:
    verdict = classify(sql, "postgresql")
    assert verdict.kind == "dangerous" and "not allowed" in verdict.reason, (sql, verdict)


@pytest.mark.parametrize("sql", ["SELECT pg_last_wal_replay_lsn()", "SELECT now()", "SELECT pg_sleep(0)",
                                 "SELECT random()", "SELECT count(*) FROM pg_stat_activity", "SELECT lower('A')",
                                 "SELECT pg_is_in_recovery()", "SELECT pg_size_pretty(1)"])
def test_ordinary_functions_still_read(sql: str) -> None:
    assert read_refusal(sql) is None


def test_control_the_read_role_itself_can_write_wal() -> None:
    """Why pg_logical_emit_message is in the family: the read role runs it in a READ ONLY
    transaction (a WAL record per call; a large message per call fills the disk)."""
    import psycopg

    dsn = os.environ["REACH_TEST_POSTGRES_READ_URL"].replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as con:
        con.execute("SET TRANSACTION READ ONLY")
        (lsn,) = con.execute("SELECT pg_logical_emit_message(true, 'reach-test', 'x')").fetchone()
        con.rollback()
    assert lsn


@pytest.mark.parametrize("call", ["pg_logical_emit_message(false, 'x', repeat('x', 1000))", "setseed(0.5)",
                                  "pg_catalog.pg_logical_emit_message(false, 'x', 'y')",
                                  'U&"pg\\005flogical\\005femit\\005fmessage"(false, \'x\', \'y\')'])
@pytest.mark.parametrize("tool", ["sql_query", "sql_execute"])
async def test_through_the_tools_on_postgres(postgresql_backend, call: str, tool: str) -> None:
    backend = postgresql_backend
    before = backend.snapshot()
    sql = f"SELECT {call}" if tool == "sql_query" else (
        f"UPDATE {backend.table} SET owner = owner WHERE id = 1 AND ({call}) IS NOT NULL")
    result = await backend.reach.invoke(tool, {"sql": sql})
    assert not result.ok, result.content
    assert "not allowed" in result.error.message or "sql_admin" in result.error.message
    assert backend.snapshot() == before


ENDINGS = ["\r", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\x1c", "\x1e", "\t", " "]
SQLITE_COMMENT_TRICKS = [
    f"DELETE FROM {{t}} --{end}WHERE id = 1" for end in ENDINGS
] + [
    f"UPDATE {{t}} SET balance = '0' --{end}WHERE id = 1" for end in ENDINGS
] + [
    f"DELETE FROM {{t}} -- x{end}WHERE id = 1 -- y" for end in ENDINGS[:6]
]


@pytest.mark.parametrize("sql", SQLITE_COMMENT_TRICKS)
async def test_sqlite_where_hidden_in_a_line_comment_is_refused(sqlite_backend, sql: str) -> None:
    backend = sqlite_backend
    before = backend.snapshot()
    result = await backend.reach.invoke("sql_execute", {"sql": sql.format(t=backend.table)})
    assert not result.ok, f"ran: {sql!r}"
    assert backend.snapshot() == before


@pytest.mark.parametrize("sql", ["DELETE FROM {t} --x\nWHERE id = 1", "DELETE FROM {t} --\r\nWHERE id = 1",
                                 "DELETE FROM {t} /* -- */ WHERE id = 1"])
async def test_sqlite_where_after_a_real_line_end_still_runs(sqlite_backend, sql: str) -> None:
    result = await sqlite_backend.reach.invoke("sql_execute", {"sql": sql.format(t=sqlite_backend.table)})
    assert result.ok, result.error
    assert result.content["rows_changed"] == 1
