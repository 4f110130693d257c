"""`reach tools --query ... --explain`: scores per signal."""

from __future__ import annotations

import json

from click.testing import CliRunner
from conftest import names


def test_explain_rows_show_every_signal(reach):
    selector = reach.provider("selector")
    tools = reach.all_tools()
    rows = selector.explain("convert 100 USD to EUR", tools, _ctx(reach), 3)
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert rows[0]["name"] == "convert_currency"
    assert {"score", "bm25", "embedding", "tags", "bm25_raw", "cosine", "tag_hits"} <= set(rows[0])
    assert rows[0]["score"] >= rows[1]["score"]
    assert rows[0]["bm25_raw"] > 0
    # the ranking explained is the ranking selected
    assert [r["name"] for r in rows] == names(reach.tools(query="convert 100 USD to EUR", limit=3))


def test_cli_explain(tmp_path, monkeypatch):
    from reach_core.cli import cli

    config = tmp_path / "reach.toml"
    config.write_text(
        f'[reach]\ndata_dir = "{tmp_path / "data"}"\n'
        '[plugins]\nload = ["reach-preselect"]\n'
    )
    monkeypatch.setenv("REACH_CONFIG", str(config))
    result = CliRunner().invoke(cli, ["tools", "--query", "find tools about weather", "--explain", "--json",
                                      "--limit", "1"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert rows[0]["name"] == "find_tools"
    assert "bm25" in rows[0] and "embedding" in rows[0]


def _ctx(reach):
    from reach_core.context import CallContext

    return CallContext(reach, None, agent="default", run_id=None, call_id="", trace_id="", query=None)
