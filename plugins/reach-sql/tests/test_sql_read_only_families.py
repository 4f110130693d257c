"""More spellings of "write through ``sql_query``", on real SQLite and PostgreSQL.

``test_sql_attacks.py`` holds one of each; these are the families around them:
transaction control smuggled after a ``;`` (in a string, a comment, behind a non-ASCII
space), PostgreSQL's session and server statements, SQLite's schema and file
statements (ATTACH to a new file, VACUUM INTO, setting pragmas, read through their
table-valued form too, temp triggers and virtual tables), odd case and comments
around keywords. Each must be refused, leave the table and the list of tables as they
were, and create no file. All of these held before this file was written except
``txid_current()`` / ``pg_current_xact_id()``: they assign a transaction id inside
the READ ONLY transaction (one id used up and an abort record written to the WAL per
call, from the read role), now refused like ``pg_logical_emit_message``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from reach_sql.classify import classify, read_refusal

SMUGGLED = [
    "START TRANSACTION READ WRITE; DELETE FROM {t} WHERE id = 1",
    "COMMIT; START TRANSACTION READ WRITE; DELETE FROM {t} WHERE id = 1",
    "ROLLBACK; DELETE FROM {t} WHERE id = 1", "END; DELETE FROM {t} WHERE id = 1", "ABORT; DELETE FROM {t}",
    "SELECT 1;\u00a0DELETE FROM {t} WHERE id = 1", "SELECT ';'; DELETE FROM {t} WHERE id = 1",
    "SELECT 1 /* ; */; DELETE FROM {t} WHERE id = 1", "SELECT 1 -- ;\n; DELETE FROM {t} WHERE id = 1",
    "SELECT $$;$$; DELETE FROM {t} WHERE id = 1", "SELECT 1;\u2028DELETE FROM {t} WHERE id = 1",
    "SaVePoInT a", "RELEASE a", "BEGIN IMMEDIATE", "BEGIN EXCLUSIVE", "BEGIN READ WRITE",
    "with d as (delete from {t} where id = 1 returning *) select * from d",
    "WITH RECURSIVE x AS (SELECT 1) INSERT INTO {t} VALUES (9, 'e', 1) RETURNING *",
    "WITH d AS (MERGE INTO {t} USING (SELECT 1 AS id) s ON {t}.id = s.id WHEN MATCHED THEN DELETE) SELECT 1",
    "DeLeTe FrOm {t} WhErE id = 1", "REPLACE INTO {t} VALUES (1, 'x', 1)", "INSERT\u2003INTO {t} VALUES (9, 'e', 1)",
    "/**/INSERT/**/INTO/**/{t}/**/VALUES(9,'e',1)",
]
POSTGRES = [
    "CALL p()", "PREPARE p AS DELETE FROM {t}; EXECUTE p", "PREPARE p AS SELECT 1", "EXECUTE p", "LISTEN x",
    "NOTIFY x", "SELECT pg_notify('x', 'y')", "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "SELECT set_config('default_transaction_read_only', 'off', false)", "DO $$BEGIN PERFORM 1; END$$",
    "SELECT * FROM dblink('dbname=reach_test', 'DELETE FROM {t}') AS x(a int)", "SELECT pg_read_file('/etc/hostname')",
    "SELECT * FROM pg_ls_dir('.')", "COPY (SELECT 1) TO PROGRAM 'touch {tmp}/new.db'", "SELECT txid_current()",
    "SELECT pg_current_xact_id()", "SELECT pg_catalog.TXID_CURRENT()", "SELECT (SELECT txid_current()) > 0",
    "SELECT nextval('{t}_seq')", "SELECT 1 FROM {t} FOR SHARE", "TABLE {t} FOR KEY SHARE",
]
SQLITE = [
    "ATTACH DATABASE '{tmp}/new.db' AS n", "attach '{tmp}/new.db' as n", "ATTACH 'file:{tmp}/new.db?mode=rwc' AS n",
    "/**/ATTACH/**/'{tmp}/new.db'/**/AS/**/n", "VACUUM", "vacuum main into '{tmp}/new.db'",
    "VACUUM INTO '{tmp}/new.db'",
    "ANALYZE", "PRAGMA journal_mode=WAL", "PRAGMA journal_mode = delete", "PRAGMA user_version=5",
    "pragma USER_VERSION = 5", "PRAGMA application_id=5", "PRAGMA schema_version=1", "PRAGMA writable_schema=1",
    "PRAGMA main.writable_schema = ON", "PRAGMA query_only = false", "PRAGMA wal_checkpoint", "PRAGMA optimize",
    "PRAGMA incremental_vacuum", "SELECT * FROM pragma_journal_mode", "SELECT * FROM pragma_user_version",
    "SELECT * FROM pragma_database_list", "CREATE TEMP TRIGGER tr AFTER INSERT ON {t} BEGIN SELECT 1; END",
    "CREATE VIRTUAL TABLE temp.f USING fts5(x)", "CREATE TEMP VIEW v AS SELECT 1", "CREATE TEMPORARY TABLE x(a)",
    "SELECT fts3_tokenizer('simple')", "SELECT load_extension('{tmp}/new.db')", "SELECT LOAD_EXTENSION ('/x')",
    "SELECT \"load_extension\"('/x')",
]


async def _refused_and_unchanged(backend, tmp_path: Path, attack: str) -> None:
    files = sorted(os.listdir(tmp_path))
    before = backend.snapshot()
    result = await backend.reach.invoke("sql_query", {"sql": attack.format(t=backend.table, tmp=tmp_path)})
    assert not result.ok, f"{attack!r} ran on {backend.name}: {result.content}"
    assert result.error.code == "execution_failed"
    assert backend.snapshot() == before
    assert sorted(os.listdir(tmp_path)) == files, f"{attack!r} created a file"


@pytest.mark.parametrize("attack", SMUGGLED)
async def test_smuggled_writes_change_nothing(shared_backend, tmp_path: Path, attack: str) -> None:
    await _refused_and_unchanged(shared_backend, tmp_path, attack)


@pytest.mark.parametrize("attack", POSTGRES)
async def test_postgres_session_and_server_statements_change_nothing(postgresql_backend, tmp_path, attack) -> None:
    await _refused_and_unchanged(postgresql_backend, tmp_path, attack)


@pytest.mark.parametrize("attack", SQLITE)
async def test_sqlite_schema_and_file_statements_change_nothing(sqlite_backend, tmp_path, attack) -> None:
    await _refused_and_unchanged(sqlite_backend, tmp_path, attack)


TXID = ["SELECT txid_current()", "SELECT pg_current_xact_id()", "SELECT pg_catalog.txid_current() AS x",
        'SELECT "txid_current"()', "SELECT 1 WHERE txid_current() > 0", "SELECT * FROM txid_current()",
        "WITH c AS (SELECT pg_current_xact_id() AS v) SELECT v FROM c", "SELECT txid_current()::text"]


@pytest.mark.parametrize("sql", TXID)
def test_transaction_id_functions_are_refused(sql: str) -> None:
    why = read_refusal(sql)
    assert why is not None and "not allowed" in why
    assert classify(sql, "postgresql").kind == "dangerous"


@pytest.mark.parametrize("sql", ["SELECT txid_current_if_assigned()", "SELECT pg_current_xact_id_if_assigned()",
                                 "SELECT txid_current_snapshot()", "SELECT pg_current_snapshot()"])
def test_transaction_snapshots_still_read(sql: str) -> None:
    assert read_refusal(sql) is None


def test_control_the_read_role_assigns_transaction_ids() -> None:
    """Why: in a READ ONLY transaction of the read role, txid_current() takes a new id each call."""
    import psycopg

    dsn = os.environ["REACH_TEST_POSTGRES_READ_URL"].replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as con:
        ids = []
        for _ in range(2):
            con.execute("SET TRANSACTION READ ONLY")
            ids.append(con.execute("SELECT txid_current()").fetchone()[0])
            con.rollback()
    assert ids[1] > ids[0]


async def test_honest_statements_with_a_trailing_semicolon_still_read(shared_backend) -> None:
    backend = shared_backend
    for sql in (f"SELECT id FROM {backend.table} ORDER BY id; ", f"select id from {backend.table} order by id ;  -- x"):
        result = await backend.reach.invoke("sql_query", {"sql": sql})
        assert result.ok, result.error
        assert result.content["rows"] == [[1], [2], [3]]


MAINTENANCE = ["SELECT brin_summarize_new_values('{i}')", "SELECT brin_summarize_range('{i}', 0)",
               "SELECT brin_desummarize_range('{i}', 0)",
               "SELECT pg_catalog.BRIN_SUMMARIZE_NEW_VALUES('{i}'::regclass)",
               "SELECT ('{i}'::regclass).brin_summarize_new_values", "SELECT gin_clean_pending_list('{i}')",
               "SELECT 1 WHERE brin_summarize_new_values('{i}') >= 0"]


@pytest.mark.parametrize("sql", MAINTENANCE)
def test_index_maintenance_functions_are_refused(sql: str) -> None:
    """They rewrite index pages inside a READ ONLY transaction when the role owns the index
    (reads without read_url run as the owner role)."""
    why = read_refusal(sql.format(i="idx"))
    assert why is not None and "not allowed" in why
    assert classify(sql.format(i="idx"), "postgresql").kind == "dangerous"


@pytest.mark.parametrize("sql", MAINTENANCE[:5])
async def test_reads_without_read_url_leave_indexes_alone(postgresql_backend, tmp_path: Path, sql: str) -> None:
    from conftest import make_reach

    b = postgresql_backend
    index = f"{b.table}_brin"
    b.owner_exec(f"CREATE INDEX {index} ON {b.table} USING brin (id)")
    b.owner_exec(f"INSERT INTO {b.table} SELECT g, 'x', 0 FROM generate_series(10, 40000) AS g")
    reach = make_reach(tmp_path / "owner-reads", {"url": os.environ["REACH_TEST_POSTGRES_URL"],
                                                  "statement_timeout": 2})
    try:
        result = await reach.invoke("sql_query", {"sql": sql.format(i=index)})
    finally:
        for conn in reach.connectors():
            if (db := getattr(conn, "db", None)) is not None:
                db.dispose()
    assert not result.ok, result.content
    assert "not allowed" in result.error.message
    (summarized,), = b.owner_exec(f"SELECT brin_summarize_new_values('{index}')")
    assert summarized > 0  # the ranges reach was asked to summarize were still waiting


def test_control_the_owner_summarizes_inside_read_only(postgresql_backend) -> None:
    import psycopg

    b = postgresql_backend
    index = f"{b.table}_brin"
    b.owner_exec(f"CREATE INDEX {index} ON {b.table} USING brin (id)")
    b.owner_exec(f"INSERT INTO {b.table} SELECT g, 'x', 0 FROM generate_series(10, 40000) AS g")
    dsn = os.environ["REACH_TEST_POSTGRES_URL"].replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as con:
        con.execute("SET TRANSACTION READ ONLY")
        (n,) = con.execute(f"SELECT brin_summarize_new_values('{index}')").fetchone()
        con.rollback()
    assert n > 0
