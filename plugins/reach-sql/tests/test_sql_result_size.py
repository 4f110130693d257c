"""Result size: a read cannot make reach hold a huge value, or a huge result.

Values over ``max_value_bytes`` are cut before they are fetched (PostgreSQL:
by the server; SQLite: the engine refuses to build one over 16 MB, smaller
ones are cut after the fetch), the result stops at ``max_result_bytes``, and
the answer says what was cut. Memory is checked in a fresh process
(``ru_maxrss`` before and after).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

MB = 1024 * 1024

PG_BIG = [
    # (sql, what the first cell must look like)
    ("SELECT repeat('x', 2000000) AS big", "text"),
    ("SELECT repeat('x', 2000000) AS big, 1 AS n", "text"),
    ("SELECT 1 AS n, repeat('é', 3000000) AS big", "text"),
    ("SELECT repeat('x', 200000)::varchar AS big", "text"),
    ("SELECT repeat('x', 200000)::char(200000) AS big", "text"),
    ("SELECT decode(repeat('ab', 3000000), 'hex') AS blob", "bytes"),
    ("SELECT convert_to(repeat('z', 5000000), 'UTF8') AS blob", "bytes"),
    ("SELECT jsonb_build_object('a', repeat('y', 2000000)) AS doc", "other"),
    ("SELECT json_build_array(repeat('y', 2000000)) AS doc", "other"),
    ("SELECT to_json(repeat('q', 3000000)) AS doc", "other"),
    ("SELECT array_fill(7, ARRAY[1000000]) AS arr", "other"),
    ("SELECT ARRAY[repeat('a', 500000), repeat('b', 500000)] AS arr", "other"),
    ("SELECT ROW(repeat('x', 300000), 1) AS rec", "other"),
    ("SELECT xmlelement(name x, repeat('x', 300000)) AS doc", "other"),
    ("SELECT repeat('9', 100000)::numeric AS num", "other"),
    ("SELECT to_tsvector(string_agg(md5(g::text), ' ')) AS ts FROM generate_series(1, 20000) g", "other"),
    ("WITH b AS (SELECT repeat('x', 5000000) AS v) SELECT v FROM b", "text"),
    ("SELECT v FROM (VALUES (repeat('w', 4000000))) AS t(v)", "text"),
    ("SELECT string_agg(md5(g::text), '') AS s FROM generate_series(1, 100000) g", "text"),
    ("SELECT lpad('', 9000000, 'ab') AS s", "text"),
]


@pytest.mark.parametrize(("sql", "kind"), PG_BIG)
async def test_postgres_huge_values_are_cut_before_fetching(postgresql_backend, sql: str, kind: str) -> None:
    r = await postgresql_backend.reach.invoke("sql_query", {"sql": sql})
    assert r.ok, r.error
    assert r.content.get("cut") is True and r.content["cut_values"] >= 1
    assert "cut" in r.content["note"]
    cell = r.content["rows"][0][r.content["columns"].index(r.content["columns"][-1])]
    cells = r.content["rows"][0]
    cut_cell = next(c for c in cells if (isinstance(c, str) and ("[cut" in c or "bytes" in c)) or isinstance(c, dict))
    if kind == "text":
        assert isinstance(cut_cell, str) and "[cut: the value holds" in cut_cell
    elif kind == "bytes":
        assert isinstance(cut_cell, dict) and cut_cell["truncated"] is True and cut_cell["bytes"] > 65536
    else:
        assert isinstance(cut_cell, str) and "too large to send" in cut_cell
    assert cell is not None
    assert len(json.dumps(r.content, ensure_ascii=False)) < 64 * 1024


PG_MANY = [
    "SELECT g, repeat('x', 60000) AS v FROM generate_series(1, 500) g",
    "SELECT g, repeat('x', 30000) AS a, repeat('y', 30000) AS b FROM generate_series(1, 500) g",
    "SELECT repeat(md5(g::text), 2000) AS v FROM generate_series(1, 100000) g",
    "SELECT decode(repeat('ff', 60000), 'hex') AS v FROM generate_series(1, 500) g",
    "SELECT jsonb_build_object('k', repeat('j', 60000)) AS v FROM generate_series(1, 200) g",
    "SELECT " + ", ".join(f"repeat('{chr(97 + i)}', 60000) AS c{i}" for i in range(20))
    + " FROM generate_series(1, 50)",
]


@pytest.mark.parametrize("sql", PG_MANY)
async def test_postgres_result_stops_at_the_total_budget(postgresql_backend, sql: str) -> None:
    r = await postgresql_backend.reach.invoke("sql_query", {"sql": sql, "limit": 500})
    assert r.ok, r.error
    shown = len(r.content["rows"])
    assert shown < 500 and r.content["more_rows"] > 0
    assert "more rows not shown" in r.content["note"]
    total = sum(len(str(c)) for row in r.content["rows"] for c in row)
    assert total < 16 * MB


async def test_postgres_small_results_are_untouched(postgresql_backend) -> None:
    r = await postgresql_backend.reach.invoke(
        "sql_query", {"sql": "SELECT g, repeat('x', 100) AS v, '{\"a\": 1}'::jsonb AS j FROM generate_series(1, 3) g"}
    )
    assert r.ok and "cut" not in r.content and "note" not in r.content
    assert r.content["rows"][0] == [1, "x" * 100, {"a": 1}]


SQLITE_BIG = [
    ("SELECT randomblob(10000000) AS b", "bytes"),
    ("SELECT zeroblob(5000000) AS b", "bytes"),
    ("SELECT printf('%.*c', 5000000, 'x') AS s", "text"),
    ("SELECT replace(hex(zeroblob(3000000)), '0', 'é') AS s", "text"),
    ("SELECT 1 AS n, hex(randomblob(2000000)) AS s", "text"),
    ("WITH t(v) AS (SELECT printf('%.*c', 300000, 'y')) SELECT v FROM t", "text"),
]


@pytest.mark.parametrize(("sql", "kind"), SQLITE_BIG)
async def test_sqlite_huge_values_are_cut(sqlite_backend, sql: str, kind: str) -> None:
    r = await sqlite_backend.reach.invoke("sql_query", {"sql": sql})
    assert r.ok, r.error
    assert r.content.get("cut") is True
    cell = r.content["rows"][0][-1]
    if kind == "bytes":
        assert cell["truncated"] is True and cell["bytes"] > 65536
    else:
        assert "[cut: the value holds" in cell
    assert len(json.dumps(r.content, ensure_ascii=False)) < 64 * 1024


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT randomblob(400000000)",
        "SELECT zeroblob(1000000000)",
        "SELECT replace(zeroblob(20000000), x'00', 'ab')",
        "SELECT group_concat(randomblob(1000000)) FROM "
        "(WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g+1 FROM s WHERE g < 40) SELECT g FROM s)",
    ],
)
async def test_sqlite_refuses_to_build_values_over_its_limit(sqlite_backend, sql: str) -> None:
    r = await sqlite_backend.reach.invoke("sql_query", {"sql": sql})
    assert not r.ok and "too big" in r.error.message


@pytest.mark.parametrize(
    "sql",
    [
        "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g+1 FROM s WHERE g < 200) "
        "SELECT g, randomblob(60000) FROM s",
        "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g+1 FROM s WHERE g < 200) "
        "SELECT printf('%.*c', 60000, 'x'), "
        "printf('%.*c', 60000, 'y') FROM s",
        "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g+1 FROM s WHERE g < 400) "
        "SELECT hex(randomblob(15000)) FROM s",
    ],
)
async def test_sqlite_result_stops_at_the_total_budget(sqlite_backend, sql: str) -> None:
    r = await sqlite_backend.reach.invoke("sql_query", {"sql": sql, "limit": 500})
    assert r.ok, r.error
    assert len(r.content["rows"]) < 500 and r.content["more_rows"] > 0
    assert "more rows not shown" in r.content["note"]
    assert len(json.dumps(r.content)) < 16 * MB


_MEMORY_PROBE = textwrap.dedent(
    """
    import json, resource, sys
    from reach_sql.database import Database
    url, read_url, queries = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    db = Database(url, read_url)
    db.query("SELECT 1", None, 10, 60)  # warm: imports, pool, parser
    report = []
    for sql in queries:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        rows = db.query(sql, None, 500, 60)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        report.append({"sql": sql, "delta_kb": after - before, "cut": rows.cut_values, "rows": len(rows.rows)})
    db.dispose()
    sys.stderr.write(json.dumps(report))
    """
)

MEMORY_QUERIES = [
    "SELECT repeat('x', 40000000) AS big",  # 40 MB in one value
    "SELECT g, repeat('x', 60000) FROM generate_series(1, 1000) g",  # 60 MB over many rows
    "SELECT decode(repeat('ab', 20000000), 'hex') AS b",  # 20 MB of bytes (40 MB as hex on the wire)
    "SELECT jsonb_build_object('a', repeat('j', 30000000)) AS doc",  # 30 MB of JSON
]


def test_postgres_memory_does_not_balloon(tmp_path) -> None:
    """ru_maxrss of a fresh process grows by far less than the values the server built."""
    url = os.environ.get("REACH_TEST_POSTGRES_URL")
    read_url = os.environ.get("REACH_TEST_POSTGRES_READ_URL")
    if not url or not read_url:
        pytest.fail("REACH_TEST_POSTGRES_URL / REACH_TEST_POSTGRES_READ_URL are not set")
    script = tmp_path / "probe.py"
    script.write_text(_MEMORY_PROBE)
    done = subprocess.run(
        [sys.executable, str(script), url, read_url, json.dumps(MEMORY_QUERIES)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for entry in json.loads(done.stderr.strip().splitlines()[-1]):
        assert entry["cut"] >= 1 or entry["rows"] < 500, entry
        assert entry["delta_kb"] < 15 * 1024, entry  # < 15 MB, for values of 20 to 60 MB
