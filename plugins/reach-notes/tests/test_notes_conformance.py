"""The core's conformance checks, and the declarations a model relies on."""

from __future__ import annotations

import reach_notes.plugin as plugin

from reach_core.testing import ConnectorConformance

VOCABULARY = {"data_processing", "external_api", "file_system", "database", "computation", "communication"}


class TestNotesConformance(ConnectorConformance):
    plugin = "reach-notes"

    def example_calls(self):
        return [
            ("append_note", {"content": "跑步计划：周六 5 公里", "tags": ["running"]}),
            ("list_notes", {"limit": 5}),
            ("search_notes", {"query": "跑步"}),
        ]


def test_risks_tags_and_lint(tmp_path):
    from reach_core.lint import lint_tool
    from reach_core.testing import make_reach

    reach = make_reach(plugin, data_dir=tmp_path)
    tools = {t.name: t for t in reach.all_tools()}
    assert {n: t.risk for n, t in tools.items()} == {
        "append_note": "write",
        "list_notes": "read",
        "search_notes": "read",
    }
    assert tools["append_note"].idempotent is False
    assert all(set(t.tags) <= VOCABULARY for t in tools.values())
    assert {n: [p.message for p in lint_tool(t)] for n, t in tools.items()} == {n: [] for n in tools}


async def test_read_only_agent_cannot_append(tmp_path):
    from reach_core.testing import make_reach

    reach = make_reach(plugin, data_dir=tmp_path, config={"agents": {"reader": {"max_tier": "read"}}})
    result = await reach.invoke("append_note", {"content": "x"}, agent="reader")
    assert not result.ok
    assert not (tmp_path / "notes.jsonl").exists()
    listed = await reach.invoke("list_notes", {}, agent="reader")
    assert listed.ok
    await reach.aclose()
