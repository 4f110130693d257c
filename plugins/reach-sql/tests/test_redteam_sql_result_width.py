"""``max_result_bytes`` must bound an answer of many short values, not only of long ones.

Values of a fixed size (numbers, NULLs, dates, UUIDs, timestamps, geometric types) counted
nothing towards the result budget: on PostgreSQL they are not measured on the server, on
SQLite a row without text or bytes skipped the count. So many such columns over many rows
went out whole: under a 64 KB cap, 1,600 UUID columns of 500 rows answered 32 MB, 1,600
timestamps 29 MB, and SQLite 1,990 computed numbers 15 MB. Now each such value counts at
the width of its text (PostgreSQL: per type; SQLite: 24 bytes, the longest float), rows
past the budget are counted and not sent, and the note says the byte cap held them back.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import _dispose, _postgres_urls, make_reach

from reach_core import Reach

CAP = 65536
SETTINGS = {"statement_timeout": 20, "max_result_bytes": CAP, "max_value_bytes": 1024}


def _size(content: dict[str, Any]) -> int:
    return len(json.dumps(content["rows"], separators=(",", ":")))


def _assert_bounded(content: dict[str, Any]) -> None:
    # the budget counts text widths; JSON adds quotes and commas, never more than doubling it
    assert _size(content) <= 2 * CAP, (_size(content), content.get("note"))
    assert content.get("more_rows", 0) > 0, content.get("note")
    assert "max_result_bytes" in content["note"], content["note"]


@pytest.fixture(scope="module")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reach]:
    url, read_url = _postgres_urls()
    reach = make_reach(tmp_path_factory.mktemp("rt-width-pg") / "data", {"url": url, "read_url": read_url, **SETTINGS})
    yield reach
    _dispose(reach)


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reach]:
    tmp = tmp_path_factory.mktemp("rt-width-sqlite")
    path = tmp / "w.sqlite3"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE nums (id INTEGER PRIMARY KEY, x REAL, n INTEGER, s TEXT)")
        con.executemany("INSERT INTO nums VALUES (?, ?, ?, ?)", [(i, i / 7, -(10**15) - i, "a") for i in range(600)])
    con.close()
    reach = make_reach(tmp / "data", {"url": f"sqlite:///{path}", **SETTINGS})
    yield reach
    _dispose(reach)


# a value of each fixed-size type, and the columns repeated to make wide rows
PG_VALUES = [
    "gen_random_uuid()", "now() - g * interval '1 day'", "(now() - g * interval '1 day')::timestamp",
    "g::bigint * 1000000007", "g / 7.0::float8", "random() > 0.5", "(g || ' days 3 hours')::interval",
    "point(g / 3.0, g / 7.0)", "box(point(g / 3.0, 1.5), point(g / 7.0, 2.5))", "'192.168.0.1'::inet + g",
    "current_date - g", "g::oid", "pg_lsn('0/0') + g",
]
PG_SHAPES = [(1600, 500), (400, 500), (100, 500)]  # columns, rows
PG_CASES = [(v, c, r) for v in PG_VALUES for c, r in PG_SHAPES[:1]] + [
    (v, c, r) for v in PG_VALUES[:4] for c, r in PG_SHAPES[1:]]


@pytest.mark.parametrize(("value", "columns", "rows"), PG_CASES)
async def test_postgres_many_short_values_stop_at_the_result_cap(pg: Reach, value: str, columns: int,
                                                                 rows: int) -> None:
    cols = ", ".join(f"s.v AS c{i}" for i in range(columns))
    sql = f"SELECT {cols} FROM (SELECT {value} AS v FROM generate_series(1, {rows}) AS g) AS s"
    r = await pg.invoke("sql_query", {"sql": sql, "limit": 500})
    assert r.ok, r.error
    _assert_bounded(r.content)
    assert len(r.content["rows"]) + r.content["more_rows"] == rows


async def test_postgres_short_values_beside_measured_ones_count_too(pg: Reach) -> None:
    """A text column makes the statement the measured (wrapped) kind; the wide fixed part still counts."""
    cols = ", ".join(f"s.u AS c{i}" for i in range(1500))
    sql = f"SELECT 'a'::text AS t, {cols} FROM (SELECT gen_random_uuid() AS u FROM generate_series(1, 500)) AS s"
    r = await pg.invoke("sql_query", {"sql": sql, "limit": 500})
    assert r.ok, r.error
    _assert_bounded(r.content)


SQLITE_VALUES = ["x * 1.0000001", "n", "n * 1.5", "NULL", "id", "x"]


@pytest.mark.parametrize("columns", [1990, 500])
@pytest.mark.parametrize("value", SQLITE_VALUES)
async def test_sqlite_many_short_values_stop_at_the_result_cap(lite: Reach, value: str, columns: int) -> None:
    cols = ", ".join(f"{value} AS c{i}" for i in range(columns))
    r = await lite.invoke("sql_query", {"sql": f"SELECT {cols} FROM nums", "limit": 500})
    assert r.ok, r.error
    _assert_bounded(r.content)


@pytest.mark.parametrize("columns", [1990, 500])
async def test_sqlite_numbers_beside_short_text_count_too(lite: Reach, columns: int) -> None:
    cols = ", ".join(f"x AS c{i}" for i in range(columns))
    r = await lite.invoke("sql_query", {"sql": f"SELECT s, {cols} FROM nums", "limit": 500})
    assert r.ok, r.error
    _assert_bounded(r.content)


# -- honest answers are unchanged ------------------------------------------------------------


async def test_postgres_ordinary_results_are_whole(pg: Reach) -> None:
    sql = "SELECT g, g * 2.5::float8, now(), gen_random_uuid() FROM generate_series(1, 500) AS g"
    r = await pg.invoke("sql_query", {"sql": sql, "limit": 500})
    assert r.ok, r.error
    assert len(r.content["rows"]) == 500 and "more_rows" not in r.content


async def test_sqlite_ordinary_results_are_whole(lite: Reach) -> None:
    r = await lite.invoke("sql_query", {"sql": "SELECT id, x, n, s FROM nums", "limit": 500})
    assert r.ok, r.error
    assert len(r.content["rows"]) == 500 and r.content["more_rows"] == 100
    assert "larger limit" in r.content["note"]  # the row limit, not the byte cap, held these back


def test_the_byte_cap_note_is_for_rows_held_back_by_bytes(tmp_path: Path) -> None:
    """Control: the default budget (8 MB) does not hold back 500 rows of 40 numbers."""
    path = tmp_path / "n.sqlite3"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (a INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(600)])
    con.close()
    reach = make_reach(tmp_path / "data", {"url": f"sqlite:///{path}"})
    try:
        import asyncio

        cols = ", ".join(f"a AS c{i}" for i in range(40))
        r = asyncio.run(reach.invoke("sql_query", {"sql": f"SELECT {cols} FROM t", "limit": 500}))
        assert r.ok and len(r.content["rows"]) == 500 and "max_result_bytes" not in r.content["note"]
    finally:
        _dispose(reach)
