"""PostgreSQL ``sql_execute``: the write guard's measurements must see what the statement did.

Two holes, each a family that passed before the fix (real server, real tables):

- **The value cap by column type.** ``max_write_value_bytes`` measured ``text`` and
  ``bytea`` by length and every other type by its *stored* size, which is compressed:
  a 1 MB ``repeat('x', …)`` stores in about 12 KB. So the same megabyte written into a
  column whose type is a domain over ``text`` (``CREATE DOMAIN note AS text``), an
  array, ``json``/``jsonb``, ``xml`` or a composite passed a 100 KB cap. Now every value
  is measured by its length: text and bytes (also through domains) by ``octet_length``,
  other types by the length of their text form, which is what every reader gets.
- **The every-row rule under table inheritance.** The rows left were counted with
  ``SELECT … FROM parent``, which also reads the child tables, while the per-table
  counters count the parent's own rows only: with one row in a child table,
  ``UPDATE parent … WHERE id = id`` changed every row of the parent and passed (so did
  ``DELETE … WHERE tableoid = 'parent'::regclass``). Now a plain table's rows are
  counted with ``ONLY``; a partitioned table is still counted whole (its rows live in
  its partitions, and its counters are summed over them).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import _dispose, _postgres_urls, make_reach, pg_owner_exec

from reach_core import Reach

# -- fixtures --------------------------------------------------------------------------


@dataclass
class Pg:
    reach: Reach
    owner_exec: Any
    prefix: str


@pytest.fixture(scope="module")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pg]:
    """The real server, a 100 KB value cap and a growth cap no test here reaches."""
    url, read_url = _postgres_urls()
    owner_exec = pg_owner_exec(url)

    prefix = f"rtw_{secrets.token_hex(3)}"
    reach = make_reach(tmp_path_factory.mktemp("rt-pg-write") / "data", {
        "url": url, "read_url": read_url, "statement_timeout": 5,
        "max_write_value_bytes": 100_000, "max_write_bytes": 8_000_000,
    })
    try:
        yield Pg(reach, owner_exec, prefix)
    finally:
        _dispose(reach)
        owner_exec(f"DROP SCHEMA IF EXISTS {prefix} CASCADE")


# -- the value cap, by column type ------------------------------------------------------

MB = 1_000_000
# (column type, an expression of that type whose value is about 1 MB long, a short one)
TYPED_VALUES = [
    ("{s}.note", f"repeat('x', {MB})", "'short'"),  # domain over text
    ("{s}.vnote", f"repeat('x', {MB})", "'short'"),  # domain over varchar
    ("{s}.note2", f"repeat('x', {MB})", "'short'"),  # domain over a domain over text
    ("{s}.blob", f"convert_to(repeat('x', {MB}), 'UTF8')", "'\\x00'::bytea"),  # domain over bytea
    ("text[]", f"ARRAY[repeat('x', {MB})]", "ARRAY['a']"),
    ("text[]", "array_fill('x'::text, ARRAY[400000])", "ARRAY['a', 'b']"),
    ("varchar[]", f"ARRAY[repeat('x', {MB})]::varchar[]", "ARRAY['a']::varchar[]"),
    ("bytea[]", f"ARRAY[convert_to(repeat('x', {MB}), 'UTF8')]", "ARRAY['\\x01'::bytea]"),
    ("int[]", "array_fill(1, ARRAY[600000])", "ARRAY[1, 2]"),
    ("jsonb", f"to_jsonb(repeat('x', {MB}))", "'{{\"a\": 1}}'::jsonb"),
    ("jsonb", f"jsonb_build_object('k', repeat('y', {MB}))", "'[]'::jsonb"),
    ("json", f"to_json(repeat('x', {MB}))", "'1'::json"),
    ("{s}.doc", f"to_jsonb(repeat('x', {MB}))", "'2'::jsonb"),  # domain over jsonb
    ("xml", f"xmlelement(name a, repeat('x', {MB}))", "'<a/>'::xml"),
    ("{s}.pair", f"ROW(1, repeat('x', {MB}))::{{s}}.pair", "ROW(1, 'a')::{s}.pair"),  # composite
]
SITES = [
    "UPDATE {t} SET v = {e} WHERE id = 1",
    "INSERT INTO {t} (id, v) VALUES (9, {e})",
    "INSERT INTO {t} (id, v) VALUES (2, {e}) ON CONFLICT (id) DO UPDATE SET v = excluded.v",
    "WITH w AS (UPDATE {t} SET v = {e} WHERE id = 2 RETURNING 1) SELECT count(*) FROM w",
]
TYPE_CASES = [(i, site) for i in range(len(TYPED_VALUES)) for site in SITES]


def _typed_table(pg: Pg, index: int) -> tuple[str, str, str]:
    s = pg.prefix
    pg.owner_exec(
        f"CREATE SCHEMA IF NOT EXISTS {s};"
        f"DO $$ BEGIN IF to_regtype('{s}.note') IS NULL THEN "
        f"CREATE DOMAIN {s}.note AS text; CREATE DOMAIN {s}.vnote AS varchar; "
        f"CREATE DOMAIN {s}.note2 AS {s}.note; CREATE DOMAIN {s}.blob AS bytea; "
        f"CREATE DOMAIN {s}.doc AS jsonb; CREATE TYPE {s}.pair AS (n int, t text); END IF; END $$"
    )
    column, big, small = (x.format(s=s) for x in TYPED_VALUES[index])
    table = f"{s}.t{index}"
    pg.owner_exec(f"DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id int PRIMARY KEY, v {column});"
                  f"INSERT INTO {table} VALUES (1, {small}), (2, {small}), (3, NULL)")
    return table, big.replace("{s}", s), small


def _snapshot(pg: Pg, table: str) -> Any:
    return pg.owner_exec(f"SELECT id, md5(v::text) FROM {table} ORDER BY id")


@pytest.mark.parametrize(("index", "site"), TYPE_CASES)
async def test_a_long_value_of_any_column_type_is_refused(pg: Pg, index: int, site: str) -> None:
    table, big, _small = _typed_table(pg, index)
    before = _snapshot(pg, table)
    sql = site.format(t=table, e=big)
    r = await pg.reach.invoke("sql_execute", {"sql": sql})
    assert not r.ok, (TYPED_VALUES[index][0], sql[:120], r.content)
    assert r.error.code == "execution_failed", r.error
    assert "one value may hold" in r.error.message, r.error.message
    assert _snapshot(pg, table) == before


@pytest.mark.parametrize("index", range(len(TYPED_VALUES)))
async def test_short_values_of_every_column_type_still_write(pg: Pg, index: int) -> None:
    table, _big, small = _typed_table(pg, index)
    for sql in [f"UPDATE {table} SET v = {small} WHERE id = 1", f"INSERT INTO {table} (id, v) VALUES (7, {small})"]:
        r = await pg.reach.invoke("sql_execute", {"sql": sql})
        assert r.ok, (sql, r.error)
        assert r.content["rows_changed"] == 1


async def test_a_toasted_value_under_the_cap_still_writes(pg: Pg) -> None:
    """80 KB of JSON text (toasted: it does not compress below 2 KB) is under the 100 KB cap."""
    table, _big, _small = _typed_table(pg, TYPED_VALUES.index(next(v for v in TYPED_VALUES if v[0] == "jsonb")))
    value = "(SELECT jsonb_agg(md5(g::text)) FROM generate_series(1, 2000) AS g)"  # about 78 KB as text
    r = await pg.reach.invoke("sql_execute", {"sql": f"UPDATE {table} SET v = {value} WHERE id = 1"})
    assert r.ok, r.error
    assert pg.owner_exec(f"SELECT octet_length(v::text) > 70000 FROM {table} WHERE id = 1") == [(True,)]


# -- the every-row rule under table inheritance ----------------------------------------


def _family(pg: Pg, kids: list[int], grandkid: int = 0) -> tuple[str, list[str]]:
    """A parent with rows 1..3 and child tables with the given numbers of rows (ids from 10)."""
    s = pg.prefix
    parent = f"{s}.p_{secrets.token_hex(3)}"
    sqls = [f"CREATE SCHEMA IF NOT EXISTS {s}",
            f"CREATE TABLE {parent} (id int PRIMARY KEY, owner text NOT NULL)",
            f"INSERT INTO {parent} VALUES (1, 'ada'), (2, 'bob'), (3, 'cyd')"]
    tables = [parent]
    next_id = 10
    for k, rows in enumerate(kids):
        kid = f"{parent}_k{k}"
        tables.append(kid)
        sqls.append(f"CREATE TABLE {kid} () INHERITS ({parent})")
        for _ in range(rows):
            sqls.append(f"INSERT INTO {kid} VALUES ({next_id}, 'kid')")
            next_id += 1
    if grandkid:
        sqls.append(f"CREATE TABLE {parent}_g () INHERITS ({tables[-1]})")
        tables.append(f"{parent}_g")
        for _ in range(grandkid):
            sqls.append(f"INSERT INTO {parent}_g VALUES ({next_id}, 'grandkid')")
            next_id += 1
    pg.owner_exec("; ".join(sqls))
    return parent, tables


def _all_rows(pg: Pg, tables: list[str]) -> Any:
    return [pg.owner_exec(f"SELECT * FROM ONLY {t} ORDER BY id") for t in tables]


# every statement changes every row of the parent table itself; the child tables keep theirs
INHERITED = [
    "UPDATE {p} SET owner = 'x' WHERE id = id AND tableoid = '{p}'::regclass",
    "UPDATE {p} SET owner = 'x' WHERE id < 10",
    "UPDATE {p} SET owner = 'x' WHERE id IN (1, 2, 3)",
    "UPDATE ONLY {p} SET owner = 'x' WHERE id = id",
    "UPDATE ONLY {p} SET owner = owner || '' WHERE owner IS NOT NULL",
    "UPDATE {p} AS a SET owner = 'x' FROM (SELECT 1) AS s WHERE a.id < 10",
    "DELETE FROM {p} WHERE tableoid = '{p}'::regclass",
    "DELETE FROM {p} WHERE id < 10",
    "DELETE FROM ONLY {p} WHERE id = id",
    "DELETE FROM ONLY {p} WHERE owner LIKE '%'",
    "DELETE FROM {p} USING (SELECT 1) AS s WHERE {p}.id BETWEEN 1 AND 3",
    "WITH d AS (DELETE FROM ONLY {p} WHERE id = id RETURNING 1) SELECT count(*) FROM d",
    "WITH u AS (UPDATE ONLY {p} SET owner = 'x' WHERE id = id RETURNING 1) SELECT 1",
    "INSERT INTO {p} SELECT id, 'x' FROM ONLY {p} ON CONFLICT (id) DO UPDATE SET owner = excluded.owner",
    "MERGE INTO ONLY {p} AS a USING {p} AS s ON a.id = s.id WHEN MATCHED THEN UPDATE SET owner = 'x'",
    "MERGE INTO ONLY {p} AS a USING (SELECT id FROM ONLY {p}) AS s ON a.id = s.id WHEN MATCHED THEN DELETE",
]
SHAPES = [([1], 0), ([1, 1], 0), ([5], 0), ([0], 2)]  # a child of one row, two, five; a grandchild of two


@pytest.mark.parametrize("shape", SHAPES, ids=["one-kid-row", "two-kids", "five-kid-rows", "grandkid"])
@pytest.mark.parametrize("sql", INHERITED)
async def test_every_row_of_a_parent_table_is_refused(pg: Pg, sql: str, shape: tuple[list[int], int]) -> None:
    parent, tables = _family(pg, *shape)
    before = _all_rows(pg, tables)
    r = await pg.reach.invoke("sql_execute", {"sql": sql.format(p=parent)})
    assert not r.ok, (sql, shape, r.content)
    assert "every row" in r.error.message, r.error.message
    assert _all_rows(pg, tables) == before


BOUNDED_INHERITED = [
    ("UPDATE {p} SET owner = 'x' WHERE id = 1", 1),
    ("UPDATE {p} SET owner = 'x' WHERE id IN (1, 2)", 2),  # the parent keeps row 3
    ("DELETE FROM {p} WHERE id IN (2, 3)", 2),
    ("UPDATE {p} SET owner = 'x' WHERE id IN (1, 2, 10)", 3),  # two parent rows, one child row
    ("DELETE FROM ONLY {p} WHERE id <> 3", 2),
]


@pytest.mark.parametrize(("sql", "rows"), BOUNDED_INHERITED)
async def test_writes_that_leave_parent_rows_alone_still_run(pg: Pg, sql: str, rows: int) -> None:
    parent, _tables = _family(pg, [3])
    r = await pg.reach.invoke("sql_execute", {"sql": sql.format(p=parent)})
    assert r.ok, (sql, r.error)
    assert r.content["rows_changed"] == rows


def _partitioned(pg: Pg) -> str:
    s = pg.prefix
    root = f"{s}.r_{secrets.token_hex(3)}"
    pg.owner_exec(
        f"CREATE SCHEMA IF NOT EXISTS {s}; CREATE TABLE {root} (id int, owner text) PARTITION BY RANGE (id);"
        f"CREATE TABLE {root}_a PARTITION OF {root} FOR VALUES FROM (0) TO (10);"
        f"CREATE TABLE {root}_b PARTITION OF {root} FOR VALUES FROM (10) TO (100);"
        f"INSERT INTO {root} VALUES (1, 'a'), (2, 'b'), (11, 'c'), (12, 'd')"
    )
    return root


@pytest.mark.parametrize("sql", ["UPDATE {r} SET owner = 'x' WHERE id = id", "DELETE FROM {r} WHERE id > 0",
                                 "UPDATE {r} SET owner = 'x' WHERE id IN (1, 2, 11, 12)"])
async def test_every_row_of_a_partitioned_table_is_still_refused(pg: Pg, sql: str) -> None:
    root = _partitioned(pg)
    r = await pg.reach.invoke("sql_execute", {"sql": sql.format(r=root)})
    assert not r.ok and "every row" in r.error.message, (sql, r.content if r.ok else r.error)
    assert pg.owner_exec(f"SELECT count(*) FROM {root} WHERE owner <> 'x'") == [(4,)]


@pytest.mark.parametrize(("sql", "rows"), [("UPDATE {r} SET owner = 'x' WHERE id < 12", 3),
                                           ("DELETE FROM {r} WHERE id IN (1, 2)", 2),  # a whole partition
                                           ("UPDATE {r} SET owner = 'x' WHERE id IN (1, 11)", 2)])
async def test_bounded_writes_to_a_partitioned_table_still_run(pg: Pg, sql: str, rows: int) -> None:
    root = _partitioned(pg)
    r = await pg.reach.invoke("sql_execute", {"sql": sql.format(r=root)})
    assert r.ok, (sql, r.error)
    assert r.content["rows_changed"] == rows


# -- a write the cancel could not stop ----------------------------------------------------

# When the protocol's cancel fails (or the server sits in a function that does not check for
# interrupts), the watchdog shuts the socket down. On the write path SQLAlchemy then holds an
# invalidated transaction, and marking the connection for discard raised PendingRollbackError
# over the timeout: the model got "internal error; do not resend the same arguments".
STUCK_WRITES = [
    "UPDATE {t} SET v = NULL WHERE id = 1 AND pg_sleep(40) IS NOT NULL",
    "INSERT INTO {t} (id, v) SELECT 8, NULL FROM pg_sleep(40)",
    "DELETE FROM {t} WHERE id = 3 AND (SELECT pg_sleep(40)) IS NOT NULL",
    "WITH s AS (SELECT pg_sleep(40)) UPDATE {t} SET v = NULL FROM s WHERE id = 2",
    "SELECT pg_sleep(40)",
]


@pytest.fixture
def broken_cancel(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The driver's cancel raising, and the server's own statement_timeout far past the deadline."""
    from reach_sql import database

    tried: list[int] = []

    def cancel_for(_raw: Any) -> Any:
        def cancel() -> None:
            tried.append(1)
            raise OSError("cancel request could not be sent")

        return cancel

    monkeypatch.setattr(database, "pg_cancel", cancel_for)
    monkeypatch.setattr(database, "_ms", lambda timeout: max(1, int(timeout * 1000)) + 60_000)
    return tried


@pytest.mark.parametrize("sql", STUCK_WRITES)
async def test_a_write_stopped_by_closing_the_socket_answers_timeout(
    tmp_path: Path, broken_cancel: list[int], sql: str
) -> None:
    url, read_url = _postgres_urls()
    table = f"rtw_stuck_{secrets.token_hex(3)}"
    reach = make_reach(tmp_path / "data", {"url": url, "read_url": read_url, "statement_timeout": 1})
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text); INSERT INTO {table} VALUES (1, 'a'), "
                    "(2, 'b'), (3, 'c')")
    try:
        r = await reach.invoke("sql_execute", {"sql": sql.format(t=table)})
        assert broken_cancel, "the statement never needed a cancel"
        assert not r.ok
        assert r.error.code == "timeout", r.error
        assert "internal error" not in r.error.message
        with psycopg.connect(dsn, autocommit=True) as con:
            assert con.execute(f"SELECT * FROM {table} ORDER BY id").fetchall() == [(1, "a"), (2, "b"), (3, "c")]
        honest = await reach.invoke("sql_execute", {"sql": f"UPDATE {table} SET v = 'z' WHERE id = 1"})
        assert honest.ok, honest.error
    finally:
        _dispose(reach)
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute(f"DROP TABLE IF EXISTS {table}")


# -- sizes of the rows a write through a parent table puts in its child tables ------------------

# The sizes were taken for the tables the statement names and their partitions
# (pg_partition_tree), not for the child tables of plain inheritance: an UPDATE of the parent
# that changed a child's row wrote a megabyte under a 100 KB value cap, and grew the child past
# the growth cap. The tables measured are now the named ones and all that inherit from them.
_MD5S = "(SELECT string_agg(md5(g::text || {k}), '') FROM generate_series(1, {n}) AS g)"
THROUGH_THE_PARENT = [
    "UPDATE {p} SET owner = repeat('x', 1000000) WHERE id = 10",
    "UPDATE {p} SET owner = repeat('x', 1000000) WHERE id = 20",  # a grandchild's row
    "UPDATE {p} SET owner = " + _MD5S.format(k="id", n=5000) + " WHERE id = 11",
    "UPDATE {p} AS a SET owner = repeat(s.c, 500000) FROM (SELECT 'ab' AS c) AS s WHERE a.id = 10",
    "WITH u AS (UPDATE {p} SET owner = repeat('y', 1000000) WHERE id = 12 RETURNING 1) SELECT count(*) FROM u",
    "UPDATE {p} SET owner = lpad('x', 1000000, 'ab') WHERE id IN (10, 20)",
    "UPDATE {p} SET owner = to_jsonb(repeat('x', 1000000))::text WHERE owner = 'grandkid'",
]


def _inheritance_with_grandkid(pg: Pg) -> tuple[str, list[str]]:
    parent, tables = _family(pg, [3])  # child rows 10, 11, 12
    grand = f"{parent}_g"
    pg.owner_exec(f"CREATE TABLE {grand} () INHERITS ({tables[-1]}); "
                  f"INSERT INTO {grand} VALUES (20, 'grandkid'), (21, 'grandkid2')")
    return parent, [*tables, grand]


def _digests(pg: Pg, tables: list[str]) -> Any:
    return [pg.owner_exec(f"SELECT id, md5(owner) FROM ONLY {t} ORDER BY id") for t in tables]


@pytest.mark.parametrize("sql", THROUGH_THE_PARENT)
async def test_a_long_value_written_through_a_parent_is_refused(pg: Pg, sql: str) -> None:
    parent, tables = _inheritance_with_grandkid(pg)
    before = _digests(pg, tables)
    r = await pg.reach.invoke("sql_execute", {"sql": sql.format(p=parent)})
    assert not r.ok, (sql, r.content)
    assert "one value may hold" in r.error.message, r.error.message
    assert _digests(pg, tables) == before


GROWTH_THROUGH_THE_PARENT = [
    "UPDATE {p} SET owner = " + _MD5S.format(k="id", n=1500) + " WHERE id > 10",
    "UPDATE {p} SET owner = " + _MD5S.format(k="id", n=1500) + " WHERE owner LIKE 'kid%' AND id <> 10",
    "WITH u AS (UPDATE {p} SET owner = " + _MD5S.format(k="id", n=1500) + " WHERE id >= 11 RETURNING 1) SELECT 1",
]


@pytest.mark.parametrize("sql", GROWTH_THROUGH_THE_PARENT)
async def test_growth_through_a_parent_is_refused(tmp_path: Path, sql: str) -> None:
    """About 48 KB of digits in each of eight child rows: under the value cap, over the growth cap."""
    url, read_url = _postgres_urls()
    reach = make_reach(tmp_path / "data", {"url": url, "read_url": read_url, "statement_timeout": 5,
                                           "max_write_value_bytes": 100_000, "max_write_bytes": 65536})
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")

    def owner_exec(q: str) -> Any:
        with psycopg.connect(dsn, autocommit=True) as con:
            cur = con.execute(q)
            return cur.fetchall() if cur.description else None

    pg = Pg(reach, owner_exec, f"rtg_{secrets.token_hex(3)}")
    try:
        parent, tables = _family(pg, [9])  # child rows 10..18
        before = _digests(pg, tables)
        r = await reach.invoke("sql_execute", {"sql": sql.format(p=parent)})
        assert not r.ok, (sql, r.content)
        assert "one call may write" in r.error.message, r.error.message
        assert _digests(pg, tables) == before
    finally:
        _dispose(reach)
        owner_exec(f"DROP SCHEMA IF EXISTS {pg.prefix} CASCADE")


async def test_short_values_through_a_parent_still_write(pg: Pg) -> None:
    parent, _tables = _inheritance_with_grandkid(pg)
    for sql, rows in [(f"UPDATE {parent} SET owner = repeat('x', 50000) WHERE id = 10", 1),
                      (f"UPDATE {parent} SET owner = 'z' WHERE id IN (1, 11, 20)", 3)]:
        r = await pg.reach.invoke("sql_execute", {"sql": sql})
        assert r.ok, (sql, r.error)
        assert r.content["rows_changed"] == rows


async def test_a_long_value_in_a_partition_is_still_refused(pg: Pg) -> None:
    root = _partitioned(pg)
    r = await pg.reach.invoke("sql_execute", {"sql": f"UPDATE {root} SET owner = repeat('x', 1000000) WHERE id = 11"})
    assert not r.ok and "one value may hold" in r.error.message, r.content if r.ok else r.error
