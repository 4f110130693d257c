"""Rows that ``sql_execute`` answers on PostgreSQL are capped on the server, before they are fetched.

``sql_execute`` answers rows for a SELECT (it may call a function that writes), for
INSERT/UPDATE/DELETE … RETURNING and for a SELECT over a data-modifying WITH. Those rows were
fetched whole by the driver and cut afterwards (arrays and JSON not even then):
``SELECT repeat('x', 300000000)`` took reach to 950 MB. What reach fetched is measured here
exactly, by a byte-counting TCP proxy between reach and the server (no memory or time
measurement): a statement that builds tens of megabytes must cost a few hundred kilobytes
on the wire, the answer must say what was cut, a write must happen exactly once, and no
transaction or cursor may stay open.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import reach_sql.plugin
from conftest import pg_owner_exec

from reach_core import Reach

_APP = f"reach_rows_{secrets.token_hex(4)}"  # this module's connections, in pg_stat_activity
MAX_VALUE = 10_000
MAX_RESULT = 200_000
WIRE_CAP = 1_000_000  # what a capped call may receive: 5x the result cap, for names, sizes and framing


_PROXY = r"""
import socket, sys, threading
target = (sys.argv[1], int(sys.argv[2]))
listener = socket.create_server(("127.0.0.1", 0))
received = 0
lock = threading.Lock()

def pump(src, dst, count):
    global received
    try:
        while data := src.recv(1 << 16):
            if count:
                with lock:
                    received += len(data)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

def accept():
    while True:
        client, _ = listener.accept()
        server = socket.create_connection(target)
        threading.Thread(target=pump, args=(client, server, False), daemon=True).start()
        threading.Thread(target=pump, args=(server, client, True), daemon=True).start()

threading.Thread(target=accept, daemon=True).start()
print(listener.getsockname()[1], flush=True)
for _line in sys.stdin:  # each line asks for the bytes counted since the last one
    with lock:
        got, received = received, 0
    print(got, flush=True)
"""


class CountingProxy:
    """A TCP proxy on 127.0.0.1 in front of the PostgreSQL server, counting the bytes sent to reach.

    It runs in a process of its own: libpq calls that hold the GIL (psycopg's ``pgconn.prepare``)
    would otherwise wait for a proxy thread that cannot run."""

    def __init__(self, host: str, port: int) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _PROXY, host, str(port)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def take(self) -> int:
        """Bytes received by reach since the last call."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("take\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _urls() -> tuple[str, str]:
    url, read_url = os.environ.get("REACH_TEST_POSTGRES_URL"), os.environ.get("REACH_TEST_POSTGRES_READ_URL")
    if not url or not read_url:
        pytest.fail("REACH_TEST_POSTGRES_URL / REACH_TEST_POSTGRES_READ_URL are not set")
    return url, read_url


@pytest.fixture(scope="module")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Reach, CountingProxy, str, Any]]:
    """reach-sql on the owner role through the counting proxy, with a table ``t`` and a log table."""
    from sqlalchemy.engine import make_url

    url, read_url = _urls()
    owner = pg_owner_exec(url)
    real = make_url(url)
    proxy = CountingProxy(real.host or "127.0.0.1", real.port or 5432)
    proxied = real.set(host="127.0.0.1", port=proxy.port,
                       query={"sslmode": "disable", "application_name": _APP})
    t = f"rows_{secrets.token_hex(4)}"
    owner(f"CREATE TABLE {t} (id integer PRIMARY KEY, v text, n integer)")
    owner(f"CREATE TABLE {t}_log (id serial PRIMARY KEY, note text)")
    # A function that writes one log row per call and answers a long value: what a SELECT through
    # sql_execute is allowed for (a SELECT may call a function that writes).
    owner(f"CREATE FUNCTION {t}_bump(size integer) RETURNS text LANGUAGE sql AS "
          f"$$ INSERT INTO {t}_log (note) VALUES ('bump') RETURNING repeat('b', size) $$")
    settings = {
        "url": proxied.render_as_string(hide_password=False), "read_url": read_url, "statement_timeout": 20,
        "max_value_bytes": MAX_VALUE, "max_result_bytes": MAX_RESULT, "count_more_rows_up_to": 10,
        "max_write_value_bytes": 1_000_000, "admin_tool": True,
    }
    config = {"reach": {"data_dir": str(tmp_path_factory.mktemp("pg-execute-rows"))},
              "plugins": {"reach-sql": settings}, "agents": {"ops": {"auto_tier": "dangerous"}}}
    reach = Reach(config, plugins=[("reach-sql", reach_sql.plugin)], strict=True)
    try:
        yield reach, proxy, t, owner
    finally:
        for conn in reach.connectors():
            db = getattr(conn, "db", None)
            if db is not None:
                db.dispose()
        proxy.close()
        owner(f"DROP FUNCTION IF EXISTS {t}_bump(integer); DROP TABLE IF EXISTS {t}, {t}_log")


@pytest.fixture
def table(pg: tuple[Reach, CountingProxy, str, Any]) -> str:
    """The table with rows 1..3 and an empty log, for each test."""
    _reach, _proxy, t, owner = pg
    owner(f"TRUNCATE {t}, {t}_log; INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)")
    return t


async def _run(pg: tuple[Reach, CountingProxy, str, Any], sql: str, tool: str = "sql_execute",
               params: dict[str, Any] | None = None) -> tuple[Any, int]:
    reach, proxy, _t, _owner = pg
    await reach.invoke("sql_execute", {"sql": "SELECT 1"}, agent="ops")  # a pooled connection, already open
    proxy.take()
    r = await reach.invoke(tool, {"sql": sql, **({"params": params} if params else {})}, agent="ops")
    return r, proxy.take()


def _assert_clean(owner: Any) -> None:
    """No transaction left open by reach's connections, no cursor of reach's left behind."""
    idle = owner(f"SELECT state, query FROM pg_stat_activity WHERE application_name = '{_APP}' "
                 "AND state NOT IN ('idle', 'active')")
    assert idle == [], idle


# One long value (10 to 40 MB, built on the server), each way sql_execute answers rows: a SELECT,
# RETURNING of each kind of write, a SELECT over a data-modifying CTE. {e} is the value.
VALUES = [
    ("repeat", "repeat('x', 20000000)", "text"),
    ("repeat_utf8", "repeat('é', 8000000)", "text"),
    ("lpad", "lpad('', 20000000, 'ab')", "text"),
    ("rpad", "rpad('z', 20000000, 'z')", "text"),
    ("string_agg", "(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 500000) g)", "text"),
    ("varchar", "repeat('v', 20000000)::varchar", "text"),
    ("array_fill", "array_fill('xxxxxxxx'::text, ARRAY[3000000])", "other"),
    ("int_array", "array_fill(7, ARRAY[5000000])", "other"),
    ("bytea", "decode(repeat('ab', 10000000), 'hex')", "bytes"),
    ("convert_to", "convert_to(repeat('q', 20000000), 'UTF8')", "bytes"),
    ("json", "to_json(repeat('j', 20000000))", "other"),
    ("jsonb", "jsonb_build_object('k', repeat('j', 20000000))", "other"),
    ("json_agg", "(SELECT json_agg(md5(g::text)) FROM generate_series(1, 500000) g)", "other"),
    ("xml", "xmlelement(name x, repeat('x', 20000000))", "other"),
    ("composite", "ROW(repeat('r', 20000000), 1)", "other"),
    ("numeric", "repeat('9', 120000)::numeric", "other"),
]
SHAPES = {
    "select": "SELECT {e} AS big, 1 AS one",
    "select_where": "SELECT {e} AS big FROM {t} WHERE id = 1",
    "insert_returning": "INSERT INTO {t} (id, v) VALUES (10, 'new') RETURNING id, {e} AS big",
    "update_returning": "UPDATE {t} SET v = 'upd' WHERE id = 2 RETURNING {e} AS big, id",
    "delete_returning": "DELETE FROM {t} WHERE id = 3 RETURNING {e}",
    "upsert_returning": "INSERT INTO {t} (id, v) VALUES (1, 'up') ON CONFLICT (id) DO UPDATE SET v = 'up' "
                        "RETURNING {e}",
    "cte_delete": "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) SELECT d.id, {e} AS big FROM d",
    "cte_update_two": "WITH u AS (UPDATE {t} SET v = 'u' WHERE id = 1 RETURNING id), "
                      "w AS (UPDATE {t} SET n = 9 WHERE id = 2 RETURNING id) SELECT {e} FROM u, w",
    "cte_then_insert": "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) "
                       "INSERT INTO {t} (id, v) SELECT id + 10, v FROM d RETURNING id, {e}",
}
# what each shape leaves in the table (owner's view), so the write is seen to happen exactly once
AFTER = {
    "select": [(1, "a"), (2, "b"), (3, "c")],
    "select_where": [(1, "a"), (2, "b"), (3, "c")],
    "insert_returning": [(1, "a"), (2, "b"), (3, "c"), (10, "new")],
    "update_returning": [(1, "a"), (2, "upd"), (3, "c")],
    "delete_returning": [(1, "a"), (2, "b")],
    "upsert_returning": [(1, "up"), (2, "b"), (3, "c")],
    "cte_delete": [(1, "a"), (2, "b")],
    "cte_update_two": [(1, "u"), (2, "b"), (3, "c")],
    "cte_then_insert": [(1, "a"), (2, "b"), (13, "c")],
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize(("name", "expr", "kind"), VALUES, ids=[v[0] for v in VALUES])
async def test_a_huge_value_is_cut_before_it_is_fetched(pg, table, shape: str, name: str, expr: str,
                                                       kind: str) -> None:
    r, wire = await _run(pg, SHAPES[shape].format(t=table, e=expr))
    assert r.ok, r.error
    assert wire < WIRE_CAP, f"reach received {wire} bytes for one cut value"
    assert r.content.get("cut") is True and r.content["cut_values"] == 1, r.content
    assert "cut before fetching" in r.content["note"]
    assert r.content["rows_changed"] == 1
    (row,) = r.content["rows"]
    cell = next(c for c in row if isinstance(c, dict) or (isinstance(c, str) and "[" in c))
    if kind == "text":
        assert "[cut: the value holds" in cell and "too large to send" in cell
    elif kind == "bytes":
        assert cell["truncated"] is True and cell["bytes"] > MAX_VALUE
    else:
        assert "too large to send" in cell
    owner = pg[3]
    assert owner(f"SELECT id, v FROM {table} ORDER BY id") == AFTER[shape]
    _assert_clean(owner)


MANY = [
    # many rows of values under the per-value cap: the result stops at max_result_bytes
    "INSERT INTO {t} (id, v) SELECT g, 'm' FROM generate_series(100, 2099) g RETURNING id, repeat('x', 9000)",
    "UPDATE {t} SET n = n + 1 WHERE id >= 100 RETURNING id, repeat(v, 9000)",
    "WITH i AS (INSERT INTO {t} (id, v) SELECT g, 'm' FROM generate_series(100, 2099) g RETURNING *) "
    "SELECT id, repeat('y', 9000) FROM i",
    "WITH i AS (INSERT INTO {t} (id, v) SELECT g, 'm' FROM generate_series(100, 2099) g RETURNING *) "
    "SELECT i.id, ARRAY[repeat('a', 4000), repeat('b', 4000)] FROM i",
    "SELECT g, repeat('x', 9000) FROM generate_series(1, 2000) g",
    "SELECT g, jsonb_build_object('k', repeat('j', 9000)) FROM generate_series(1, 2000) g",
    # many short values: fixed-size columns count too
    "INSERT INTO {t} (id, v) SELECT g, 'm' FROM generate_series(100, 2099) g RETURNING "
    + ", ".join(f"gen_random_uuid() AS u{i}" for i in range(100)),
    # wide rows: one row alone over max_result_bytes is sent with every value cut
    "UPDATE {t} SET v = 'w' WHERE id = 1 RETURNING "
    + ", ".join(f"repeat('{i % 10}', 9000) AS c{i}" for i in range(60)),
    "WITH d AS (DELETE FROM {t} WHERE id = 2 RETURNING *) SELECT "
    + ", ".join(f"decode(repeat('ab', 4500), 'hex') AS c{i}" for i in range(60)) + " FROM d",
]


@pytest.mark.parametrize("sql", MANY, ids=[f"many{i}" for i in range(len(MANY))])
async def test_many_or_wide_rows_stop_at_the_result_cap(pg, table, sql: str) -> None:
    owner = pg[3]
    if "id >= 100" in sql:
        owner(f"INSERT INTO {table} (id, v, n) SELECT g, 'm', 0 FROM generate_series(100, 2099) g")
    r, wire = await _run(pg, sql.format(t=table))
    assert r.ok, r.error
    assert wire < WIRE_CAP, f"reach received {wire} bytes"
    total = len(r.content["rows"]) + r.content.get("more_rows", 0)
    assert r.content["rows_changed"] == total  # every row counted, none of them lost
    if r.content.get("more_rows"):
        assert "max_result_bytes" in r.content["note"] or "limit" in r.content["note"]
    else:  # one wide row: sent with its values cut
        assert r.content["cut"] is True and r.content["cut_values"] == 60
        (row,) = r.content["rows"]
        for cell in row:
            if isinstance(cell, dict):
                assert cell["truncated"] is True and cell["bytes"] == 4500
            else:
                assert "not sent: the result reached its size cap" in cell
    if sql.startswith("INSERT") or sql.startswith("WITH i"):
        assert owner(f"SELECT count(*) FROM {table} WHERE id >= 100") == [(2000,)]
    if "n = n + 1" in sql:
        assert owner(f"SELECT sum(n) FROM {table} WHERE id >= 100") == [(2000,)]
    _assert_clean(owner)


@pytest.mark.parametrize("rows", [1, 20, 499, 500, 501, 700])
async def test_a_writing_select_runs_over_every_row_exactly_once(pg, table, rows: int) -> None:
    """A SELECT calling a function that writes runs over all its rows, as it did uncapped: not only the
    rows sent (max_rows 500), nor those counted (count_more_rows_up_to 10 here)."""
    t, owner = pg[2], pg[3]
    r, wire = await _run(pg, f"SELECT g, {t}_bump(100000) AS b FROM generate_series(1, {rows}) g")
    assert r.ok, r.error
    assert wire < WIRE_CAP
    assert owner(f"SELECT count(*) FROM {t}_log") == [(rows,)]
    assert r.content["rows_changed"] == rows
    assert len(r.content["rows"]) + r.content.get("more_rows", 0) == rows
    assert r.content["cut"] is True
    _assert_clean(owner)


# The statement's own WITH clause holds a data-modifying CTE, so it is hoisted in front of reach's
# capping query: every spelling of a WITH clause must come out as the same statement, run once.
HOISTED = [
    "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) SELECT id, repeat('x', 5000000) FROM d",
    "with d as (delete from {t} where id = 3 returning *) select id, repeat('x', 5000000) from d",
    "WITH\n\td\tAS\n(\nDELETE FROM {t} WHERE id = 3 RETURNING *\n)\nSELECT id, repeat('x', 5000000) FROM d",
    "/* lead */ WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) /* between */ SELECT id, "
    "repeat('x', 5000000) FROM d -- trailing",
    "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) SELECT id, repeat('x', 5000000) FROM d;",
    "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) SELECT id, repeat('x', 5000000) FROM d -- no newline",
    'WITH "we)ird ( name" AS (DELETE FROM {t} WHERE id = 3 RETURNING *) SELECT id, repeat(\'x\', 5000000) '
    'FROM "we)ird ( name"',
    "WITH d(a, b) AS (DELETE FROM {t} WHERE id = 3 RETURNING id, ')SELECT(') SELECT a, repeat(b, 2000000) FROM d",
    "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING id, $q$ ) SELECT 1; DROP TABLE x; ( $q$ AS s) "
    "SELECT id, repeat(s, 500000) FROM d",
    "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING id, E'\\')' AS s) SELECT id, repeat(s, 5000000) FROM d",
    "WITH RECURSIVE r(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM r WHERE k < 3), "
    "d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) SELECT id, k, repeat('x', 5000000) FROM d, r",
    "WITH r(k) AS MATERIALIZED (SELECT 1), d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) "
    "SELECT id, repeat('x', 5000000) FROM d, r",
    "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *), r AS NOT MATERIALIZED (SELECT 2 AS k) "
    "SELECT id, repeat('x', 5000000) FROM d, r",
    "WITH RECURSIVE d AS (DELETE FROM {t} WHERE id = 3 RETURNING *), "
    "r(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM r WHERE k < 3) CYCLE k SET c USING p "
    "SELECT d.id, r.k, repeat('x', 5000000) FROM d, r",
    "WITH RECURSIVE d AS (DELETE FROM {t} WHERE id = 3 RETURNING *), "
    "r(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM r WHERE k < 3) SEARCH DEPTH FIRST BY k SET o "
    "SELECT d.id, r.k, repeat('x', 5000000) FROM d, r",
    "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) SELECT id, repeat('x', 5000000) FROM d "
    "UNION ALL SELECT 0, 'z' ORDER BY 1 DESC LIMIT 5",
    "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) VALUES ((SELECT id FROM d), repeat('x', 5000000))",
    "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) INSERT INTO {t} (id, v) SELECT id + 10, v FROM d "
    "RETURNING id - 10, repeat('x', 5000000)",
    "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) UPDATE {t} SET n = n + (SELECT count(*) FROM d) "
    "WHERE id = 1 RETURNING 3, repeat('x', 5000000)",
]


@pytest.mark.parametrize("sql", HOISTED, ids=[f"hoist{i}" for i in range(len(HOISTED))])
async def test_a_writing_with_clause_runs_once_and_its_rows_are_capped(pg, table, sql: str) -> None:
    owner = pg[3]
    r, wire = await _run(pg, sql.format(t=table))
    assert r.ok, r.error
    assert wire < WIRE_CAP
    assert r.content["cut"] is True
    assert r.content["rows"][0][0] == 3
    assert owner(f"SELECT count(*) FROM {table} WHERE id = 3") == [(0,)]  # deleted exactly once
    assert owner(f"SELECT count(*) FROM {table}") in ([(2,)], [(3,)])
    _assert_clean(owner)


async def test_the_guards_still_hold_around_the_capping_query(pg, table) -> None:
    owner = pg[3]
    # every row of the table changed: rolled back, whatever the rows answered
    r, _ = await _run(pg, f"WITH d AS (DELETE FROM {table} WHERE id = id RETURNING *) "
                          "SELECT id, repeat('x', 5000000) FROM d")
    assert not r.ok and "every row" in r.error.message
    r, _ = await _run(pg, f"UPDATE {table} SET v = 'q' WHERE id IS NOT NULL RETURNING repeat('x', 5000000)")
    assert not r.ok and "every row" in r.error.message
    # a value over max_write_value_bytes: rolled back although the rows answered are cut
    r, wire = await _run(pg, f"UPDATE {table} SET v = repeat('x', 3000000) WHERE id = 1 RETURNING v")
    assert not r.ok and "max_write_value_bytes" in r.error.message
    assert wire < WIRE_CAP
    assert owner(f"SELECT id, v FROM {table} ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]
    _assert_clean(owner)


async def test_names_the_statement_uses_still_mean_what_they_meant(pg, table) -> None:
    """reach's capping CTE has a new random name per call: a CTE or table the statement names
    like it (under WITH RECURSIVE every CTE sees every other) still means the statement's own."""
    owner = pg[3]
    r, _ = await _run(pg, f"WITH reach_q AS (DELETE FROM {table} WHERE id = 3 RETURNING *) SELECT id FROM reach_q")
    assert r.ok, r.error
    assert r.content["rows"] == [[3]]
    owner("DROP TABLE IF EXISTS reach_q; CREATE TABLE reach_q (id integer); INSERT INTO reach_q VALUES (77)")
    try:
        r, _ = await _run(pg, f"WITH RECURSIVE x AS (SELECT id FROM reach_q), "
                              f"i AS (INSERT INTO {table} (id, v) SELECT id, 'from reach_q' FROM x RETURNING id) "
                              "SELECT 1")
        assert r.ok, r.error
        assert owner(f"SELECT id, v FROM {table} WHERE id = 77") == [(77, "from reach_q")]
    finally:
        owner("DROP TABLE IF EXISTS reach_q")
    _assert_clean(owner)


async def test_sql_admin_rows_are_capped_too(pg, table) -> None:
    owner = pg[3]
    r, wire = await _run(pg, f"DELETE FROM {table} WHERE id = 3 RETURNING repeat('x', 20000000)", tool="sql_admin")
    assert r.ok, r.error
    assert wire < WIRE_CAP and r.content["cut"] is True
    assert owner(f"SELECT count(*) FROM {table}") == [(2,)]
    _assert_clean(owner)


async def test_small_answers_are_unchanged(pg, table) -> None:
    r, _ = await _run(pg, f"INSERT INTO {table} (id, v, n) VALUES (4, 'd', 4), (5, 'e', 5) RETURNING id, v, n")
    assert r.ok, r.error
    assert r.content == {"rows_changed": 2, "columns": ["id", "v", "n"], "rows": [[4, "d", 4], [5, "e", 5]]}
    r, _ = await _run(pg, f"WITH d AS (DELETE FROM {table} WHERE id = 5 RETURNING *) SELECT FROM d")
    assert r.ok, r.error
    assert r.content == {"rows_changed": 1}
    r, _ = await _run(pg, f"UPDATE {table} SET v = 'x' WHERE id = 4")
    assert r.ok and r.content == {"rows_changed": 1}
    r, _ = await _run(pg, f"UPDATE {table} SET v = :v WHERE id = :id RETURNING id, v, v LIKE '%%x%'",
                      params={"v": "x%:y", "id": 4})
    assert r.ok, r.error
    assert r.content == {"rows_changed": 1, "columns": ["id", "v", "?column?"], "rows": [[4, "x%:y", True]]}
    r, _ = await _run(pg, f"WITH d AS (DELETE FROM {table} WHERE id = :id RETURNING *) SELECT id, :s AS s FROM d",
                      params={"id": 4, "s": "said"})
    assert r.ok, r.error
    assert r.content == {"rows_changed": 1, "columns": ["id", "s"], "rows": [[4, "said"]]}
    r, wire = await _run(pg, "SELECT FROM generate_series(1, 200000)")  # no columns: run, counted, nothing sent
    assert r.ok and r.content == {"rows_changed": 200000}
    assert wire < 10_000


# SQLite runs in reach's own process. RETURNING rows are held by SQLite as records, so the write
# cap on one value (SQLITE_LIMIT_LENGTH = max_write_value_bytes) bounds a whole RETURNING row too:
# a value built only for the answer (never written), or a row of many values each under the cap,
# is refused before any of it reaches Python, and nothing is changed.
SQLITE_RETURNING = [
    "zeroblob(300000)",
    "randomblob(300000)",
    "printf('%.*c', 90000, 'x') || printf('%.*c', 90000, 'x')",  # alone past the cap, printf answers NULL
    "hex(randomblob(150000))",
    "replace(hex(zeroblob(60000)), '0', 'ab')",
    "(WITH RECURSIVE r(n, s) AS (SELECT 1, 'x' UNION ALL SELECT n + 1, s || s FROM r WHERE n < 20) "
    "SELECT max(s) FROM r)",
    ", ".join(["zeroblob(60000)"] * 5),
    ", ".join(["printf('%.*c', 40000, 'y')"] * 8),
    ", ".join([f"randomblob({20000 + i})" for i in range(30)]),
]
SQLITE_SHAPES = [
    "UPDATE accounts SET owner = 'q' WHERE id = 1 RETURNING {e}",
    "DELETE FROM accounts WHERE id = 2 RETURNING id, {e}",
    "INSERT INTO accounts (id, owner) VALUES (9, 'n') RETURNING {e}",
    "INSERT INTO accounts (id, owner) SELECT 10 + id, owner FROM accounts WHERE id < 3 RETURNING {e}",
]


@pytest.mark.parametrize("shape", SQLITE_SHAPES)
@pytest.mark.parametrize("expr", SQLITE_RETURNING)
async def test_sqlite_returning_rows_are_bounded_by_the_write_value_cap(sql_reach, tmp_path: Path, shape: str,
                                                                       expr: str) -> None:
    import sqlite3

    path = tmp_path / "shop.sqlite3"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL)")
        con.executemany("INSERT INTO accounts VALUES (?, ?)", [(1, "ada"), (2, "bob"), (3, "cyd")])
    reach = sql_reach(tmp_path / "data", {"url": f"sqlite:///{path}", "max_write_value_bytes": 100_000})
    r = await reach.invoke("sql_execute", {"sql": shape.format(e=expr)})
    assert not r.ok and "max_write_value_bytes" in r.error.message, r.content
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT * FROM accounts ORDER BY id").fetchall() == [(1, "ada"), (2, "bob"), (3, "cyd")]
