"""sql_execute and sql_admin: what changes, what is refused, how it maps to tiers."""

from __future__ import annotations


async def test_update_with_where_changes_one_row(backend) -> None:
    t = backend.table
    r = await backend.reach.invoke(
        "sql_execute", {"sql": f"UPDATE {t} SET owner = :o WHERE id = :id", "params": {"o": "王芳", "id": 2}}
    )
    assert r.ok, r.error
    assert r.content == {"rows_changed": 1}
    assert backend.owner_exec(f"SELECT owner FROM {t} WHERE id = 2") == [("王芳",)]


async def test_insert_returning_gives_rows(backend) -> None:
    t = backend.table
    r = await backend.reach.invoke(
        "sql_execute", {"sql": f"INSERT INTO {t} (id, owner, balance) VALUES (7, 'dee', 5) RETURNING id, owner"}
    )
    assert r.ok, r.error
    assert r.content["columns"] == ["id", "owner"] and r.content["rows"] == [[7, "dee"]]
    assert backend.owner_exec(f"SELECT count(*) FROM {t}") == [(4,)]


async def test_delete_without_where_is_refused_with_the_way_out(backend) -> None:
    before = backend.snapshot()
    r = await backend.reach.invoke("sql_execute", {"sql": f"DELETE FROM {backend.table}"})
    assert not r.ok and r.error.code == "execution_failed"
    assert "without a WHERE clause" in r.error.message and "sql_admin" in r.error.message
    assert backend.snapshot() == before


async def test_failed_statement_changes_nothing(backend) -> None:
    before = backend.snapshot()
    r = await backend.reach.invoke(
        "sql_execute", {"sql": f"INSERT INTO {backend.table} (id, owner) VALUES (1, 'dup')"}
    )
    assert not r.ok and r.error.code == "execution_failed"
    assert backend.snapshot() == before


async def test_admin_tool_is_dangerous_and_needs_confirmation(backend) -> None:
    tool = backend.reach.get("sql_admin")
    assert tool.risk == "dangerous"
    before = backend.snapshot()
    r = await backend.reach.invoke("sql_admin", {"sql": f"DROP TABLE {backend.table}"})
    assert not r.ok and r.error.code in ("needs_confirmation", "denied")
    assert backend.snapshot() == before


async def test_admin_tool_runs_ddl_when_the_agent_allows_dangerous(tmp_path) -> None:
    path = tmp_path / "x.sqlite3"
    config = {
        "reach": {"data_dir": str(tmp_path / "data")},
        "plugins": {"reach-sql": {"url": f"sqlite:///{path}", "admin_tool": True}},
        "agents": {"ops": {"auto_tier": "dangerous"}},
    }
    import reach_sql.plugin

    from reach_core import Reach

    reach = Reach(config, plugins=[("reach-sql", reach_sql.plugin)])
    r = await reach.invoke("sql_admin", {"sql": "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"}, agent="ops")
    assert r.ok, r.error
    schema = await reach.invoke("sql_schema", {})
    assert [t["name"] for t in schema.content["tables"]] == ["notes"]


async def test_admin_tool_absent_by_default(tmp_path, sql_reach) -> None:
    reach = sql_reach(tmp_path)
    names = [t["function"]["name"] for t in reach.tools()]
    assert names == ["sql_schema", "sql_query", "sql_execute"] or sorted(names) == [
        "sql_execute",
        "sql_query",
        "sql_schema",
    ]
