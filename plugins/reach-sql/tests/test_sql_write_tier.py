"""The write tier (sql_execute): decided from the parse tree, never from the text.

Families: WHERE-clause bypasses (quoting, dollar tags, comments, RETURNING text,
CTE-wrapped changes, several statements), schema changes and SELECT … INTO,
session and signalling statements, system catalogs. Each is checked by the
classifier alone (both dialects) and end to end against the real databases,
whose contents must not change; the legitimate variants must still run.
"""

from __future__ import annotations

import pytest
from reach_sql.classify import classify

# Statements that change every row although some text says WHERE.
UNBOUNDED_PG = [
    "DELETE FROM {t}",
    "delete from {t}",
    "DeLeTe FrOm {t}",
    "DELETE\tFROM\n{t}\n",
    "DELETE FROM ONLY {t}",
    "DELETE FROM public.{t}",
    'DELETE FROM "{t}"',
    "DELETE FROM {t} AS w",
    "DELETE FROM {t} RETURNING 'WHERE'",
    "DELETE FROM {t} RETURNING 'x WHERE id = 1'",
    "DELETE FROM {t} RETURNING E'\\' WHERE id = 1'",
    "DELETE FROM {t} RETURNING $$ WHERE id = 1 $$",
    "DELETE FROM {t} RETURNING $ä$ WHERE id = 1 $ä$",
    "DELETE FROM {t} RETURNING $тег$ WHERE id = 1 $тег$",
    "DELETE FROM {t} RETURNING $_1$ WHERE $_1$",
    "DELETE FROM {t} RETURNING \"WHERE\"",
    "DELETE FROM {t} RETURNING id AS \"where\"",
    "DELETE FROM {t} -- WHERE id = 1",
    "DELETE FROM {t} /* WHERE id = 1 */",
    "DELETE FROM {t} /* nested /* comment */ WHERE id = 1 */",
    "DELETE FROM {t} USING (SELECT 1 WHERE true) AS s",
    "DELETE FROM {t} USING (SELECT 1 AS x WHERE true) AS s RETURNING s.x",
    "UPDATE {t} SET owner = 'x'",
    "UPDATE {t} SET owner = 'WHERE id = 1'",
    "UPDATE {t} SET owner = E'\\'' ",
    "UPDATE {t} SET owner = E'\\'' -- ' WHERE id = 1",
    "UPDATE {t} SET owner = E'\\' WHERE id = 1'",
    "UPDATE {t} SET owner = E'\\\\' -- ' WHERE id = 1",
    "UPDATE {t} SET owner = 'it''s WHERE id = 1'",
    "UPDATE {t} SET owner = $$ WHERE id = 1 $$",
    "UPDATE {t} SET owner = $ü$ ' WHERE id = 1 $ü$",
    "UPDATE {t} SET owner = $a$ $b$ WHERE id = 1 $b$ $a$",
    "UPDATE {t} SET owner = U&'\\0057HERE'",
    "UPDATE {t} SET owner = (SELECT 'x' WHERE true)",
    "UPDATE {t} SET owner = (SELECT owner FROM {t} AS u WHERE u.id = 1)",
    "UPDATE {t} SET owner = 'x' FROM (SELECT 1 WHERE true) AS s",
    "UPDATE {t} SET owner = 'x' RETURNING 'WHERE'",
    "UPDATE {t} SET owner = 'x' /* WHERE */ RETURNING $$WHERE id = 1$$",
    "WITH d AS (DELETE FROM {t} RETURNING *) SELECT count(*) FROM d",
    "WITH d AS (DELETE FROM {t} RETURNING *) SELECT * FROM d WHERE id = 1",
    "WITH u AS (UPDATE {t} SET owner = 'x' RETURNING 1) SELECT 1 WHERE true",
    "WITH x AS (SELECT 1 WHERE true) DELETE FROM {t}",
    "WITH x AS (SELECT 1 WHERE true) UPDATE {t} SET owner = 'x'",
    "WITH a AS (DELETE FROM {t} WHERE id = 1 RETURNING 1), b AS (DELETE FROM {t} RETURNING 1) SELECT 1",
    "INSERT INTO {t} SELECT * FROM (WITH d AS (DELETE FROM {t} RETURNING *) SELECT * FROM d) s",
    "WITH d AS (DELETE FROM {t} RETURNING id, owner, balance) INSERT INTO {t} SELECT id + 100, owner, balance FROM d",
    "SELECT 1 WHERE true; DELETE FROM {t}",
    "DELETE FROM {t} WHERE id = 1; DELETE FROM {t}",
    "UPDATE {t} SET owner = 'x' WHERE id = 1; UPDATE {t} SET owner = 'y'",
]

UNBOUNDED_SQLITE = [
    "DELETE FROM {t}",
    "delete from {t}",
    "DELETE FROM [{t}]",
    "DELETE FROM `{t}`",
    'DELETE FROM "{t}"',
    "DELETE FROM main.{t}",
    "DELETE FROM {t} /* /* */ -- */ WHERE id = 1",
    "DELETE FROM {t} -- WHERE id = 1",
    "DELETE FROM {t} RETURNING 'WHERE'",
    "UPDATE {t} SET owner = 'x' -- WHERE id = 1",
    "UPDATE {t} SET owner = 'x' /* WHERE id = 1 */",
    "UPDATE {t} SET owner = 'WHERE id = 1'",
    "UPDATE {t} SET owner = (SELECT 'x' WHERE 1)",
    "UPDATE OR IGNORE {t} SET owner = 'x'",
    "WITH x AS (SELECT 1 WHERE 1) DELETE FROM {t}",
    "WITH x AS (SELECT 1 WHERE 1) UPDATE {t} SET owner = 'x'",
    "DELETE FROM {t} WHERE id = 1; DELETE FROM {t}",
    "REPLACE INTO {t} SELECT * FROM {t}",
]

# Schema changes, SELECT … INTO, session state, signalling, system catalogs, several statements.
NOT_A_DATA_CHANGE_PG = [
    "SELECT * INTO accounts_new FROM {t}",
    "SELECT * INTO TEMP {t} FROM {t}",
    "SELECT * INTO TEMPORARY TABLE {t} FROM {t}",
    "SELECT * INTO UNLOGGED accounts_new FROM {t}",
    "select id into accounts_new from {t} where id = 1",
    "WITH x AS (SELECT 1 AS a) SELECT a INTO accounts_new FROM x",
    "SELECT 1 AS a INTO accounts_new UNION SELECT 2",
    "SELECT 1 AS a INTO accounts_new UNION ALL SELECT 2 UNION SELECT 3",
    "(SELECT 1 AS a INTO accounts_new) EXCEPT SELECT 2",
    "SELECT 1 AS a INTO TEMP {t} INTERSECT SELECT 1",
    "CREATE TABLE accounts_new AS SELECT * FROM {t}",
    "CREATE TEMP TABLE {t} AS SELECT * FROM {t}",
    "CREATE TABLE accounts_new (x int)",
    "CREATE INDEX ON {t} (owner)",
    "CREATE VIEW accounts_view AS SELECT * FROM {t}",
    "CREATE MATERIALIZED VIEW accounts_mv AS SELECT * FROM {t}",
    "ALTER TABLE {t} ADD COLUMN evil int",
    "ALTER TABLE {t} RENAME TO accounts_gone",
    "DROP TABLE {t}",
    "DROP TABLE IF EXISTS {t} CASCADE",
    "TRUNCATE {t}",
    "TRUNCATE TABLE ONLY {t} RESTART IDENTITY",
    "COMMENT ON TABLE {t} IS 'x'",
    "GRANT ALL ON {t} TO PUBLIC",
    "REVOKE SELECT ON {t} FROM PUBLIC",
    "SET search_path = pg_temp, public",
    "SET LOCAL statement_timeout = 0",
    "SET statement_timeout TO 0",
    "RESET ALL",
    "SET ROLE postgres",
    "SET SESSION AUTHORIZATION DEFAULT",
    "PREPARE p AS DELETE FROM {t}",
    "EXECUTE p",
    "DEALLOCATE ALL",
    "LISTEN reach",
    "NOTIFY reach, 'x'",
    "LOCK TABLE {t} IN ACCESS EXCLUSIVE MODE",
    "DO $$ BEGIN DELETE FROM {t} WHERE id = 1; END $$",
    "DO $ä$ BEGIN DELETE FROM {t}; END $ä$",
    "CALL some_procedure()",
    "COPY {t} TO STDOUT",
    "COPY {t} FROM STDIN",
    "EXPLAIN ANALYZE DELETE FROM {t}",
    "EXPLAIN ANALYZE DELETE FROM {t} WHERE id = 1",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT s",
    "START TRANSACTION READ WRITE",
    "DISCARD ALL",
    "VACUUM {t}",
    "ANALYZE {t}",
    "REINDEX TABLE {t}",
    "CLUSTER {t}",
    "CHECKPOINT",
    "DECLARE c CURSOR WITH HOLD FOR SELECT * FROM {t}",
    "SELECT pg_advisory_lock(1)",
    "SELECT pg_try_advisory_xact_lock(1)",
    "SELECT set_config('search_path', 'pg_temp', false)",
    "SELECT pg_catalog.set_config('statement_timeout', '0', true)",
    "SELECT pg_terminate_backend(1)",
    "SELECT pg_cancel_backend(pg_backend_pid())",
    "SELECT pg_notify('x', 'y')",
    "SELECT query_to_xml('DELETE FROM {t}', true, false, '')",
    "SELECT lo_import('/etc/passwd')",
    "UPDATE {t} SET owner = 'x' WHERE id = pg_terminate_backend(1)::int",
    "INSERT INTO {t} VALUES (9, set_config('role', 'postgres', false), 1)",
    "UPDATE pg_settings SET setting = '0' WHERE name = 'statement_timeout'",
    "UPDATE pg_catalog.pg_settings SET setting = '0' WHERE name = 'statement_timeout'",
    "DELETE FROM pg_catalog.pg_largeobject WHERE loid = 1",
    "INSERT INTO pg_temp.x VALUES (1)",
    "UPDATE {t} SET owner = 'x' WHERE id = 1; DROP TABLE {t}",
    "INSERT INTO {t} VALUES (9, 'x', 1); SELECT 1",
    "SELEC 1",
    "DELETE FROM {t} WHERE",
]

NOT_A_DATA_CHANGE_SQLITE = [
    "SELECT * INTO accounts_new FROM {t}",
    "CREATE TABLE accounts_new AS SELECT * FROM {t}",
    "CREATE TEMP TABLE {t} AS SELECT * FROM {t}",
    "CREATE INDEX i ON {t} (owner)",
    "CREATE TRIGGER tr AFTER INSERT ON {t} BEGIN DELETE FROM {t}; END",
    "ALTER TABLE {t} ADD COLUMN evil int",
    "DROP TABLE {t}",
    "PRAGMA writable_schema = ON",
    "PRAGMA query_only = 0",
    "ATTACH DATABASE '/tmp/reach-evil.db' AS evil",
    "DETACH DATABASE evil",
    "VACUUM",
    "VACUUM INTO '/tmp/reach-copy.db'",
    "BEGIN",
    "COMMIT",
    "SAVEPOINT s",
    "REINDEX",
    "ANALYZE",
    "UPDATE {t} SET owner = 'x' WHERE id = 1; DROP TABLE {t}",
    "SELEC 1",
]

ALLOWED_PG = [
    ("DELETE FROM {t} WHERE id = 3", 1),
    ("DELETE FROM {t} WHERE true AND id = 3", 1),
    ("UPDATE {t} SET owner = 'it''s' WHERE id = 1", 1),
    ("UPDATE {t} SET owner = E'\\'' WHERE id = 1", 1),
    ("UPDATE {t} SET owner = $$ WHERE $$ WHERE id = 1", 1),
    ("UPDATE {t} SET owner = $ä$ -- ' $ä$ WHERE id = 1", 1),
    ("UPDATE {t} SET owner = 'x' /* no where here */ WHERE id = 2 -- done", 1),
    ("UPDATE {t} SET owner = 'x' WHERE id = 1;", 1),
    ("INSERT INTO {t} VALUES (9, 'eve', 1)", 1),
    ("INSERT INTO {t} VALUES (1, 'dup', 1) ON CONFLICT (id) DO UPDATE SET owner = 'upd'", 1),
    ("INSERT INTO {t} SELECT 9, 'x', 1 WHERE true", 1),
    ("WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) SELECT count(*) FROM d", None),
    ("UPDATE {t} SET owner = 'x' WHERE id IN (SELECT id FROM {t} WHERE owner = 'ada')", 1),
    ("DELETE FROM {t} WHERE id = :id", 1),
]

ALLOWED_SQLITE = [
    ("DELETE FROM {t} WHERE id = 3", 1),
    ("DELETE FROM [{t}] WHERE [id] = 3", 1),
    ("DELETE FROM `{t}` WHERE `id` = 3", 1),
    ("UPDATE {t} SET owner = 'it''s' WHERE id = 1", 1),
    ("UPDATE {t} SET owner = 'x' /* /* */ WHERE id = 1", 1),
    ("INSERT OR REPLACE INTO {t} VALUES (1, 'rep', '1')", 1),
    ("INSERT INTO {t} VALUES (9, 'eve', '1') ON CONFLICT (id) DO NOTHING", 1),
    ("WITH x AS (SELECT 3 AS id) DELETE FROM {t} WHERE id IN (SELECT id FROM x)", None),
    ("UPDATE {t} SET owner = 'x' /* /* */ WHERE id = 1 -- */", 1),  # SQLite comments do not nest
    ("UPDATE {t} SET owner = 'x' WHERE id = :id", 1),
]


def _t(sql: str) -> str:
    return sql.format(t="accounts")


@pytest.mark.parametrize("sql", UNBOUNDED_PG + NOT_A_DATA_CHANGE_PG)
def test_classifier_refuses_on_postgres(sql: str) -> None:
    assert classify(_t(sql), "postgresql").kind == "dangerous"


@pytest.mark.parametrize("sql", UNBOUNDED_SQLITE + NOT_A_DATA_CHANGE_SQLITE)
def test_classifier_refuses_on_sqlite(sql: str) -> None:
    assert classify(_t(sql), "sqlite").kind == "dangerous"


@pytest.mark.parametrize(("sql", "_rows"), ALLOWED_PG)
def test_classifier_allows_plain_changes_on_postgres(sql: str, _rows: int | None) -> None:
    verdict = classify(_t(sql), "postgresql")
    assert verdict.kind == "write", verdict.reason


@pytest.mark.parametrize(("sql", "_rows"), ALLOWED_SQLITE)
def test_classifier_allows_plain_changes_on_sqlite(sql: str, _rows: int | None) -> None:
    verdict = classify(_t(sql), "sqlite")
    assert verdict.kind == "write", verdict.reason


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT * INTO TEMP accounts FROM accounts", "SELECT … INTO"),
        ("DELETE FROM accounts RETURNING 'WHERE'", "DELETE without a WHERE"),
        ("UPDATE accounts SET a = $ä$ WHERE $ä$", "UPDATE without a WHERE"),
        ("SELECT pg_terminate_backend(1)", "pg_terminate_backend"),
        ("UPDATE pg_settings SET setting = '0' WHERE name = 'x'", "system catalog"),
        ("CREATE TEMP TABLE x (a int)", "CREATE TABLE"),
        ("SET search_path = x", "SET"),
        ("DELETE FROM t WHERE; x", "could not be parsed"),
    ],
)
def test_refusals_name_the_reason(sql: str, reason: str) -> None:
    assert reason in classify(sql, "postgresql").reason


def _statements(backend_name: str, pg: list[str], lite: list[str]) -> list[str]:
    return pg if backend_name == "postgresql" else lite


@pytest.mark.parametrize("index", range(max(len(UNBOUNDED_PG), len(UNBOUNDED_SQLITE))))
async def test_unbounded_changes_change_nothing(shared_backend, index: int) -> None:
    statements = _statements(shared_backend.name, UNBOUNDED_PG, UNBOUNDED_SQLITE)
    if index >= len(statements):
        return  # this backend's family is shorter
    await _refused_and_unchanged(shared_backend, statements[index])


@pytest.mark.parametrize("index", range(max(len(NOT_A_DATA_CHANGE_PG), len(NOT_A_DATA_CHANGE_SQLITE))))
async def test_schema_and_session_statements_change_nothing(shared_backend, index: int) -> None:
    statements = _statements(shared_backend.name, NOT_A_DATA_CHANGE_PG, NOT_A_DATA_CHANGE_SQLITE)
    if index >= len(statements):
        return
    await _refused_and_unchanged(shared_backend, statements[index])


async def _refused_and_unchanged(backend, sql: str) -> None:
    before = backend.snapshot()
    r = await backend.reach.invoke("sql_execute", {"sql": sql.format(t=backend.table)})
    assert not r.ok, f"sql_execute ran on {backend.name}: {sql}"
    assert r.error.code == "execution_failed"
    assert backend.snapshot() == before, f"{sql} changed the database on {backend.name}"


@pytest.mark.parametrize("index", range(max(len(ALLOWED_PG), len(ALLOWED_SQLITE))))
async def test_plain_changes_still_run(backend, index: int) -> None:
    statements = ALLOWED_PG if backend.name == "postgresql" else ALLOWED_SQLITE
    if index >= len(statements):
        return
    sql, rows = statements[index]
    r = await backend.reach.invoke("sql_execute", {"sql": sql.format(t=backend.table), "params": {"id": 3}})
    assert r.ok, (sql, r.error)
    if rows is not None:
        assert r.content["rows_changed"] == rows, (sql, r.content)
