"""Delegation: a child run never gets more than its parent, cannot recurse, and
shares the parent's budget, deadline and cancellation.

The model is an in-process stand-in that answers by script (one script per
task text, so parallel children each follow their own); tools, pipeline,
policy and guard rails are the real ones.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from reach_core import ConfigError, NeedsConfirmation, connector, hookimpl
from reach_core.adapter import ModelRequest, ModelResponse, ModelToolCall, Usage
from reach_core.result import ToolResult
from reach_core.testing import make_reach


def calls(*specs: tuple[str, dict[str, Any]]) -> ModelResponse:
    return ModelResponse(
        tool_calls=[ModelToolCall(f"c{i}", name, json.dumps(args)) for i, (name, args) in enumerate(specs)],
        usage=Usage(10, 1, 5),
    )


def answer(text: str) -> ModelResponse:
    return ModelResponse(text=text, usage=Usage(10, 1, 5))


def echo_tool_results(request: ModelRequest) -> ModelResponse:
    """Answer with the contents of the tool messages of the last turn."""
    tool_msgs = []
    for m in reversed(request.messages):
        if m.get("role") != "tool":
            break
        tool_msgs.append(m["content"])
    return answer(" | ".join(reversed(tool_msgs)))


class Router:
    """A stand-in model: the script is chosen by the run's first user message,
    the reply by how many times the model already answered in that run."""

    name = "router"

    def __init__(self, scripts: dict[str, list[Any]]) -> None:
        self.scripts = scripts
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        task = next(m["content"] for m in request.messages if m["role"] == "user")
        script = self.scripts[task]
        done = sum(1 for m in request.messages if m["role"] == "assistant")
        reply = script[min(done, len(script) - 1)]
        return reply(request) if callable(reply) else reply

    def offered(self, task: str) -> list[list[str]]:
        return [
            [t["function"]["name"] for t in r.tools]
            for r in self.requests
            if next(m["content"] for m in r.messages if m["role"] == "user") == task
        ]


class Audit:
    """A local plugin standing in for audit: what ran, in which run, for whom."""

    REACH_PLUGIN_NAME = "test-audit"

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: ToolResult, ctx: Any) -> None:
        self.rows.append({
            "tool": call.name, "agent": ctx.agent, "run_id": ctx.run_id, "parent_run_id": ctx.parent_run_id,
            "ok": result.ok, "code": result.error.code if result.error else None,
        })


class Confirmer:
    """Asks for a person (never granted here): what reach-confirm does, minus the queue."""

    REACH_PLUGIN_NAME = "test-confirm"
    REACH_HOOK_PRIORITY = {"reach_pre_invoke": 50}

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Any, ctx: Any) -> None:
        if ctx.needs_confirmation and not ctx.approved:
            raise NeedsConfirmation(f"{tool.name} {json.dumps(call.arguments)}", confirmation_id="conf-1")


AGENTS = {
    "main": {"allow": ["lookup", "slow"], "delegates": ["researcher"]},
    # the researcher may send mail and delegate further; its parent may do neither
    "researcher": {"allow": ["lookup", "send_email", "slow"], "delegates": ["helper"]},
    "helper": {"allow": ["lookup"]},
    "plain": {"allow": ["lookup"]},
}


@pytest.fixture
def ran() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def audit() -> Audit:
    return Audit()


def build(tmp_path, ran, *plugins: Any, agents: dict[str, Any] | None = None, **reach_cfg: Any):
    r = make_reach(*plugins, config={"agents": agents or AGENTS, "reach": reach_cfg}, data_dir=tmp_path / "data")

    @connector(risk="read")
    async def lookup(q: str, ctx=None) -> str:
        """Look something up.

        Args:
            q: what
        """
        ran.append({"tool": "lookup", "q": q, "agent": ctx.agent, "run_id": ctx.run_id})
        return f"facts about {q}"

    @connector(risk="write")
    async def send_email(to: str, ctx=None) -> str:
        """Send an email.

        Args:
            to: address
        """
        ran.append({"tool": "send_email", "to": to, "agent": ctx.agent})
        return "sent"

    @connector(risk="read", timeout=30)
    async def slow(seconds: float, ctx=None) -> str:
        """Wait, then answer.

        Args:
            seconds: how long
        """
        entry = {"tool": "slow", "agent": ctx.agent, "started": time.perf_counter(), "outcome": "running"}
        ran.append(entry)
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            entry["outcome"] = "cancelled"
            raise
        entry["outcome"] = "done"
        return f"waited {seconds}"

    for c in (lookup, send_email, slow):
        r.register(c)
    return r


async def test_a_child_cannot_call_a_tool_its_parent_may_not(tmp_path, ran, audit):
    r = build(tmp_path, ran, audit)
    model = Router({
        "Who is Ada?": [calls(("delegate", {"task": "Research Ada", "agent": "researcher"})), echo_tool_results],
        # the child model asks for a tool its parent may not use, and for one it may
        "Research Ada": [calls(("send_email", {"to": "boss@example.com"}), ("lookup", {"q": "Ada"})),
                         answer("Ada Lovelace wrote the first program")],
    })
    result = await r.run("Who is Ada?", agent="main", adapter=model)

    assert result.outcome == "answered"
    assert result.text == "Ada Lovelace wrote the first program"
    # the parent was offered delegate (naming only its delegates); the child only the intersection
    parent_decl = next(t for t in model.requests[0].tools if t["function"]["name"] == "delegate")
    assert parent_decl["function"]["parameters"]["properties"]["agent"]["enum"] == ["researcher"]
    assert model.offered("Research Ada") == [["lookup", "slow"], ["lookup", "slow"]]
    # send_email never ran; the child's model was told it is not available
    assert [x["tool"] for x in ran] == ["lookup"]
    refused = next(row for row in audit.rows if row["tool"] == "send_email")
    assert refused["code"] == "unknown_tool" and refused["agent"] == "researcher"


async def test_a_child_needs_approval_wherever_its_parent_would(tmp_path, ran, audit):
    agents = {
        # main may send mail, but only with a person's approval (auto_tier read)
        "main": {"allow": ["lookup", "send_email"], "auto_tier": "read", "delegates": ["researcher"]},
        # the researcher would send mail unattended, which its parent may not
        "researcher": {"allow": ["lookup", "send_email"], "auto_tier": "dangerous"},
    }
    r = build(tmp_path, ran, audit, Confirmer(), agents=agents)
    model = Router({
        "Mail the report": [calls(("delegate", {"task": "Send the report to boss", "agent": "researcher"})),
                            echo_tool_results],
        "Send the report to boss": [calls(("send_email", {"to": "boss@example.com"})), answer("done")],
    })
    result = await r.run("Mail the report", agent="main", adapter=model)

    assert ran == [], "nothing was sent without the parent's person"
    delegate_result = result.steps[0].results[0]
    assert delegate_result.error is not None and delegate_result.error.code == "needs_confirmation"
    assert delegate_result.meta["confirmation_id"] == "conf-1"
    assert "approval" in delegate_result.error.message
    # the child stopped at once: its model was not asked again after the confirmation request
    assert len(model.offered("Send the report to boss")) == 1


async def test_no_recursion_even_when_the_model_asks(tmp_path, ran, audit):
    r = build(tmp_path, ran, audit)
    model = Router({
        "Q": [calls(("delegate", {"task": "Sub", "agent": "researcher"})), echo_tool_results],
        # the researcher names a delegate of its own, and its model tries to use it
        "Sub": [calls(("delegate", {"task": "Subsub", "agent": "helper"})), echo_tool_results],
        "Subsub": [answer("should never run")],
    })
    result = await r.run("Q", agent="main", adapter=model)

    assert result.outcome == "answered"
    assert model.offered("Subsub") == [], "no grandchild run was started"
    assert all("delegate" not in names for names in model.offered("Sub"))
    inner = next(row for row in audit.rows if row["tool"] == "delegate" and row["agent"] == "researcher")
    assert inner["code"] == "unknown_tool"


async def test_depth_is_configurable_up_to_a_hard_cap(tmp_path, ran, audit):
    agents = {**AGENTS, "main": {"allow": ["lookup", "slow", "send_email"], "delegates": ["researcher"]}}
    r = build(tmp_path, ran, audit, agents=agents, max_delegation_depth=2)
    model = Router({
        "Q": [calls(("delegate", {"task": "Sub", "agent": "researcher"})), echo_tool_results],
        "Sub": [calls(("delegate", {"task": "Subsub", "agent": "helper"})), echo_tool_results],
        "Subsub": [calls(("lookup", {"q": "deep"})), answer("deep answer")],
    })
    result = await r.run("Q", agent="main", adapter=model)
    assert result.outcome == "answered"
    assert "deep answer" in result.text
    sub_offer = model.offered("Sub")[0]
    assert "delegate" in sub_offer
    # the grandchild: helper's tools ∩ researcher's ∩ main's, and no further delegation
    assert model.offered("Subsub")[0] == ["lookup"]
    lookups = [x for x in ran if x["tool"] == "lookup"]
    assert lookups[0]["agent"] == "helper"

    for bad in (0, 4, "2"):
        with pytest.raises(ConfigError, match="max_delegation_depth"):
            build(tmp_path, ran, agents=AGENTS, max_delegation_depth=bad)


async def test_delegate_is_offered_only_to_agents_that_name_delegates(tmp_path, ran, audit):
    r = build(tmp_path, ran, audit)
    assert "delegate" in [t["function"]["name"] for t in r.tools(agent="main")]
    assert "delegate" not in [t["function"]["name"] for t in r.tools(agent="plain")]
    assert "delegate" not in [t["function"]["name"] for t in r.tools()]
    refused = await r.invoke("delegate", {"task": "x", "agent": "researcher"}, agent="plain")
    assert refused.error is not None and refused.error.code == "denied"
    assert "delegates" in refused.meta["fix"]
    wrong = await r.invoke("delegate", {"task": "x", "agent": "helper"}, agent="main")
    assert wrong.error is not None and wrong.error.code == "invalid_arguments"
    assert "researcher" in wrong.error.message

    no_delegation = make_reach(config={"agents": {"a": {"allow": ["*"]}}}, data_dir=tmp_path / "d2")
    assert [t.name for t in no_delegation.all_tools()] == []
    with pytest.raises(ConfigError, match="no \\[agents.ghost\\]"):
        make_reach(config={"agents": {"a": {"delegates": ["ghost"]}}}, data_dir=tmp_path / "d3")


async def test_child_calls_are_audited_with_the_parent_run_id(tmp_path, ran, audit):
    r = build(tmp_path, ran, audit)
    model = Router({
        "Q": [calls(("delegate", {"task": "Sub", "agent": "researcher"})), echo_tool_results],
        "Sub": [calls(("lookup", {"q": "x"})), answer("ok")],
    })
    result = await r.run("Q", agent="main", adapter=model, run_id="run-parent")
    assert result.outcome == "answered"
    by_tool = {row["tool"]: row for row in audit.rows}
    assert by_tool["delegate"] == {"tool": "delegate", "agent": "main", "run_id": "run-parent",
                                   "parent_run_id": None, "ok": True, "code": None}
    child = by_tool["lookup"]
    assert child["parent_run_id"] == "run-parent" and child["agent"] == "researcher"
    assert child["run_id"] != "run-parent" and child["run_id"].startswith("run-parent/")


async def test_a_childs_calls_count_against_the_parents_budget(tmp_path, ran, audit):
    r = build(tmp_path, ran, audit, max_calls_per_run=3)
    model = Router({
        "Q": [calls(("delegate", {"task": "Sub", "agent": "researcher"})),
              calls(("lookup", {"q": "after"})), echo_tool_results],
        "Sub": [calls(("lookup", {"q": "a"}), ("lookup", {"q": "b"}), ("lookup", {"q": "c"})), answer("partial")],
    })
    result = await r.run("Q", agent="main", adapter=model, run_id="run-b")
    # delegate (1) + two child lookups (2, 3); the third child lookup and the parent's next call are refused
    child_codes = sorted(str(row["code"]) for row in audit.rows if row["agent"] == "researcher")
    assert child_codes == ["None", "None", "budget_exceeded"]
    assert len([x for x in ran if x["tool"] == "lookup"]) == 2
    after = result.steps[1].results[0]
    assert after.error is not None and after.error.code == "budget_exceeded"
    assert r.runtime.guards.runs.peek("run-b", "main").calls == 3


async def test_several_delegations_in_one_turn_run_in_parallel(tmp_path, ran, audit):
    r = build(tmp_path, ran, audit)
    model = Router({
        "Q": [calls(("delegate", {"task": "A", "agent": "researcher"}),
                    ("delegate", {"task": "B", "agent": "researcher"})), echo_tool_results],
        "A": [calls(("slow", {"seconds": 0.4})), answer("A done")],
        "B": [calls(("slow", {"seconds": 0.4})), answer("B done")],
    })
    t0 = time.perf_counter()
    result = await r.run("Q", agent="main", adapter=model)
    elapsed = time.perf_counter() - t0
    assert result.text == "A done | B done"
    assert elapsed < 0.75, f"two 0.4 s delegations took {elapsed:.2f} s"
    starts = [x["started"] for x in ran if x["tool"] == "slow"]
    assert abs(starts[0] - starts[1]) < 0.2


async def test_cancelling_the_parent_stops_the_child(tmp_path, ran, audit):
    r = build(tmp_path, ran, audit)
    model = Router({
        "Q": [calls(("delegate", {"task": "Sub", "agent": "researcher"})), echo_tool_results],
        "Sub": [calls(("slow", {"seconds": 20})), answer("too late")],
    })
    task = asyncio.create_task(r.run("Q", agent="main", adapter=model))
    for _ in range(200):
        if ran:
            break
        await asyncio.sleep(0.01)
    assert ran and ran[0]["outcome"] == "running"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ran[0]["outcome"] == "cancelled"
    assert model.offered("Sub") == [["lookup", "slow"]], "the child's model was not asked again"


async def test_the_child_shares_the_parents_deadline(tmp_path, ran, audit):
    r = build(tmp_path, ran, audit)
    model = Router({
        "Q": [calls(("delegate", {"task": "Sub", "agent": "researcher"})), echo_tool_results],
        "Sub": [calls(("slow", {"seconds": 20})), answer("too late")],
    })
    t0 = time.perf_counter()
    result = await r.run("Q", agent="main", adapter=model, deadline=0.5)
    assert time.perf_counter() - t0 < 1.5
    # the child stopped within the parent's deadline and said so; the slow call never finished
    delegated = result.steps[0].results[0]
    assert delegated.error is not None and delegated.error.code in ("timeout", "outcome_unknown")
    assert ran[0]["outcome"] == "cancelled"


async def test_a_delegation_streams_the_childs_steps_as_progress(tmp_path, ran, audit):
    model = Router({"Sub": [calls(("lookup", {"q": "x"})), answer("child answer")]})

    class ModelPlugin:
        REACH_PLUGIN_NAME = "test-model"

        @hookimpl
        def reach_register_adapters(self, register: Any) -> None:
            register("router", model)

    r = build(tmp_path, ran, audit, ModelPlugin())
    events = [e async for e in r.invoke_stream(
        {"id": "d1", "name": "delegate", "arguments": {"task": "Sub", "agent": "researcher"}}, agent="main")]
    progress = [(e["done"], e["message"]) for e in events[:-1]]
    assert progress == [(1, "researcher: lookup"), (2, "researcher: answered")]
    assert events[-1].ok and events[-1].content == "child answer"
    # without a model adapter, delegation says so instead of failing obscurely
    bare = build(tmp_path, ran)
    result = await bare.invoke("delegate", {"task": "Sub", "agent": "researcher"}, agent="main")
    assert result.error is not None and "adapter" in result.error.message


async def test_a_selector_never_hides_delegate(tmp_path, ran):
    class FirstOnly:
        """A selector that keeps only the last tool it is given."""

        def select(self, query, tools, ctx, limit):
            return [tools[-1].name]

    class SelectorPlugin:
        REACH_PLUGIN_NAME = "test-selector"

        @hookimpl
        def reach_register_selectors(self, register: Any) -> None:
            register("first", FirstOnly())

    r = build(tmp_path, ran, SelectorPlugin())
    names = [t["function"]["name"] for t in r.tools(agent="main", query="weather in Paris", limit=2)]
    assert names == ["delegate", "slow"]
