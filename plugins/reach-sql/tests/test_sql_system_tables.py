"""SQLite: ``sql_execute`` may not change rows of SQLite's own tables.

On PostgreSQL a write to a system catalog is refused; on SQLite ``sqlite_sequence``
and ``sqlite_stat1`` took any INSERT/UPDATE/DELETE with a WHERE clause: resetting
``sqlite_sequence`` makes AUTOINCREMENT hand out ids it already gave (a deleted
account's id comes back for a new one), forged ``sqlite_stat1`` rows steer the
query planner. The write authorizer now refuses row changes to ``sqlite_*`` tables
however they are spelt; SQLite's own bookkeeping of an AUTOINCREMENT insert goes on.
"""

from __future__ import annotations

import sqlite3

import pytest
from reach_sql.sqlite_guard import write_authorizer

NAMES = ["sqlite_sequence", "SQLITE_SEQUENCE", "Sqlite_Sequence", '"sqlite_sequence"', "[sqlite_sequence]",
         "`sqlite_sequence`", "main.sqlite_sequence", '"main"."sqlite_sequence"', "main.[SQLITE_sequence]"]
STATEMENTS = [
    "UPDATE {n} SET seq = 0 WHERE name = 'ledger'",
    "DELETE FROM {n} WHERE name = 'ledger'",
    "INSERT INTO {n} (name, seq) VALUES ('other', 5)",
    "INSERT OR REPLACE INTO {n} (name, seq) VALUES ('ledger', 0)",
    "UPDATE {n} SET seq = 0 WHERE name = 'ledger' RETURNING seq",
    "WITH x AS (SELECT 'ledger' AS n) UPDATE {n} SET seq = 0 WHERE name IN (SELECT n FROM x)",
    "WITH x AS (SELECT 1) DELETE FROM {n} WHERE seq > 0",
]
STAT = [
    "INSERT INTO sqlite_stat1 VALUES ('{t}', 'by_owner', '1000000 1')",
    "UPDATE sqlite_stat1 SET stat = '1 1' WHERE tbl = '{t}'",
    "DELETE FROM sqlite_stat1 WHERE tbl = '{t}'",
    "DELETE FROM \"SQLITE_STAT1\" WHERE tbl = '{t}'",
    "UPDATE main.[sqlite_stat1] SET stat = '9 9' WHERE 1",
]


def _prepare(backend) -> None:
    backend.owner_exec("CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)")
    backend.owner_exec("INSERT INTO ledger (v) VALUES ('a'), ('b'), ('c')")
    backend.owner_exec(f"CREATE INDEX by_owner ON {backend.table} (owner)")
    backend.owner_exec("ANALYZE")


def _system_rows(backend):
    return (backend.owner_exec("SELECT * FROM sqlite_sequence ORDER BY 1"),
            backend.owner_exec("SELECT * FROM sqlite_stat1 ORDER BY 1, 2"))


@pytest.mark.parametrize("sql", [s.format(n=n) for s in STATEMENTS for n in NAMES] + STAT)
async def test_system_tables_stay_unchanged(sqlite_backend, sql: str) -> None:
    backend = sqlite_backend
    _prepare(backend)
    before = _system_rows(backend)
    result = await backend.reach.invoke("sql_execute", {"sql": sql.format(t=backend.table)})
    assert not result.ok, (sql, result.content)
    assert result.error.code == "execution_failed"
    assert "not authorized" in result.error.message or "sql_admin" in result.error.message
    assert _system_rows(backend) == before


async def test_autoincrement_inserts_still_run(sqlite_backend) -> None:
    backend = sqlite_backend
    _prepare(backend)
    r = await backend.reach.invoke("sql_execute", {"sql": "INSERT INTO ledger (v) VALUES ('d') RETURNING id"})
    assert r.ok and r.content["rows"] == [[4]]
    r = await backend.reach.invoke("sql_execute", {"sql": "DELETE FROM ledger WHERE id = 4"})
    assert r.ok
    r = await backend.reach.invoke("sql_execute", {"sql": "INSERT INTO ledger (v) VALUES ('e') RETURNING id"})
    assert r.ok and r.content["rows"] == [[5]]  # never id 4 again
    assert backend.owner_exec("SELECT seq FROM sqlite_sequence WHERE name = 'ledger'") == [(5,)]


async def test_reading_system_tables_still_works(sqlite_backend) -> None:
    _prepare(sqlite_backend)
    r = await sqlite_backend.reach.invoke("sql_query", {"sql": "SELECT name, seq FROM sqlite_sequence"})
    assert r.ok and r.content["rows"] == [["ledger", 3]]


@pytest.mark.parametrize("admin", [False, True])
def test_the_authorizer_refuses_only_without_admin(admin: bool) -> None:
    auth = write_authorizer(admin=admin)
    for action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE):
        for name in ("sqlite_sequence", "SQLITE_STAT1", "sqlite_stat4"):
            assert auth(action, name, None, "main", None) == (sqlite3.SQLITE_OK if admin else sqlite3.SQLITE_DENY)
        assert auth(action, "ledger", None, "main", None) == sqlite3.SQLITE_OK
        assert auth(action, "my_sqlite_notes", None, "main", None) == sqlite3.SQLITE_OK
