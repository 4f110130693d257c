"""sql_execute: a write must be bounded, in rows and in bytes.

Holes closed here (each family failed before):

- MERGE (PostgreSQL 15+) ``ON true`` / ``ON 1 = 1`` ``WHEN MATCHED THEN DELETE``/``UPDATE``
  changed every row although UPDATE/DELETE without WHERE are refused; MERGE on
  the other dialects is refused (they cannot be judged there).
- A WHERE that reads no column (``WHERE 1=1``, ``TRUE``, ``NOT FALSE``, ``1 IN (1)``,
  ``EXISTS (SELECT 1)``, an OR with such a branch) is refused from the parse tree.
- A WHERE that reads a column but holds for every row (``id = id``, ``id IS NOT NULL``,
  ``LIKE '%'``, ``GLOB '*'``, self-joins, ``ON CONFLICT DO UPDATE`` over the whole table,
  ``INSERT OR REPLACE … SELECT``, writes in CTEs) is caught by the database: a statement
  that changed every row of a table of two rows or more is rolled back.
- Sizes: SQLite writes cannot build a value over ``max_write_value_bytes`` nor grow the
  file by more than ``max_write_bytes`` (engine limits); PostgreSQL writes are measured
  before the commit and rolled back when over either cap.

Every refusal is ``execution_failed`` and leaves the database as it was.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import Backend, _postgres_urls, _postgresql, make_reach, sqlite_owner_exec
from reach_sql.classify import classify

# -- conditions that read no column: refused from the parse tree, every dialect -----------

CONSTANT_WHERES = [
    "1=1", "1 = 1", "TRUE", "true", "tRuE", "NOT FALSE", "NOT (1 = 0)", "1 IN (1)", "1 IN (1, 2)",
    "EXISTS (SELECT 1)", "coalesce(NULL, 1) = 1", "2 > 1", "'a' LIKE '%'", "NULL IS NULL",
    "(TRUE)", "((1=1))", "TRUE AND TRUE", "1=1 AND 2=2", "CAST(1 AS integer) = 1", "1 BETWEEN 0 AND 2",
    "id = 1 OR 1=1", "1=1 OR id = 1", "id = 1 OR TRUE", "(id = 1) OR (NOT FALSE)",
    "id = 1 OR (id = 2 OR 1 = 1)", "id = 1 OR EXISTS (SELECT 1)", "1=1 -- AND id = 1\n",
    "1=1 /* AND id = 1 */", "\t1\n=\n1\n", "id = 1 OR 'x' = 'x'",
]
CONSTANT_WHERES_PG = ["1 = 1::int", "'t'::boolean", "NOT 'f'::bool", "1 = ANY(ARRAY[1])", "now() IS NOT NULL",
                      "random() >= 0", "$$a$$ = $$a$$", "E'\\x41' = 'A'", "(SELECT true)"]
CONSTANT_WHERES_SQLITE = ["1", "'1'", "x'01'", "1.0", "-1", "NOT 0", "'abc' GLOB '*'", "(SELECT 1)",
                          "abs(-1)", "id = 1 OR 1"]
STATEMENT_SHAPES = [
    "DELETE FROM {t} WHERE {w}",
    "UPDATE {t} SET owner = 'x' WHERE {w}",
    "delete from {t} where {w}",
    "UPDATE {t} SET owner = 'x' WHERE {w} RETURNING id",
    "WITH s AS (SELECT 1 AS k) DELETE FROM {t} WHERE {w}",
]
STATEMENT_SHAPES_PG = [
    "DELETE FROM {t} USING (SELECT 1) AS s WHERE {w}",
    "UPDATE {t} SET owner = s.o FROM (SELECT 'x' AS o) AS s WHERE {w}",
    "WITH d AS (DELETE FROM {t} WHERE {w} RETURNING 1) SELECT count(*) FROM d",
    "WITH u AS (UPDATE {t} SET owner = 'x' WHERE {w} RETURNING 1) INSERT INTO {t} SELECT 99, 'x', 1 FROM u LIMIT 0",
]
STATEMENT_SHAPES_SQLITE = ["UPDATE {t} SET owner = s.o FROM (SELECT 'x' AS o) AS s WHERE {w}",
                           "UPDATE OR REPLACE {t} SET owner = 'x' WHERE {w}"]


def _pg_constant() -> list[str]:
    return [s.format(t="accounts", w=w) for s in STATEMENT_SHAPES + STATEMENT_SHAPES_PG
            for w in CONSTANT_WHERES + CONSTANT_WHERES_PG]


def _sqlite_constant() -> list[str]:
    return [s.format(t="accounts", w=w) for s in STATEMENT_SHAPES + STATEMENT_SHAPES_SQLITE
            for w in CONSTANT_WHERES + CONSTANT_WHERES_SQLITE]


@pytest.mark.parametrize("sql", _pg_constant())
def test_constant_where_is_refused_on_postgres(sql: str) -> None:
    verdict = classify(sql, "postgresql")
    assert verdict.kind == "dangerous", sql
    assert "every row" in verdict.reason


@pytest.mark.parametrize("sql", _sqlite_constant())
def test_constant_where_is_refused_on_sqlite(sql: str) -> None:
    assert classify(sql, "sqlite").kind == "dangerous", sql


@pytest.mark.parametrize("dialect", ["mysql", "mssql", "duckdb"])
@pytest.mark.parametrize("w", ["1=1", "TRUE", "id = 1 OR 1=1", "NOT (1 = 0)"])
def test_constant_where_is_refused_on_other_dialects(dialect: str, w: str) -> None:
    assert classify(f"DELETE FROM accounts WHERE {w}", dialect).kind == "dangerous"
    assert classify(f"UPDATE accounts SET owner = 'x' WHERE {w}", dialect).kind == "dangerous"


SPACES = ["\u00a0", "\u2028", "\u3000", "\u200b", "\ufeff", "\v", "\f", "\x1c", "\t", "\r\n"]


@pytest.mark.parametrize("dialect", ["postgresql", "sqlite"])
@pytest.mark.parametrize("sp", SPACES)
def test_constant_where_with_other_spaces_is_refused(dialect: str, sp: str) -> None:
    for sql in (f"DELETE FROM accounts WHERE{sp}1=1", f"DELETE{sp}FROM{sp}accounts{sp}WHERE{sp}TRUE",
                f"UPDATE accounts SET owner = 'x' WHERE id = 1 OR{sp}1{sp}={sp}1",
                f"DELETE FROM accounts AS a{sp}WHERE{sp}a.id = 1"):
        verdict = classify(sql, dialect)
        if sp in ("\t", "\r\n", "\f", "\v") and sql.endswith("a.id = 1"):
            continue  # whitespace to the engine too (\v from PostgreSQL 16): a real condition
        assert verdict.kind == "dangerous", (repr(sql), verdict)


STILL_BOUNDED = [
    "DELETE FROM accounts WHERE id = 1",
    "DELETE FROM accounts WHERE true AND id = 3",
    "DELETE FROM accounts WHERE 1=1 AND id = 3",
    "DELETE FROM accounts WHERE id = :id",
    "UPDATE accounts SET owner = 'x' WHERE id = 1 OR id = 2",
    "UPDATE accounts SET owner = 'x' WHERE id IN (SELECT 1)",
    "UPDATE accounts SET owner = 'x' WHERE owner = 'ada' AND EXISTS (SELECT 1)",
]


@pytest.mark.parametrize("dialect", ["postgresql", "sqlite"])
@pytest.mark.parametrize("sql", STILL_BOUNDED)
def test_conditions_on_a_column_still_pass_the_parser(dialect: str, sql: str) -> None:
    assert classify(sql, dialect).kind == "write", classify(sql, dialect).reason


# -- MERGE ------------------------------------------------------------------------------

MERGE_UNBOUNDED = [
    "MERGE INTO {t} USING (SELECT 1 AS x) AS s ON true WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} USING (SELECT 1 AS x) AS s ON 1=1 WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} USING (SELECT 1 AS x) AS s ON TRUE AND TRUE WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} USING (SELECT 1 AS x) AS s ON NOT FALSE WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} USING (SELECT 1 AS x) AS s ON (1 = 1) WHEN MATCHED THEN UPDATE SET owner = 'm'",
    "MERGE INTO {t} USING (SELECT 1 AS x) AS s ON true WHEN MATCHED THEN UPDATE SET owner = 'm'",
    "merge into {t} using (select 1 as x) as s on true when matched then delete",
    "MERGE INTO {t} AS a USING (SELECT 1 AS x) AS s ON a.id = s.x OR true WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} USING (SELECT 1 AS x) AS s ON true WHEN MATCHED AND true THEN DELETE",
    "MERGE INTO {t} USING (SELECT 1 AS x) AS s ON EXISTS (SELECT 1) WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} USING {t} AS s ON true WHEN MATCHED THEN UPDATE SET owner = 'm' "
    "WHEN NOT MATCHED THEN INSERT VALUES (99, 'm', 1)",
    "MERGE INTO {t} USING (SELECT 1 AS x) AS s ON true WHEN NOT MATCHED THEN INSERT VALUES (99, 'm', 1) "
    "WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} USING (SELECT 1 AS x) AS s ON 1 = 1 -- AND {t}.id = s.x\nWHEN MATCHED THEN DELETE",
    # joins that read columns but match every row: caught by the row count
    "MERGE INTO {t} AS a USING {t} AS b ON a.id = b.id WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} AS a USING {t} AS b ON a.id = b.id WHEN MATCHED THEN UPDATE SET owner = 'm'",
    "MERGE INTO {t} AS a USING (SELECT 1 AS x) AS s ON a.id IS NOT NULL WHEN MATCHED THEN DELETE",
    "MERGE INTO {t} AS a USING (SELECT 1 AS x) AS s ON a.id = a.id WHEN MATCHED THEN UPDATE SET owner = 'm'",
]
MERGE_BOUNDED = [
    ("MERGE INTO {t} AS a USING (SELECT 1 AS id) AS s ON a.id = s.id WHEN MATCHED THEN UPDATE SET owner = 'm'", 1),
    ("MERGE INTO {t} AS a USING (SELECT 3 AS id) AS s ON a.id = s.id WHEN MATCHED THEN DELETE", 1),
    ("MERGE INTO {t} AS a USING (SELECT 7 AS id) AS s ON a.id = s.id WHEN NOT MATCHED THEN INSERT "
     "VALUES (s.id, 'n', 1)", 1),
    ("MERGE INTO {t} AS a USING (VALUES (1), (2)) AS s(id) ON a.id = s.id WHEN MATCHED THEN UPDATE SET owner = 'm'",
     2),
]


@pytest.mark.parametrize("sql", [m for m in MERGE_UNBOUNDED[:13]] + [
    "MERGE INTO {t} AS a USING (SELECT 1 AS id) AS s ON a.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE",
    "MERGE INTO {t} AS a USING (SELECT 1 AS id) AS s ON a.id = s.id "
    "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET owner = 'm'",
    "MERGE INTO {t} AS a USING (SELECT 1 AS id) AS s ON a.id = s.id WHEN NOT MATCHED BY SOURCE AND true THEN DELETE",
])
def test_merge_matching_every_row_is_refused_by_the_parser(sql: str) -> None:
    verdict = classify(sql.format(t="accounts"), "postgresql")
    assert verdict.kind == "dangerous"
    assert "MERGE" in verdict.reason


@pytest.mark.parametrize("dialect", ["sqlite", "mssql", "tsql", "oracle", "duckdb"])
@pytest.mark.parametrize("sql", [MERGE_UNBOUNDED[0], MERGE_BOUNDED[0][0]])
def test_merge_is_refused_where_it_cannot_be_judged(dialect: str, sql: str) -> None:
    assert classify(sql.format(t="accounts"), dialect).kind == "dangerous"


@pytest.mark.parametrize("sql", MERGE_UNBOUNDED)
async def test_merge_changing_every_row_changes_nothing(shared_backend, sql: str) -> None:
    await _refused_and_unchanged(shared_backend, sql)


@pytest.mark.parametrize(("sql", "rows"), MERGE_BOUNDED)
async def test_bounded_merge_still_runs(postgresql_backend, sql: str, rows: int) -> None:
    r = await postgresql_backend.reach.invoke("sql_execute", {"sql": sql.format(t=postgresql_backend.table)})
    assert r.ok, r.error
    assert r.content["rows_changed"] == rows


# -- conditions that read a column and still hold for every row: the database counts ------

EVERY_ROW_BOTH = [
    "DELETE FROM {t} WHERE id = id",
    "DELETE FROM {t} WHERE id IS NOT NULL",
    "DELETE FROM {t} WHERE NOT (id IS NULL)",
    "DELETE FROM {t} WHERE id > -1e308",
    "DELETE FROM {t} WHERE id >= -9223372036854775807",
    "DELETE FROM {t} WHERE owner LIKE '%'",
    "DELETE FROM {t} WHERE coalesce(id, 1) IS NOT NULL",
    "DELETE FROM {t} WHERE length(owner) >= 0",
    "DELETE FROM {t} WHERE id = id OR false",
    "DELETE FROM {t} WHERE id = id AND true",
    "DELETE FROM {t} WHERE CAST(id AS text) <> 'nothing'",
    "DELETE FROM {t} WHERE id IN (SELECT id FROM {t})",
    "DELETE FROM {t} WHERE EXISTS (SELECT 1 FROM {t} AS u WHERE u.id = {t}.id)",
    "DELETE FROM {t} WHERE id <> -1 RETURNING id",
    "DeLeTe FrOm {t} WhErE iD = Id",
    "DELETE FROM {t} WHERE  id  =  id  -- one row only",
    "UPDATE {t} SET owner = 'x' WHERE id = id",
    "UPDATE {t} SET owner = 'x' WHERE owner LIKE '%'",
    "UPDATE {t} SET owner = 'x' WHERE owner IS NOT NULL",
    "UPDATE {t} SET owner = 'x' WHERE id > -1e308 RETURNING owner",
    "UPDATE {t} SET owner = owner || '' WHERE id = id",
    "UPDATE {t} SET owner = 'x' WHERE id IN (SELECT id FROM {t})",
    "UPDATE {t} SET balance = NULL WHERE upper(owner) = upper(owner)",
    "WITH s AS (SELECT id FROM {t}) UPDATE {t} SET owner = 'x' WHERE id IN (SELECT id FROM s)",
]
EVERY_ROW_PG = [
    "UPDATE {t} SET owner = 'x' FROM {t} AS u WHERE u.id = {t}.id",
    "DELETE FROM {t} USING {t} AS u WHERE u.id = {t}.id",
    "DELETE FROM {t} WHERE owner ~ ''",
    "DELETE FROM {t} WHERE owner ILIKE '%'",
    "DELETE FROM {t} WHERE owner SIMILAR TO '%'",
    "DELETE FROM {t} WHERE id::text IS NOT NULL",
    "DELETE FROM ONLY {t} WHERE id = id",
    "DELETE FROM public.{t} WHERE id = id",
    'DELETE FROM "{t}" WHERE "id" = "id"',
    "UPDATE {t} SET owner = 'x' WHERE id = ANY(ARRAY(SELECT id FROM {t}))",
    "WITH d AS (DELETE FROM {t} WHERE id = id RETURNING 1) SELECT count(*) FROM d",
    "WITH u AS (UPDATE {t} SET owner = 'x' WHERE id = id RETURNING 1) SELECT 1",
    "WITH a AS (DELETE FROM {t} WHERE id < 2 RETURNING 1), b AS (DELETE FROM {t} WHERE id >= 2 RETURNING 1) SELECT 1",
    "WITH a AS (UPDATE {t} SET owner = 'x' WHERE id = 1 RETURNING 1) DELETE FROM {t} WHERE id <> 1",
    "INSERT INTO {t} SELECT id, 'x', balance FROM {t} ON CONFLICT (id) DO UPDATE SET owner = excluded.owner",
    "INSERT INTO {t} SELECT id, 'x', balance FROM {t} WHERE id = id ON CONFLICT (id) DO UPDATE SET owner = 'x'",
    "INSERT INTO {t} SELECT * FROM {t} ON CONFLICT (id) DO UPDATE SET balance = 0 RETURNING id",
    "INSERT INTO {t} VALUES (1, 'x', 1), (2, 'x', 1), (3, 'x', 1) ON CONFLICT (id) DO UPDATE SET owner = 'x'",
]
EVERY_ROW_SQLITE = [
    "DELETE FROM {t} WHERE owner GLOB '*'",
    "DELETE FROM {t} WHERE owner LIKE '%%'",
    'DELETE FROM {t} WHERE "1"',  # no column "1": SQLite reads it as the string '1', true
    'DELETE FROM {t} WHERE "id" = "id"',
    "DELETE FROM [{t}] WHERE [id] = [id]",
    "DELETE FROM `{t}` WHERE `id` = `id`",
    "DELETE FROM main.{t} WHERE id = id",
    "DELETE FROM {t} WHERE rowid = rowid",
    "DELETE FROM {t} WHERE typeof(id) = 'integer'",
    "DELETE FROM {t} WHERE id = +id",
    "UPDATE OR IGNORE {t} SET owner = 'x' WHERE id = id",
    "UPDATE OR REPLACE {t} SET owner = 'x' WHERE id = id",
    "UPDATE {t} SET owner = 'x' FROM {t} AS u WHERE u.id = {t}.id",
    "UPDATE {t} SET owner = 'x' WHERE owner GLOB '*'",
    "INSERT OR REPLACE INTO {t} SELECT id, 'x', balance FROM {t}",
    "INSERT OR REPLACE INTO {t} (id, owner, balance) SELECT id, 'x', balance FROM {t} WHERE id = id",
    "REPLACE INTO {t} SELECT id, 'x', balance FROM {t}",
    "INSERT INTO {t} SELECT id, 'x', balance FROM {t} WHERE true ON CONFLICT (id) DO UPDATE SET owner = excluded.owner",
    "INSERT INTO {t} SELECT * FROM {t} WHERE id = id ON CONFLICT DO UPDATE SET balance = '0'",
    "INSERT OR REPLACE INTO {t} VALUES (1, 'x', '1'), (2, 'x', '1'), (3, 'x', '1')",
    "INSERT INTO {t} VALUES (1, 'x', '1'), (2, 'x', '1'), (3, 'x', '1') ON CONFLICT (id) DO UPDATE SET owner = 'x'",
    "WITH s AS (SELECT id FROM {t}) INSERT OR REPLACE INTO {t} SELECT id, 'x', '1' FROM s",
]


def _family(backend_name: str, pg: list[str], lite: list[str]) -> list[str]:
    return EVERY_ROW_BOTH + (pg if backend_name == "postgresql" else lite)


async def _refused_and_unchanged(backend: Backend, sql: str, *, says: str = "") -> None:
    before = backend.snapshot()
    r = await backend.reach.invoke("sql_execute", {"sql": sql.format(t=backend.table)})
    assert not r.ok, f"sql_execute ran on {backend.name}: {sql} -> {r.content}"
    assert r.error.code == "execution_failed", r.error
    assert says in r.error.message, r.error.message
    assert "sql_admin" in r.error.message or "max_write" in r.error.message, r.error.message
    assert backend.snapshot() == before, f"{sql} changed the database on {backend.name}"


@pytest.mark.parametrize("index", range(len(EVERY_ROW_BOTH) + max(len(EVERY_ROW_PG), len(EVERY_ROW_SQLITE))))
async def test_writes_that_change_every_row_change_nothing(shared_backend, index: int) -> None:
    statements = _family(shared_backend.name, EVERY_ROW_PG, EVERY_ROW_SQLITE)
    if index >= len(statements):
        return  # this backend's family is shorter
    await _refused_and_unchanged(shared_backend, statements[index])


@pytest.mark.parametrize("w", CONSTANT_WHERES[::3])  # the whole family is checked on the parser above
async def test_constant_wheres_change_nothing(shared_backend, w: str) -> None:
    await _refused_and_unchanged(shared_backend, "DELETE FROM {t} WHERE " + w, says="every row")


# Writes that leave at least one row alone, or touch one row only, still run.
BOUNDED = [
    ("DELETE FROM {t} WHERE id = 3", 1),
    ("DELETE FROM {t} WHERE id <> 1", 2),
    ("UPDATE {t} SET owner = 'x' WHERE id IN (1, 2)", 2),
    ("UPDATE {t} SET owner = 'x' WHERE id = id AND id < 3", 2),
    ("UPDATE {t} SET owner = 'x' WHERE owner LIKE 'a%'", 1),
    ("INSERT INTO {t} SELECT id + 100, owner, balance FROM {t}", 3),
    ("INSERT INTO {t} VALUES (9, 'eve', 1)", 1),
    ("INSERT INTO {t} VALUES (1, 'dup', 1) ON CONFLICT (id) DO UPDATE SET owner = 'upd'", 1),
    ("INSERT INTO {t} SELECT id, 'x', balance FROM {t} WHERE id < 3 ON CONFLICT (id) DO UPDATE SET owner = 'x'", 2),
]


@pytest.mark.parametrize(("sql", "rows"), BOUNDED)
async def test_writes_that_leave_rows_alone_still_run(backend, sql: str, rows: int) -> None:
    r = await backend.reach.invoke("sql_execute", {"sql": sql.format(t=backend.table)})
    assert r.ok, (sql, r.error)
    assert r.content["rows_changed"] == rows


async def test_the_last_row_of_a_table_may_go(backend) -> None:
    for i in (1, 2, 3):  # one at a time: a one-row table may lose its row
        r = await backend.reach.invoke("sql_execute", {"sql": f"DELETE FROM {backend.table} WHERE id = {i}"})
        assert r.ok, r.error
    assert backend.snapshot()[1] == []


def test_sql_admin_still_changes_every_row(backend) -> None:
    """The confirmed tool is not counted (a person looked at it); the database layer directly."""
    db = next(c.db for c in backend.reach.connectors() if c.name == "sql_admin")
    rows = db.execute(f"UPDATE {backend.table} SET owner = 'x' WHERE id = id", None, admin=True, limit=10, timeout=5)
    assert rows.rowcount == 3
    assert {r[1] for r in backend.snapshot()[1]} == {"x"}


# -- sizes ------------------------------------------------------------------------------

SMALL_CAPS = {"max_write_value_bytes": 100_000, "max_write_bytes": 1_000_000}


def _small_caps_sqlite(tmp_path: Path) -> Backend:
    path = tmp_path / "caps.sqlite3"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance TEXT)")
        con.executemany("INSERT INTO accounts VALUES (?, ?, ?)", [(1, "ada", "1"), (2, "bob", "2"), (3, "cyd", "3")])
    con.close()
    owner_exec = sqlite_owner_exec(path)
    reach = make_reach(tmp_path / "data", {"url": f"sqlite:///{path}", "statement_timeout": 5, **SMALL_CAPS})
    return Backend("sqlite", reach, "accounts", lambda: (owner_exec("SELECT count(*), sum(length(balance)), "
                                                                  "sum(length(owner)) FROM accounts"),
                                                       path.stat().st_size), owner_exec)


def _dispose(b: Backend) -> None:
    for conn in b.reach.connectors():
        conn.db.dispose()


@contextmanager
def _small_caps_pg(tmp: Path) -> Iterator[Backend]:
    url, read_url = _postgres_urls()
    with _postgresql(tmp) as plain:
        reach = make_reach(tmp / "caps", {"url": url, "read_url": read_url, "statement_timeout": 5, **SMALL_CAPS})
        t, owner = plain.table, plain.owner_exec
        b = Backend("postgresql", reach, t,
                    lambda: owner(f"SELECT count(*), sum(octet_length(owner)), "
                                  f"md5(string_agg(owner, ',' ORDER BY id)) FROM {t}"),
                    owner)
        try:
            yield b
        finally:
            _dispose(b)


@pytest.fixture
def sqlite_small(tmp_path: Path) -> Iterator[Backend]:
    b = _small_caps_sqlite(tmp_path)
    yield b
    _dispose(b)


@pytest.fixture(scope="module")
def sqlite_small_shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    """For the refusals, which must change nothing: one database for the module."""
    b = _small_caps_sqlite(tmp_path_factory.mktemp("caps-sqlite"))
    yield b
    _dispose(b)


@pytest.fixture
def pg_small(tmp_path: Path) -> Iterator[Backend]:
    with _small_caps_pg(tmp_path) as b:
        yield b


@pytest.fixture(scope="module")
def pg_small_shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with _small_caps_pg(tmp_path_factory.mktemp("caps-pg")) as b:
        yield b


_RECURSE = "WITH RECURSIVE c(x) AS (SELECT 10 UNION ALL SELECT x + 1 FROM c WHERE x < {n}) "
SQLITE_TOO_BIG = [
    "UPDATE {t} SET balance = zeroblob(2000000000) WHERE id = 1",
    "UPDATE {t} SET balance = zeroblob(200000) WHERE id = 1",
    "UPDATE {t} SET balance = randomblob(2000000000) WHERE id = 1",
    "UPDATE {t} SET balance = randomblob(100001) WHERE id = 1",
    "UPDATE {t} SET balance = hex(randomblob(60000)) WHERE id = 1",
    "UPDATE {t} SET owner = printf('%.*c', 10000000, 'x') WHERE id = 1",
    "UPDATE {t} SET balance = printf('%.*c', 200000, 'x') || 'y' WHERE id = 1",
    "UPDATE {t} SET balance = printf('%0200000d', 1) WHERE id = 1",
    "UPDATE {t} SET balance = replace(hex(zeroblob(60000)), '0', 'ab') WHERE id = 1",
    "UPDATE {t} SET balance = (WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r "
    "WHERE length(s) < 100000000) SELECT max(s) FROM r) WHERE id = 1",
    "UPDATE {t} SET balance = (SELECT group_concat(hex(randomblob(1000)), '') FROM (" + _RECURSE.format(n=100000)
    + "SELECT x FROM c)) WHERE id = 1",
    "UPDATE {t} SET balance = (SELECT group_concat(a.x || b.x, '') FROM (" + _RECURSE.format(n=1000)
    + "SELECT x FROM c) AS a, (" + _RECURSE.format(n=1000) + "SELECT x FROM c) AS b) WHERE id = 1",
    "INSERT INTO {t} (id, owner, balance) VALUES (9, 'x', zeroblob(500000))",
    "INSERT INTO {t} (id, owner, balance) " + _RECURSE.format(n=1000000000) + "SELECT x, 'o', hex(randomblob(20000)) "
    "FROM c",
    "INSERT INTO {t} (id, owner, balance) " + _RECURSE.format(n=1000000000) + "SELECT x, 'o', x FROM c",
    "INSERT INTO {t} (id, owner, balance) " + _RECURSE.format(n=100000) + "SELECT x, 'o', randomblob(50) FROM c",
    "INSERT INTO {t} (id, owner, balance) SELECT a.x * 1000 + b.x, 'o', randomblob(90) FROM (" + _RECURSE.format(n=400)
    + "SELECT x FROM c) AS a, (" + _RECURSE.format(n=400) + "SELECT x FROM c) AS b",
]


@pytest.mark.parametrize("sql", SQLITE_TOO_BIG)
async def test_sqlite_writes_cannot_build_or_grow_past_the_caps(sqlite_small_shared, sql: str) -> None:
    sqlite_small = sqlite_small_shared
    before = sqlite_small.snapshot()
    r = await sqlite_small.reach.invoke("sql_execute", {"sql": sql.format(t="accounts")})
    rows_after = sqlite_small.snapshot()[0]
    if r.ok:  # printf gives NULL past SQLite's limit instead of failing: nothing large was stored
        assert (rows_after[0][1] or 0) < SMALL_CAPS["max_write_value_bytes"], (sql, r.content)
        return
    assert r.error.code in ("execution_failed", "timeout"), r.error
    assert rows_after == before[0], sql
    assert sqlite_small.snapshot()[1] - before[1] <= SMALL_CAPS["max_write_bytes"] + 65536


async def test_sqlite_caps_are_set_back_on_the_pooled_connection(sqlite_small) -> None:
    """The caps hold only during sql_execute: the pooled write connection gets its limits back."""
    r = await sqlite_small.reach.invoke("sql_execute", {"sql": "UPDATE accounts SET balance = zeroblob(200000) "
                                                               "WHERE id = 1"})
    assert not r.ok and "max_write_value_bytes" in r.error.message
    for _ in range(2):
        r = await sqlite_small.reach.invoke("sql_execute", {"sql": "UPDATE accounts SET balance = hex(zeroblob(40000)) "
                                                                   "WHERE id = 1"})
        assert r.ok, r.error
    db = next(c.db for c in sqlite_small.reach.connectors() if c.name == "sql_execute")
    raw = db.write_engine().raw_connection()
    try:
        con = raw.driver_connection
        assert con.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) > 100_000_000
        assert con.execute("PRAGMA max_page_count").fetchone()[0] > 1_000_000
        con.execute("SELECT zeroblob(1000000)").fetchone()  # the engine's own limit again
    finally:
        raw.close()


async def test_sqlite_ordinary_writes_pass_under_the_caps(sqlite_small) -> None:
    sql = ("INSERT INTO accounts (id, owner, balance) " + _RECURSE.format(n=1000)
           + "SELECT x, 'o', hex(randomblob(100)) FROM c")
    r = await sqlite_small.reach.invoke("sql_execute", {"sql": sql})
    assert r.ok and r.content["rows_changed"] == 991, r


_AGG = "(SELECT string_agg(md5(g::text), '') FROM generate_series(1, {n}) AS g)"
PG_TOO_BIG = [
    "UPDATE {t} SET owner = " + _AGG.format(n=5000) + " WHERE id = 1",
    "UPDATE {t} SET owner = repeat('x', 1000000) WHERE id = 1",
    "UPDATE {t} SET owner = repeat(md5('a'), 200000) WHERE id = 1",
    "UPDATE {t} SET owner = lpad('x', 1000000, 'ab') WHERE id = 1",
    "UPDATE {t} SET owner = rpad(" + _AGG.format(n=10) + ", 300000, md5('b')) WHERE id = 1",
    "UPDATE {t} SET owner = (SELECT string_agg(md5(a::text || b::text), '') FROM generate_series(1, 100) AS a, "
    "generate_series(1, 100) AS b) WHERE id = 1",
    "UPDATE {t} SET owner = (WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r "
    "WHERE length(s) < 2000000) SELECT max(s) FROM r) WHERE id = 1",
    "UPDATE {t} SET owner = encode(convert_to(repeat('ab', 300000), 'UTF8'), 'base64') WHERE id = 1",
    "INSERT INTO {t} VALUES (9, " + _AGG.format(n=5000) + ", 1)",
    "INSERT INTO {t} SELECT g, md5(g::text), g FROM generate_series(10, 30000) AS g",
    "INSERT INTO {t} SELECT a * 1000 + b, md5(a::text) || md5(b::text), 1 FROM generate_series(10, 150) AS a, "
    "generate_series(1, 150) AS b",
    "INSERT INTO {t} " + _RECURSE.format(n=30000) + "SELECT x, md5(x::text), 1 FROM c",
    "WITH u AS (UPDATE {t} SET owner = repeat('y', 1000000) WHERE id = 2 RETURNING 1) SELECT count(*) FROM u",
    "INSERT INTO {t} VALUES (1, repeat('z', 1000000), 1) ON CONFLICT (id) DO UPDATE SET owner = excluded.owner",
    "MERGE INTO {t} AS a USING (SELECT 1 AS id) AS s ON a.id = s.id WHEN MATCHED THEN "
    "UPDATE SET owner = repeat('m', 1000000)",
]


@pytest.mark.parametrize("sql", PG_TOO_BIG)
async def test_postgres_writes_over_the_caps_are_rolled_back(pg_small_shared, sql: str) -> None:
    pg_small = pg_small_shared
    before = pg_small.snapshot()
    r = await pg_small.reach.invoke("sql_execute", {"sql": sql.format(t=pg_small.table)})
    assert not r.ok, (sql, r.content)
    assert r.error.code == "execution_failed", r.error
    assert "max_write" in r.error.message, r.error.message
    assert pg_small.snapshot() == before


async def test_postgres_ordinary_writes_pass_under_the_caps(pg_small) -> None:
    t = pg_small.table
    for sql, rows in [
        (f"UPDATE {t} SET owner = " + _AGG.format(n=1000) + " WHERE id = 1", 1),  # 32 KB, toasted
        (f"INSERT INTO {t} SELECT g, md5(g::text), g FROM generate_series(10, 1000) AS g", 991),
        (f"UPDATE {t} SET owner = repeat('x', 90000) WHERE id = 2", 1),
    ]:
        r = await pg_small.reach.invoke("sql_execute", {"sql": sql})
        assert r.ok, (sql, r.error)
        assert r.content["rows_changed"] == rows


# -- the pooled PostgreSQL connection after a failed or refused write ---------------------

SEQUENCES = [
    # a failed write (the server's error), then honest writes: the second of them failed with
    # 'prepared statement "_pg3_4" does not exist' (psycopg kept names DISCARD ALL had dropped)
    ["UPDATE {t} SET nosuch = 1 WHERE id = 1", "UPDATE {t} SET owner = 'q' WHERE id = 1",
     "UPDATE {t} SET owner = 'q' WHERE id = 1", "UPDATE {t} SET owner = 'r' WHERE id = 2"],
    ["INSERT INTO {t} VALUES (1, 'dup', 1)", "INSERT INTO {t} VALUES (7, 'a', 1)",
     "DELETE FROM {t} WHERE id = 7", "INSERT INTO {t} VALUES (7, 'a', 1)", "DELETE FROM {t} WHERE id = 7"],
    # refused after running (every row, sizes), then the same and other statements again
    ["DELETE FROM {t} WHERE id = id", "UPDATE {t} SET owner = 'q' WHERE id = 1",
     "UPDATE {t} SET owner = 'q' WHERE id = 1", "DELETE FROM {t} WHERE id = id",
     "UPDATE {t} SET owner = 'q' WHERE id = 1"],
    ["UPDATE {t} SET owner = repeat('x', 20000000) WHERE id = 1", "UPDATE {t} SET owner = 'q' WHERE id = 1",
     "UPDATE {t} SET owner = 'q' WHERE id = 1", "UPDATE {t} SET owner = repeat('x', 20000000) WHERE id = 1",
     "UPDATE {t} SET owner = 'q' WHERE id = 1", "UPDATE {t} SET owner = 'q' WHERE id = 1"],
    ["SELEC 1", "UPDATE {t} SET owner = 'q' WHERE id = 1", "UPDATE {t} SET owner = 'q' WHERE id = 1"],
    ["UPDATE {t} SET owner = 'q' WHERE id = 1 / 0", "UPDATE {t} SET owner = 'q' WHERE id = 1",
     "UPDATE {t} SET owner = 'q' WHERE id = 1", "UPDATE {t} SET owner = 'q' WHERE id = 1 / 0",
     "UPDATE {t} SET owner = 'q' WHERE id = 1", "UPDATE {t} SET owner = 'q' WHERE id = 1"],
]


@pytest.mark.parametrize("sequence", SEQUENCES)
async def test_honest_writes_after_a_failed_one_still_run(postgresql_backend, sequence: list[str]) -> None:
    honest = {"UPDATE {t} SET owner = 'q' WHERE id = 1", "UPDATE {t} SET owner = 'r' WHERE id = 2",
              "INSERT INTO {t} VALUES (7, 'a', 1)", "DELETE FROM {t} WHERE id = 7"}
    for sql in sequence:
        r = await postgresql_backend.reach.invoke("sql_execute", {"sql": sql.format(t=postgresql_backend.table)})
        if sql in honest:
            assert r.ok, (sql, r.error)
        else:
            assert not r.ok and "prepared statement" not in r.error.message, (sql, r.error)
