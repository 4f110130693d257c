"""sql_query as a model sees it: columns, rows, caps, explicit types, clear errors."""

from __future__ import annotations

import json

import pytest


async def test_rows_and_columns(backend) -> None:
    r = await backend.reach.invoke("sql_query", {"sql": f"SELECT id, owner FROM {backend.table} ORDER BY id"})
    assert r.ok, r.error
    assert r.content == {"columns": ["id", "owner"], "rows": [[1, "ada"], [2, "bob"], [3, "cyd"]]}


async def test_named_parameters_are_bound_not_spliced(backend) -> None:
    evil = "ada' OR '1'='1"
    sql = f"SELECT owner FROM {backend.table} WHERE owner = :who"
    r = await backend.reach.invoke("sql_query", {"sql": sql, "params": {"who": evil}})
    assert r.ok and r.content["rows"] == []
    r = await backend.reach.invoke("sql_query", {"sql": sql, "params": {"who": "bob"}})
    assert r.content["rows"] == [["bob"]]


async def test_cap_says_how_many_more_rows(backend) -> None:
    series = (
        "SELECT g FROM generate_series(1, 120) AS g"
        if backend.name == "postgresql"
        else "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < 120) SELECT g FROM s"
    )
    r = await backend.reach.invoke("sql_query", {"sql": series, "limit": 10})
    assert r.ok, r.error
    assert r.content["rows"] == [[i] for i in range(1, 11)]
    assert r.content["more_rows"] == 110
    assert "110 more rows not shown" in r.content["note"]
    r = await backend.reach.invoke("sql_query", {"sql": series})
    assert len(r.content["rows"]) == 50 and r.content["more_rows"] == 70


async def test_limit_above_the_maximum_is_an_argument_error(backend) -> None:
    r = await backend.reach.invoke("sql_query", {"sql": "SELECT 1", "limit": 100000})
    assert not r.ok and r.error.code == "invalid_arguments"


async def test_counting_hidden_rows_stops_at_the_cap(tmp_path, sql_reach) -> None:
    reach = sql_reach(tmp_path, {"count_more_rows_up_to": 2000})
    sql = "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < 100000) SELECT g FROM s"
    r = await reach.invoke("sql_query", {"sql": sql, "limit": 5})
    assert r.ok, r.error
    assert r.content["more_rows"] >= 2000 and "at least" in r.content["note"]


async def test_postgres_types_are_rendered_explicitly(postgresql_backend) -> None:
    sql = (
        "SELECT 12.30::numeric AS price, DATE '2024-05-01' AS day, "
        "TIMESTAMPTZ '2024-05-01 10:00:00+00' AS at, '\\x00ff10'::bytea AS blob, "
        "INTERVAL '90 seconds' AS wait, '北京'::text AS city, 'NaN'::float8 AS nan, "
        "ARRAY[1.5, 2.25]::numeric[] AS arr, '{\"a\": [1, 2]}'::jsonb AS doc, "
        "'5d2d6a2e-8f7b-4c1e-9d3f-7a9d8b5c6e4f'::uuid AS id"
    )
    r = await postgresql_backend.reach.invoke("sql_query", {"sql": sql})
    assert r.ok, r.error
    row = dict(zip(r.content["columns"], r.content["rows"][0], strict=True))
    assert row["price"] == "12.30"
    assert row["day"] == "2024-05-01"
    assert row["at"] == "2024-05-01T10:00:00+00:00"
    assert row["blob"] == {"bytes": 3, "hex": "00ff10", "truncated": False}
    assert row["wait"] == "PT90S"
    assert row["city"] == "北京"
    assert row["nan"] == "nan"
    assert row["arr"] == ["1.5", "2.25"]
    assert row["doc"] == {"a": [1, 2]}
    assert row["id"] == "5d2d6a2e-8f7b-4c1e-9d3f-7a9d8b5c6e4f"
    assert "北京" in r.to_message()["content"]  # ensure_ascii=False end to end


async def test_sqlite_blobs_and_long_text(sqlite_backend) -> None:
    r = await sqlite_backend.reach.invoke(
        "sql_query", {"sql": "SELECT zeroblob(100) AS blob, printf('%.*c', 2000, 'x') AS long"}
    )
    assert r.ok, r.error
    blob, long = r.content["rows"][0]
    assert blob == {"bytes": 100, "hex": "00" * 32, "truncated": True}
    assert long.startswith("x" * 500) and long.endswith("… [1500 more chars]")
    json.dumps(r.content)


async def test_slow_query_is_stopped_by_the_database(backend) -> None:
    sql = (
        "SELECT pg_sleep(10)"
        if backend.name == "postgresql"
        else "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s) SELECT count(*) FROM s"
    )
    r = await backend.reach.invoke("sql_query", {"sql": sql})
    assert not r.ok
    assert r.error.code == "timeout" and "longer than 1 s" in r.error.message
    ok = await backend.reach.invoke("sql_query", {"sql": "SELECT 1 AS one"})
    assert ok.ok  # the pooled connection is healthy afterwards


@pytest.mark.parametrize(
    ("sql", "params", "expected"),
    [
        ("SELECT * FROM no_such_table", None, "no_such_table"),
        ("SELECT owner FROM {t} WHERE id = :id", None, "id"),
        ("SELEC 1", None, "syntax error"),
    ],
)
async def test_errors_tell_the_model_what_was_wrong(backend, sql, params, expected) -> None:
    r = await backend.reach.invoke("sql_query", {"sql": sql.format(t=backend.table), "params": params or {}})
    assert not r.ok and r.error.code == "execution_failed"
    assert expected in r.error.message


async def test_default_database_is_a_file_in_the_data_dir(tmp_path, sql_reach) -> None:
    reach = sql_reach(tmp_path)
    r = await reach.invoke("sql_query", {"sql": "SELECT 1 AS one"})
    assert r.ok and r.content["rows"] == [[1]]
    assert (tmp_path / "reach-sql.sqlite3").exists()


async def test_unreachable_postgres_is_retryable(tmp_path) -> None:
    import reach_sql.plugin

    from reach_core import Reach

    config = {
        "reach": {"data_dir": str(tmp_path)},
        "plugins": {"reach-sql": {"url": "postgresql+psycopg://nobody:x@127.0.0.1:9/none"}},
        "connectors": {"sql_query": {"retries": 1}},
    }
    reach = Reach(config, plugins=[("reach-sql", reach_sql.plugin)])
    r = await reach.invoke("sql_query", {"sql": "SELECT 1"})
    assert not r.ok and r.error.code == "upstream_unavailable"
    assert r.meta["attempts"] == 2  # a read is idempotent, so the core retried it


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1 AS one;", [[1]]),  # models often end with a semicolon
        ("SELECT 1 AS one; -- done\n", [[1]]),
        ("SELECT '50%' AS pct", [["50%"]]),  # percent signs survive pyformat drivers
        ("SELECT '10:30' AS t", [["10:30"]]),  # a colon inside a string is not a placeholder
        ("SELECT CAST('5' AS integer) AS n", [[5]]),
    ],
)
async def test_everyday_sql_shapes(backend, sql: str, expected: list) -> None:
    r = await backend.reach.invoke("sql_query", {"sql": sql})
    assert r.ok, r.error
    assert r.content["rows"] == expected
