"""Red team: on SQLite a statement ends at ``statement_timeout``, however costly each step is.

SQLite has no server-side timeout; reach installed a progress handler that looks at
the clock every 2,000 virtual-machine instructions. A statement whose instructions are
each expensive (a 16 MB ``hex(randomblob(…))`` per row, ``replace`` over it, a sort
keyed on fresh blobs) passes only a few hundred rows between two looks: with
``statement_timeout = 0.3`` such a read ran until the core's own deadline (15 s)
abandoned it, on a worker thread, burning a core all the while; a write the same.
Families: expensive per-row functions on the read path (select list, WHERE, ORDER BY,
aggregate, CTE), the same inside ``sql_execute`` statements; honest statements under
the same setting still answer.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from typing import Any

import pytest
from conftest import make_reach

TIMEOUT = 0.3
SLACK = 1.7  # the answer must come within TIMEOUT + SLACK seconds (it took 15 s before)

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"
EXPENSIVE = [
    "hex(randomblob(8000000))",
    "replace(hex(randomblob(4000000)), 'A', 'BB')",
    "upper(hex(zeroblob(8000000)))",
    "printf('%.*c', 16000000, 'x')",
    "instr(hex(randomblob(8000000)), 'ZZ')",
    "length(CAST(randomblob(16000000) AS TEXT))",
]
READS = [
    *(f"{ENDLESS} SELECT max(length({e})) FROM c" for e in EXPENSIVE),
    f"{ENDLESS} SELECT x FROM c WHERE length(hex(randomblob(8000000))) < 0",
    f"{ENDLESS} SELECT x FROM c ORDER BY hex(randomblob(4000000)) LIMIT 1",
    f"{ENDLESS}, d AS (SELECT hex(randomblob(8000000)) AS v FROM c) SELECT count(v) FROM d",
    "WITH RECURSIVE c(x, v) AS (SELECT 1, '' UNION ALL SELECT x + 1, hex(randomblob(8000000)) FROM c) "
    "SELECT sum(length(v)) FROM c",
]
WRITES = [
    f"UPDATE accounts SET owner = ({ENDLESS} SELECT max(length(hex(randomblob(8000000)))) FROM c) WHERE id = 1",
    f"INSERT INTO accounts (owner) {ENDLESS} SELECT hex(randomblob(4000000)) FROM c "
    "WHERE length(hex(randomblob(4000000))) < 0",
    f"DELETE FROM accounts WHERE id IN ({ENDLESS} SELECT x FROM c "
    "WHERE length(replace(hex(randomblob(4000000)), 'A', 'B')) < 0)",
]


@pytest.fixture(scope="module")
def reach(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("sqlite-deadline")
    path = tmp / "shop.sqlite3"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL)")
        con.executemany("INSERT INTO accounts VALUES (?, ?)", [(1, "ada"), (2, "bob")])
    r = make_reach(tmp / "data", {"url": f"sqlite:///{path}", "statement_timeout": TIMEOUT})
    yield r, path
    for conn in r.connectors():
        db = getattr(conn, "db", None)
        if db is not None:
            db.dispose()


def _timed(reach: Any, tool: str, sql: str) -> tuple[float, Any]:
    async def go() -> tuple[float, Any]:
        # engines and pools warmed outside the timing
        await reach.invoke("sql_query", {"sql": "SELECT 1"})
        await reach.invoke("sql_execute", {"sql": "UPDATE accounts SET owner = owner WHERE id = 1"})
        start = time.monotonic()
        result = await reach.invoke(tool, {"sql": sql})
        return time.monotonic() - start, result

    return asyncio.run(go())


@pytest.mark.parametrize("sql", READS)
def test_an_expensive_read_ends_at_its_statement_timeout(reach: Any, sql: str) -> None:
    r, _ = reach
    took, result = _timed(r, "sql_query", sql)
    assert not result.ok and result.error.code == "timeout", result
    assert f"{TIMEOUT:g} s" in result.error.message  # reach's statement timeout, not the core's deadline
    assert took < TIMEOUT + SLACK, f"took {took:.1f} s for a {TIMEOUT} s statement_timeout"


@pytest.mark.parametrize("sql", WRITES)
def test_an_expensive_write_ends_at_its_statement_timeout_and_changes_nothing(reach: Any, sql: str) -> None:
    r, path = reach
    before = sqlite3.connect(path).execute("SELECT * FROM accounts ORDER BY id").fetchall()
    took, result = _timed(r, "sql_execute", sql)
    assert not result.ok and result.error.code == "timeout", result
    assert took < TIMEOUT + SLACK, f"took {took:.1f} s for a {TIMEOUT} s statement_timeout"
    assert sqlite3.connect(path).execute("SELECT * FROM accounts ORDER BY id").fetchall() == before


@pytest.mark.parametrize("sql", [
    "SELECT owner FROM accounts ORDER BY id",
    "SELECT length(hex(randomblob(1000000))) AS n",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) SELECT count(*) AS n FROM c",
])
def test_honest_reads_still_answer_under_the_same_timeout(reach: Any, sql: str) -> None:
    r, _ = reach
    for _ in range(3):  # an interrupt meant for an earlier statement must not land on a later one
        took, result = _timed(r, "sql_query", sql)
        assert result.ok, result


def test_an_honest_write_after_a_timed_out_one_commits(reach: Any) -> None:
    r, path = reach
    _timed(r, "sql_execute", WRITES[0])
    took, result = _timed(r, "sql_execute", "UPDATE accounts SET owner = 'bob2' WHERE id = 2")
    assert result.ok, result
    assert sqlite3.connect(path).execute("SELECT owner FROM accounts WHERE id = 2").fetchone() == ("bob2",)
    _timed(r, "sql_execute", "UPDATE accounts SET owner = 'bob' WHERE id = 2")
