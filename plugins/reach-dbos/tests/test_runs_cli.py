"""``reach runs list|show|resume|cancel [--json]`` and cancelling a run between steps."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from dbos import DBOS
from reach_openai.scripted import Answer, Call, ScriptedModelServer, ToolCalls

from reach_core.cli import cli


def _config(tmp_path: Path, pg_url: str, schema: str, model_url: str, extra: str = "") -> Path:
    path = tmp_path / "reach.toml"
    path.write_text(
        f'[reach]\ndata_dir = "{tmp_path / "data"}"\n'
        f'[plugins]\nload = ["reach-openai", "reach-dbos"]\n'
        f'[plugins.reach-openai]\nbase_url = "{model_url}"\napi_key = "k"\nmodel = "m"\nmax_retries = 0\n'
        f'[plugins.reach-dbos]\ndatabase_url = "{pg_url}"\nschema = "{schema}"\npoll_interval = 0.05\n' + extra
    )
    return path


def _cli(config: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--config", str(config), "runs", *args], catch_exceptions=False)
    return result


async def test_cancel_stops_a_run_between_steps_and_resume_continues_it(
    tmp_path: Path, pg_url: str, session_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reach_dbos.plugin
    import reach_openai.plugin
    from test_durable import Credit

    from reach_core import Reach

    cancel_recorded = threading.Event()

    def second_turn(_context: object) -> list[Call]:
        # The model's second answer waits until the cancel is recorded (not a fixed delay:
        # under load the CLI calls below took longer than any delay and the tools ran).
        cancel_recorded.wait(60)
        return [Call("add_credit", {"amount": 7})]

    script = [ToolCalls([Call("add_credit", {"amount": 5})]),
              ToolCalls(second_turn),
              Answer("credited {add_credit[credited]}")]
    with ScriptedModelServer(script) as server:
        config = _config(tmp_path, pg_url, session_schema, server.url)
        reach = Reach(str(config), plugins=[("reach-openai", reach_openai.plugin), ("reach-dbos", reach_dbos.plugin)])
        credit = Credit()
        reach.register(credit)
        task = asyncio.create_task(reach.run("credit please", durable=True, run_id="run_cancel_me"))
        while len(server.requests) < 2:  # noqa: ASYNC110 - the second model call is under way
            await asyncio.sleep(0.02)
        shown = await asyncio.to_thread(_cli, config, "show", "run_cancel_me", "--json")
        assert shown.exit_code == 0, shown.output
        row = json.loads(shown.output)
        assert row["status"] == "PENDING" and row["question"] == "credit please"
        assert [s["kind"] for s in row["steps"]][:2] == ["reach.model", "reach.tools"]
        assert row["tokens"]["total_tokens"] > 0

        cancelled = await asyncio.to_thread(_cli, config, "cancel", "run_cancel_me", "--json")
        assert cancelled.exit_code == 0 and json.loads(cancelled.output)["cancelled"] is True
        cancel_recorded.set()
        result = await task
        assert result.outcome == "cancelled" and "reach runs resume run_cancel_me" in result.error
        assert len(credit.keys) == 1  # the second turn of tools never started
        listed = json.loads((await asyncio.to_thread(_cli, config, "list", "--status", "CANCELLED", "--json")).output)
        assert "run_cancel_me" in [r["run_id"] for r in listed]

        # resumed in this process: the recorded steps are replayed, the rest runs once
        await DBOS.resume_workflow_async("run_cancel_me")
        from reach_dbos.runner import wait_for

        done = await wait_for("run_cancel_me", wait=60)
        assert done.outcome == "answered" and done.text == "credited 7"
        assert len(credit.keys) == 2 and len(set(credit.keys)) == 2
        assert (await DBOS.get_workflow_status_async("run_cancel_me")).status == "SUCCESS"
        await reach.aclose()


async def test_show_and_list_give_the_tokens_and_cost_so_far_from_the_checkpointed_model_steps(
    tmp_path: Path, pg_url: str, session_schema: str
) -> None:
    import reach_dbos.plugin
    import reach_openai.plugin
    from reach_dbos.settings import Price
    from test_durable import SCRIPT, Credit

    from reach_core import Reach

    prices = '[plugins.reach-dbos.prices.m]\nprompt = 2.5\ncompletion = 10.0\ncached = 1.25\n'
    with ScriptedModelServer(list(SCRIPT)) as server:
        config = _config(tmp_path, pg_url, session_schema, server.url, prices)
        reach = Reach(str(config), plugins=[("reach-openai", reach_openai.plugin), ("reach-dbos", reach_dbos.plugin)])
        reach.register(Credit())
        # the same question twice: the scripted server's prompt cache serves part of the second run's prompts
        first = await reach.run("credit me", durable=True, run_id="run_cost_1")
        server.script = list(SCRIPT)
        second = await reach.run("credit me", durable=True, run_id="run_cost_2")
        await reach.aclose()
    for result in (first, second):
        assert result.outcome == "answered", result.error
        usage = result.usage.to_dict()
        assert usage["total_tokens"] > 0
        shown = json.loads((await asyncio.to_thread(_cli, config, "show", result.run_id, "--json")).output)
        assert shown["tokens"] == usage  # the model server's own counts, step by step, summed
        assert shown["tokens_by_model"] == {"m": usage}
        expected = Price(prompt=2.5, completion=10.0, cached=1.25).cost(usage)
        assert shown["cost"] == pytest.approx(expected, abs=1e-6) and shown["cost"] > 0
        assert [s.get("model") for s in shown["steps"] if s["kind"] == "reach.model"] == ["m", "m", "m"]
        text = (await asyncio.to_thread(_cli, config, "show", result.run_id)).output
        assert f"tokens so far: {usage['total_tokens']} " in text and f"cost so far: {expected:.4f}" in text
    assert second.usage.cached_tokens > 0  # the cached price took part
    listed = {r["run_id"]: r for r in json.loads((await asyncio.to_thread(_cli, config, "list", "--json")).output)}
    assert listed["run_cost_1"]["tokens"] == first.usage.to_dict() and listed["run_cost_1"]["cost"] > 0
    # without a price for the model, no cost is made up: the model is named instead
    unpriced = _config(tmp_path, pg_url, session_schema, "http://127.0.0.1:9/v1")
    shown = json.loads((await asyncio.to_thread(_cli, unpriced, "show", "run_cost_1", "--json")).output)
    assert shown["cost"] is None and shown["unpriced_models"] == ["m"] and shown["tokens"] == first.usage.to_dict()
    assert "no price for m" in (await asyncio.to_thread(_cli, unpriced, "show", "run_cost_1")).output


def test_unknown_run_ids_and_empty_lists_say_what_to_do(tmp_path: Path, pg_url: str, session_schema: str) -> None:
    config = _config(tmp_path, pg_url, session_schema, "http://127.0.0.1:9/v1")
    for cmd in ("show", "cancel"):
        out = _cli(config, cmd, "run_that_never_was")
        assert out.exit_code != 0 and "reach runs list" in out.output
    listed = _cli(config, "list", "--status", "ERROR")
    assert listed.exit_code == 0 and "no durable runs with status ERROR" in listed.output
    assert json.loads(_cli(config, "list", "--status", "error", "--json").output) == []


def test_resume_takes_a_run_or_a_stopped_instance_not_both(tmp_path: Path, pg_url: str, session_schema: str) -> None:
    config = _config(tmp_path, pg_url, session_schema, "http://127.0.0.1:9/v1")
    for args in (["resume"], ["resume", "run_x", "--executor", "pod-a"]):
        out = _cli(config, *args)
        assert out.exit_code != 0 and "--executor NAME" in out.output, out.output


def test_runs_without_a_database_names_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REACH_DBOS_DATABASE_URL", raising=False)
    path = tmp_path / "reach.toml"
    path.write_text(f'[reach]\ndata_dir = "{tmp_path}"\n[plugins]\nload = ["reach-dbos"]\n')
    out = _cli(path, "list")
    assert out.exit_code != 0 and "database_url" in out.output


@pytest.mark.parametrize("run_id", [
    "' OR '1'='1", "run_x'; DROP TABLE workflow_status; --", "%", "_", "run_%", "\u202erun", "运行_1",
    "run\u0000x", " run_cancel_me", "RUN_CANCEL_ME", "run_cancel_me\n", "a" * 2000,
])
def test_hostile_run_ids_find_nothing_and_touch_nothing(tmp_path: Path, pg_url: str, session_schema: str,
                                                         run_id: str) -> None:
    config = _config(tmp_path, pg_url, session_schema, "http://127.0.0.1:9/v1")
    for cmd in ("show", "cancel"):
        out = _cli(config, cmd, run_id)
        assert out.exit_code != 0 and "no durable run" in out.output, out.output
    statuses = {r["run_id"]: r["status"] for r in json.loads(_cli(config, "list", "--json").output)}
    assert all(s != "CANCELLED" or rid == "run_cancel_me" for rid, s in statuses.items())


@pytest.mark.parametrize(("runner", "ok"), [("reach-dbos", True), ("reach-dbs", False), ("dbos", False),
                                            ("reach-dbos ", False)])
def test_reach_config_check_knows_the_runner_strategy(tmp_path: Path, runner: str, ok: bool) -> None:
    path = tmp_path / "reach.toml"
    path.write_text(f'[strategies]\nrunner = "{runner}"\n')
    out = CliRunner().invoke(cli, ["--config", str(path), "config", "check"], catch_exceptions=False)
    assert (out.exit_code == 0) is ok, out.output
    if not ok:
        assert "runner" in out.output
