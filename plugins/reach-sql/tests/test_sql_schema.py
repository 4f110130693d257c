"""sql_schema: what a model needs to write its first query."""

from __future__ import annotations

import pytest


async def test_describes_columns_keys_and_row_counts(backend) -> None:
    r = await backend.reach.invoke("sql_schema", {"table": backend.table})
    assert r.ok, r.error
    (table,) = r.content["tables"]
    assert table["name"] == backend.table and table["rows"] == 3
    cols = {c["name"]: c for c in table["columns"]}
    assert cols["id"]["primary_key"] is True
    assert cols["owner"]["nullable"] is False
    assert r.content["dialect"] == backend.name


async def test_lists_tables_and_foreign_keys(sqlite_backend) -> None:
    sqlite_backend.owner_exec(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, account_id INTEGER REFERENCES accounts(id))"
    )
    sqlite_backend.owner_exec("CREATE VIEW rich AS SELECT * FROM accounts WHERE balance > 10")
    r = await sqlite_backend.reach.invoke("sql_schema", {})
    assert r.ok, r.error
    names = [t["name"] for t in r.content["tables"]]
    assert names == ["accounts", "orders"]
    assert r.content["tables"][1]["foreign_keys"] == [{"columns": ["account_id"], "references": "accounts(id)"}]
    assert r.content["views"] == ["rich"]


async def test_unknown_table_names_the_known_ones(sqlite_backend) -> None:
    r = await sqlite_backend.reach.invoke("sql_schema", {"table": "acounts"})
    assert not r.ok and "accounts" in r.error.message


def test_in_memory_sqlite_is_a_config_error(tmp_path, sql_reach) -> None:
    from reach_core import ConfigError

    with pytest.raises(ConfigError, match="SQLite file"):
        sql_reach(tmp_path, {"url": "sqlite://"})
