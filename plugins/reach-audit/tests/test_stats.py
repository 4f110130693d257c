"""The figures to steer by: per tool, per agent, offered→called, tokens."""

from __future__ import annotations

import json
import time

import pytest
import reach_audit
from reach_audit.stats import parse_since

from reach_core.adapter import ModelRequest, ModelResponse, ModelToolCall, Usage


class ScriptedModel:
    """A model that calls ``add`` once, then answers; reports token usage like a real API."""

    name = "scripted"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def describe(self) -> str:
        return "scripted test model"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if request.step == 1:
            return ModelResponse(
                tool_calls=[ModelToolCall(id="m1", name="add", arguments=json.dumps({"a": 20, "b": 22}))],
                usage=Usage(prompt_tokens=100, completion_tokens=20),
            )
        return ModelResponse(text="42", usage=Usage(prompt_tokens=150, completion_tokens=5))


async def test_per_tool_and_per_agent_figures(make_reach):
    reach = make_reach()
    for i in range(19):
        await reach.invoke("add", {"a": i, "b": 1}, agent="alpha")
    await reach.invoke("refuse", {"reason": "no"}, agent="beta")
    await reach.invoke("refuse", {"reason": "no"}, agent="beta")
    await reach.invoke("nope", {}, agent="beta")
    figures = await reach_audit.stats(reach, since="1h")
    assert figures.calls == 22
    add, refuse = figures.tools["add"], figures.tools["refuse"]
    assert (add.calls, add.ok, add.success_rate) == (19, 19, 1.0)
    assert add.p50_ms is not None and add.p95_ms >= add.p50_ms
    assert refuse.success_rate == 0.0 and refuse.errors == {"execution_failed": 2}
    assert figures.tools["nope"].errors == {"unknown_tool": 1}
    assert figures.agents["alpha"].calls == 19
    assert figures.agents["beta"].errors == {"execution_failed": 2, "unknown_tool": 1}
    rates = await reach_audit.success_rates(reach, since="1h")
    assert rates["add"] == 1.0 and rates["refuse"] == 0.0
    assert (await reach_audit.success_rates(reach, since="1h", min_calls=3)) == {"add": 1.0}


async def test_offered_called_rates_and_tokens_from_agent_runs(make_reach):
    reach = make_reach()
    model = ScriptedModel()
    result = await reach.run("what is 20 + 22?", agent="planner", adapter=model)
    assert result.text == "42"
    offered = set(result.steps[0].tools_offered)
    figures = await reach_audit.stats(reach, since="1h")
    planner = figures.agents["planner"]
    assert planner.steps == 2
    assert planner.tokens == {"prompt": 250, "completion": 25, "total": 275}
    assert figures.tokens["total"] == 275
    add = figures.tools["add"]
    assert (add.offered, add.chosen, add.offered_called_rate) == (2, 1, 0.5)
    assert set(figures.never_chosen) == offered - {"add"}
    assert planner.calls == 1  # the call the run made is attributed to its agent
    rows = figures.to_dict()
    assert rows["tools"]["add"]["offered_called_rate"] == 0.5
    assert "tokens" not in rows["tools"]["add"] and "offered" not in rows["agents"]["planner"]


async def test_the_window_excludes_older_records(make_reach):
    reach = make_reach()
    await reach.invoke("add", {"a": 1, "b": 1})
    figures = await reach_audit.stats(reach, since=time.time() + 60)
    assert figures.calls == 0 and figures.success_rate is None


def test_since_accepts_durations_dates_and_rejects_nonsense():
    now = 1_000_000.0
    assert parse_since("15m", now=now) == now - 900
    assert parse_since("2h", now=now) == now - 7200
    assert parse_since("7d", now=now) == now - 7 * 86400
    assert parse_since("all") is None
    assert parse_since("2026-05-01T00:00:00+00:00") == 1777593600.0
    with pytest.raises(ValueError, match="must look like"):
        parse_since("yesterday-ish")
