"""The offline demo end to end: local weather service, scripted model, real SDK, real notes file."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from reach_openai.demo import PLANS, run_demo


@pytest.fixture(autouse=True)
def offline_env(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


async def test_demo_in_english(tmp_path):
    steps = []
    report = await run_demo("run", "en", data_dir=tmp_path, on_step=steps.append)
    result = report.result
    assert report.scripted
    assert result.outcome == "answered", result.error
    # both tools asked for in one turn and run together
    first = result.steps[0]
    assert [c["function"]["name"] for c in first.tool_calls] == ["get_weather", "append_note"]
    assert [r.ok for r in first.results] == [True, True]
    assert len(result.steps) == 2 and [s.index for s in steps] == [1, 2]
    # the answer quotes what the weather service returned
    for value in ("21 °C", "45 %", "clear"):
        assert value in result.text
    assert result.text.startswith("Yes, today is good for a run in Beijing")
    # the plan is in the notes file of the demo's data dir
    notes = [json.loads(line) for line in report.notes()]
    assert report.notes_file.parent == tmp_path
    assert [n["content"] for n in notes] == [PLANS["en"]]


async def test_demo_in_chinese(tmp_path):
    report = await run_demo("run", "zh", data_dir=tmp_path)
    result = report.result
    assert result.outcome == "answered", result.error
    assert result.steps[0].tool_calls[0]["function"]["arguments"] == '{"city":"北京"}'
    for value in ("21 °C", "45 %", "晴", "适合跑步"):
        assert value in result.text
    assert "跑步计划" in report.notes_file.read_text(encoding="utf-8")


async def test_mofa_scenario_weather_and_calculator(tmp_path):
    report = await run_demo("mofa", "zh", data_dir=tmp_path)
    result = report.result
    assert result.outcome == "answered", result.error
    assert [r.name for r in result.results] == ["get_weather", "calculate"]
    assert result.results[1].content == {"expression": "25 * 4", "result": 100}
    assert "东京" in result.text and "25 * 4 = 100" in result.text
    assert result.results[0].content["temperature"] in result.text


def test_reach_demo_command_json(tmp_path):
    from reach_core.cli import cli

    out = CliRunner().invoke(cli, ["demo", "--json", "--data-dir", str(tmp_path / "d")])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["model"]["scripted"] is True
    assert data["run"]["outcome"] == "answered"
    assert "21 °C" in data["run"]["text"]
    assert len(data["notes"]) == 1


def test_reach_demo_command_says_a_scripted_model_answers(tmp_path):
    from reach_core.cli import cli

    out = CliRunner().invoke(
        cli, ["demo", "--scenario", "run", "--lang", "zh", "--data-dir", str(tmp_path / "d")]
    )
    assert out.exit_code == 0, out.output
    text = out.output
    assert "A scripted model is answering" in text
    for part in (
        "tools offered",
        "get_weather",
        "append_note",
        "valid",
        "in parallel",
        "21 °C",
        "晴",
    ):
        assert part in text


def test_reach_run_command_with_trace(tmp_path):
    from reach_openai.scripted import Answer, Call, ScriptedModelServer, ToolCalls

    from reach_core.cli import cli

    script = [
        ToolCalls([Call("append_note", {"content": "buy running shoes"})]),
        Answer("Saved as {append_note[id]}."),
    ]
    with ScriptedModelServer(script) as server:
        config = tmp_path / "reach.toml"
        config.write_text(
            f"""
[reach]
data_dir = "{tmp_path / "data"}"
[plugins]
load = ["reach-openai", "reach-notes"]
[plugins.reach-openai]
base_url = "{server.url}"
model = "scripted"
max_retries = 0
""",
            encoding="utf-8",
        )
        out = CliRunner().invoke(
            cli, ["--config", str(config), "run", "note: buy running shoes", "--trace"]
        )
    assert out.exit_code == 0, out.output
    assert "append_note" in out.output and "Saved as n_" in out.output
    assert "buy running shoes" in (tmp_path / "data" / "notes.jsonl").read_text(encoding="utf-8")


def test_reach_run_command_reports_a_dead_endpoint(tmp_path):
    from reach_core.cli import cli

    config = tmp_path / "reach.toml"
    config.write_text(
        f"""
[reach]
data_dir = "{tmp_path / "data"}"
[plugins]
load = ["reach-openai"]
[plugins.reach-openai]
base_url = "http://127.0.0.1:9/v1"
max_retries = 0
""",
        encoding="utf-8",
    )
    out = CliRunner().invoke(cli, ["--config", str(config), "run", "hello"])
    assert out.exit_code == 1
    assert "http://127.0.0.1:9/v1" in out.output and "Traceback" not in out.output


async def test_demo_with_base_url_uses_that_model_instead(tmp_path):
    # any OpenAI-compatible endpoint: here a second scripted server stands in for Ollama/vLLM
    from reach_openai.demo import script_for
    from reach_openai.scripted import ScriptedModelServer

    with ScriptedModelServer(script_for("run", "en"), model="served-model") as server:
        report = await run_demo(
            "run", "en", base_url=server.url, model="llama3.1", data_dir=tmp_path
        )
        assert server.requests and server.requests[0]["model"] == "llama3.1"
    assert not report.scripted
    assert report.model == "llama3.1" and report.model_url == server.url
    assert report.result.outcome == "answered"
    assert "21 °C" in report.result.text


def test_reach_run_durable_without_a_runner_plugin_says_what_to_install(tmp_path):
    from reach_core.cli import cli

    config = tmp_path / "reach.toml"
    config.write_text(
        f"""
[reach]
data_dir = "{tmp_path / "data"}"
[plugins]
load = ["reach-openai"]
[plugins.reach-openai]
base_url = "http://127.0.0.1:9/v1"
max_retries = 0
""",
        encoding="utf-8",
    )
    out = CliRunner().invoke(cli, ["--config", str(config), "run", "hello", "--durable"])
    assert out.exit_code == 1
    assert "pip install reach-dbos" in out.output and "Traceback" not in out.output
