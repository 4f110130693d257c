"""SQLite: a write that meets another connection's write lock waits for it, within its own
``statement_timeout``, instead of failing at once.

SQLite lets one connection write at a time. reach's guarded ``sql_execute`` used to open a
deferred transaction and read (page count, row count) before its statement: holding a
shared lock, it then asked for the write lock while another writer held it, and SQLite
answered "database is locked" at once (a shared lock waiting on a writer that waits on
it would deadlock, so the busy handler is not called). The other writer can be another
process, another tool, or reach's own earlier statement still rolling back after the
core's deadline answered ``outcome_unknown``. Families: how the other connection holds
the lock (immediate, exclusive, a plain write in progress; rollback journal and WAL) ×
the statement (UPDATE, INSERT, DELETE, WITH … UPDATE, INSERT … RETURNING); a lock held
past the timeout gives a clear, retryable error and changes nothing; reads wait too.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import reach_sql.plugin
from conftest import make_reach

from reach_core import Reach

HOLD = 0.8  # seconds the other connection keeps its lock
TIMEOUT = 6.0  # reach's statement_timeout: long enough to outwait HOLD on a busy machine

HOLDERS = {
    "begin immediate": ["BEGIN IMMEDIATE", "UPDATE accounts SET owner = owner WHERE id = 2"],
    "begin exclusive": ["BEGIN EXCLUSIVE", "UPDATE accounts SET owner = owner WHERE id = 2"],
    "deferred write": ["BEGIN", "INSERT INTO audit (note) VALUES ('other process')"],
}
STATEMENTS = {
    "update": ("UPDATE accounts SET owner = 'carol' WHERE id = 1", "carol"),
    "insert": ("INSERT INTO accounts (id, owner) VALUES (1, 'carol') ON CONFLICT(id) DO UPDATE SET owner = 'carol'",
               "carol"),
    "with update": ("WITH t(v) AS (SELECT 'carol') UPDATE accounts SET owner = (SELECT v FROM t) WHERE id = 1",
                    "carol"),
    "returning": ("UPDATE accounts SET owner = 'carol' WHERE id = 1 RETURNING owner", "carol"),
    "delete": ("DELETE FROM accounts WHERE id = 1", None),
}


def _database(tmp: Path, journal: str) -> Path:
    path = tmp / "shop.sqlite3"
    with sqlite3.connect(path) as con:
        con.execute(f"PRAGMA journal_mode = {journal}")
        con.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL)")
        con.execute("CREATE TABLE audit (note TEXT)")
        con.executemany("INSERT INTO accounts VALUES (?, ?)", [(1, "ada"), (2, "bob"), (3, "cy")])
    return path


def _hold_lock(path: Path, statements: list[str], seconds: float, held: threading.Event) -> threading.Thread:
    def run() -> None:
        con = sqlite3.connect(path, isolation_level=None)
        try:
            for sql in statements:
                con.execute(sql)
            held.set()
            time.sleep(seconds)
            con.execute("COMMIT")
        finally:
            con.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert held.wait(10), "the other connection never took its lock"
    return thread


def _warm(reach: Any) -> None:
    """Engines, pools and the plugin's start-up happen before the other connection locks."""
    async def go() -> None:
        assert (await reach.invoke("sql_query", {"sql": "SELECT 1"})).ok
        assert (await reach.invoke("sql_execute", {"sql": "UPDATE accounts SET owner = owner WHERE id = 3"})).ok

    asyncio.run(go())


def _owner(path: Path) -> Any:
    row = sqlite3.connect(path).execute("SELECT owner FROM accounts WHERE id = 1").fetchone()
    return row[0] if row else None


@pytest.mark.parametrize("journal", ["delete", "wal"])
@pytest.mark.parametrize("holder", sorted(HOLDERS))
@pytest.mark.parametrize("statement", sorted(STATEMENTS))
def test_a_write_waits_for_another_writers_lock(tmp_path: Path, journal: str, holder: str, statement: str) -> None:
    path = _database(tmp_path, journal)
    reach = make_reach(tmp_path / "data", {"url": f"sqlite:///{path}", "statement_timeout": TIMEOUT})
    sql, expected = STATEMENTS[statement]
    _warm(reach)
    thread = _hold_lock(path, HOLDERS[holder], HOLD, threading.Event())
    result = asyncio.run(reach.invoke("sql_execute", {"sql": sql}))
    thread.join()
    assert result.ok, result
    assert _owner(path) == expected


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_a_lock_held_past_the_timeout_is_a_clear_retryable_error_that_changes_nothing(
    tmp_path: Path, journal: str
) -> None:
    path = _database(tmp_path, journal)
    reach = make_reach(tmp_path / "data", {"url": f"sqlite:///{path}", "statement_timeout": 0.5})
    _warm(reach)
    thread = _hold_lock(path, HOLDERS["begin immediate"], 3.0, threading.Event())
    result = asyncio.run(reach.invoke("sql_execute", {"sql": STATEMENTS["update"][0]}))
    thread.join()
    assert not result.ok
    assert result.error.code == "upstream_unavailable", result
    assert "another connection holds the database's lock" in result.error.message
    assert "nothing was changed" in result.error.message
    assert _owner(path) == "ada"


def test_a_read_waits_for_a_writer_that_holds_the_file_exclusively(tmp_path: Path) -> None:
    path = _database(tmp_path, "delete")
    reach = make_reach(tmp_path / "data", {"url": f"sqlite:///{path}", "statement_timeout": TIMEOUT})
    _warm(reach)
    thread = _hold_lock(path, HOLDERS["begin exclusive"], HOLD, threading.Event())
    result = asyncio.run(reach.invoke("sql_query", {"sql": "SELECT owner FROM accounts WHERE id = 1"}))
    thread.join()
    assert result.ok, result


def test_the_next_write_after_an_abandoned_one_waits_for_its_rollback(tmp_path: Path) -> None:
    """The core's deadline answers outcome_unknown while reach's own statement still runs
    on its worker thread (its rows being built); the next honest write must wait for that
    statement's lock, not fail on it."""
    path = _database(tmp_path, "delete")
    config = {
        "reach": {"data_dir": str(tmp_path / "data")},
        "plugins": {"reach-sql": {"url": f"sqlite:///{path}", "statement_timeout": 60.0}},
        "connectors": {"sql_execute": {"timeout": 4.0}},
    }
    reach = Reach(config, plugins=[("reach-sql", reach_sql.plugin)], strict=True)
    heavy = ("INSERT INTO audit (note) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
             "WHERE x < 400) SELECT randomblob(15000000) FROM c RETURNING note")

    async def go() -> tuple[Any, Any]:
        first = await reach.invoke("sql_execute", {"sql": heavy})
        second = await reach.invoke("sql_execute", {"sql": STATEMENTS["update"][0]})
        return first, second

    try:
        first, second = asyncio.run(go())
    finally:
        for conn in reach.connectors():
            getattr(conn, "db", None) and conn.db.dispose()
    assert not first.ok and first.error.code in ("outcome_unknown", "timeout"), first
    assert second.ok, second
    assert _owner(path) == "carol"
    assert sqlite3.connect(path).execute("SELECT count(*) FROM audit").fetchone() == (0,)
