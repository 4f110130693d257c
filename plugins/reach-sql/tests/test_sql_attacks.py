"""Attacks on the read-only path: none may change anything, on either database.

Each attack goes through ``sql_query`` exactly as a model would send it. After
each one the table's rows and the list of tables are compared with a snapshot
taken through a separate owner connection, and files an attack would create
must not exist.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reach_sql.database import SqlRefused

ATTACKS = {
    "commit_then_drop": "COMMIT; DROP TABLE {t}",
    "commit_alone": "COMMIT",
    "pragma_query_only_then_insert": "PRAGMA query_only=0; INSERT INTO {t} VALUES (9, 'eve', 1)",
    "pragma_query_only": "PRAGMA query_only=0",
    "pragma_writable_schema": "PRAGMA writable_schema=ON",
    "attach": "ATTACH DATABASE '{tmp}/evil.db' AS evil",
    "load_extension": "SELECT load_extension('{tmp}/evil')",
    "writing_cte_delete": "WITH gone AS (DELETE FROM {t} RETURNING *) SELECT * FROM gone",
    "writing_cte_insert": "WITH x AS (SELECT 9 AS id) INSERT INTO {t} SELECT id, 'eve', 1 FROM x",
    "writing_cte_update": "WITH x AS (SELECT 1) UPDATE {t} SET balance = 0",
    "set_transaction_read_write": "SET TRANSACTION READ WRITE",
    "set_rw_then_delete": "SET TRANSACTION READ WRITE; DELETE FROM {t}",
    "session_rw_then_delete": "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; DELETE FROM {t}",
    "copy_to_program": "COPY {t} TO PROGRAM 'touch {tmp}/pwned'",
    "copy_to_file": "COPY {t} TO '{tmp}/dump.csv'",
    "multiple_statements": "SELECT 1; DELETE FROM {t}",
    "plain_delete": "DELETE FROM {t}",
    "plain_update": "UPDATE {t} SET balance = 0",
    "plain_insert": "INSERT INTO {t} VALUES (9, 'eve', 1)",
    "drop_table": "DROP TABLE {t}",
    "comment_hidden_drop": "/* harmless */ DROP TABLE {t} -- really",
    "create_temp_table": "CREATE TEMP TABLE scratch AS SELECT * FROM {t}",
    "create_table": "CREATE TABLE accounts_evil (x int)",
    "vacuum_into": "VACUUM INTO '{tmp}/copy.db'",
    "select_for_update": "SELECT * FROM {t} FOR UPDATE",
    "do_block": "DO $$ BEGIN DELETE FROM {t}; END $$",
    "lo_import": "SELECT lo_import('/etc/hostname')",
    "begin_then_delete": "BEGIN; DELETE FROM {t}; COMMIT",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_attack_changes_nothing(shared_backend, tmp_path: Path, attack: str) -> None:
    backend = shared_backend
    before = backend.snapshot()
    sql = ATTACKS[attack].format(t=backend.table, tmp=tmp_path)
    result = await backend.reach.invoke("sql_query", {"sql": sql})
    assert not result.ok, f"{attack} should have been refused on {backend.name}: {result.content}"
    assert result.error.code == "execution_failed"
    assert backend.snapshot() == before
    for name in ("evil.db", "pwned", "dump.csv", "copy.db"):
        assert not (tmp_path / name).exists(), f"{attack} created {name}"


@pytest.mark.parametrize(
    "setting",
    [
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "SELECT set_config('transaction_read_only', 'off', false)",
        "SELECT set_config('statement_timeout', '0', false)",
        "SELECT set_config('role', 'reach_owner', false)",
    ],
)
async def test_set_config_does_not_outlive_its_call(postgresql_backend, setting: str) -> None:
    """set_config may run, but the read transaction is rolled back: later calls keep every guard."""
    b = postgresql_backend
    before = b.snapshot()
    await b.reach.invoke("sql_query", {"sql": setting})
    # The same pooled connection serves the next calls; they are still read-only and bounded.
    for _ in range(3):
        result = await b.reach.invoke("sql_query", {"sql": f"DELETE FROM {b.table}"})
        assert not result.ok
        on = await b.reach.invoke("sql_query", {"sql": "SELECT current_setting('transaction_read_only') AS ro"})
        assert on.content["rows"] == [["on"]]
    slow = await b.reach.invoke("sql_query", {"sql": "SELECT pg_sleep(5)"})
    assert not slow.ok and "longer than" in slow.error.message
    assert b.snapshot() == before


async def test_advisory_locks_do_not_outlive_the_call(postgresql_backend) -> None:
    """Refused by the parser (and by the role set-up); never held after the call either way."""
    r = await postgresql_backend.reach.invoke("sql_query", {"sql": "SELECT pg_advisory_lock(424242)"})
    assert not r.ok and "pg_advisory_lock" in r.error.message
    assert postgresql_backend.owner_exec(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 424242"
    ) == [(0,)]
    assert postgresql_backend.owner_exec("SELECT pg_try_advisory_lock(424242)") == [(True,)]


async def test_sqlite_huge_values_are_refused(sqlite_backend) -> None:
    r = await sqlite_backend.reach.invoke("sql_query", {"sql": "SELECT length(randomblob(500000000))"})
    assert not r.ok and "too big" in r.error.message


def test_read_role_itself_cannot_write(postgresql_backend) -> None:
    """The read URL's role is refused by the server itself, outside reach's transaction handling."""
    import os
    import secrets

    import psycopg

    dsn = os.environ["REACH_TEST_POSTGRES_READ_URL"].replace("postgresql+psycopg://", "postgresql://")
    b = postgresql_backend
    marker = f"/tmp/reach-sql-pwned-{secrets.token_hex(4)}"
    before = b.snapshot()
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute("SET default_transaction_read_only = off")  # allowed: it is the role's own setting
        for sql in (
            f"INSERT INTO {b.table} VALUES (9, 'eve', 1)",
            f"DELETE FROM {b.table}",
            f"COPY {b.table} TO PROGRAM 'touch {marker}'",
            f"COPY {b.table} TO '{marker}'",
            "CREATE TEMP TABLE scratch (x int)",
            "CREATE TABLE accounts_evil (x int)",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                con.execute(sql)
    assert b.snapshot() == before
    assert not os.path.exists(marker)


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE {t} SET balance = 0 WHERE id = 1; DROP TABLE {t}",
        "UPDATE {t} SET balance = 0 WHERE id = 1; DELETE FROM {t}",
    ],
)
async def test_write_path_runs_one_statement_even_without_the_classifier(backend, sql: str) -> None:
    """The engine refuses a second statement itself: bypass sql_execute's lexical check."""
    db = backend.reach.get("sql_execute").db
    before = backend.snapshot()
    with pytest.raises(SqlRefused):
        db.execute(sql.format(t=backend.table), None, admin=False, limit=10, timeout=2)
    assert backend.snapshot() == before


@pytest.mark.parametrize("sql", ["DROP TABLE {t}", "CREATE TABLE accounts_evil (x)", "ATTACH '{tmp}/evil.db' AS e"])
async def test_sqlite_write_authorizer_refuses_ddl_without_the_classifier(sqlite_backend, tmp_path, sql) -> None:
    db = sqlite_backend.reach.get("sql_execute").db
    before = sqlite_backend.snapshot()
    with pytest.raises(SqlRefused):
        db.execute(sql.format(t=sqlite_backend.table, tmp=tmp_path), None, admin=False, limit=10, timeout=2)
    assert sqlite_backend.snapshot() == before
    assert not (tmp_path / "evil.db").exists()


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE {t} SET balance = 0 WHERE id = 1; DROP TABLE {t}",
        "DELETE FROM {t}",
        "UPDATE {t} SET balance = 0",
        "DROP TABLE {t}",
        "TRUNCATE {t}",
        "ALTER TABLE {t} ADD COLUMN x int",
        "WITH gone AS (DELETE FROM {t} RETURNING *) SELECT count(*) FROM gone",
        "COMMIT",
        "GRANT ALL ON {t} TO PUBLIC",
    ],
)
async def test_sql_execute_refuses_dangerous_statements(backend, sql: str) -> None:
    before = backend.snapshot()
    result = await backend.reach.invoke("sql_execute", {"sql": sql.format(t=backend.table)})
    assert not result.ok
    assert "sql_admin" in result.error.message or "one SQL statement" in result.error.message
    assert backend.snapshot() == before
