"""Writes through the Agents SDK's own loop carry the run's id, so a replayed step
writes once: the tool-call id the model sends again within the run (or after the
run resumes from its ``RunState``) gets the ledger's receipt, not a second write."""

from __future__ import annotations

import json

import pytest
import reach_openai_agents
from agents import (
    Agent,
    FunctionTool,
    MaxTurnsExceeded,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
)
from openai import AsyncOpenAI
from reach_openai.scripted import Answer, Call, ToolCalls

from reach_core import connector

API_KEY = "sk-scripted-openai-agents"
OFFLINE = RunConfig(tracing_disabled=True)


def sdk_agent(url: str, tools: list[FunctionTool]) -> Agent:
    model = OpenAIChatCompletionsModel(model="reach-scripted",
                                       openai_client=AsyncOpenAI(base_url=url, api_key=API_KEY, max_retries=0))
    return Agent(name="assistant", instructions="Answer briefly.", model=model, tools=tools)


@pytest.fixture
def payments(make_reach):
    paid: list[tuple[str, int]] = []

    @connector(risk="write")
    def pay(to: str, amount: int) -> dict:
        """Pay someone (a write: must happen once per call).

        Args:
            to: who gets the money
            amount: how much
        """
        paid.append((to, amount))
        return {"paid": amount, "to": to, "payment": len(paid)}

    reach = make_reach()
    reach.register(pay)
    return reach, paid


def tool_outputs(server) -> list[dict]:
    return [json.loads(m["content"]) for r in server.requests for m in r["messages"] if m.get("role") == "tool"]


@pytest.mark.parametrize("turns", [2, 3, 5])
@pytest.mark.parametrize("call_id", ["call_pay", "call_0", "c-1"])
async def test_a_replayed_step_writes_once(payments, scripted, turns, call_id):
    """The model sends the same tool call (same id) again: the SDK keeps one item per call id,
    so the scripted model stays at its second step and replays it every turn until ``max_turns``."""
    reach, paid = payments
    step = ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id=call_id)])
    server = scripted([step, step, Answer("done")])
    agent = sdk_agent(server.url, reach_openai_agents.tools(reach))

    with pytest.raises(MaxTurnsExceeded):
        await Runner.run(agent, "pay ann 5", run_config=OFFLINE, max_turns=turns)

    assert len(server.requests) == turns  # the step was replayed every turn
    assert paid == [("ann", 5)], "the replayed step paid again"
    outputs = tool_outputs(server)
    assert outputs and all(o == outputs[0] for o in outputs)  # each replay got the first result


async def test_a_step_sent_again_in_a_later_turn_writes_once(payments, scripted):
    reach, paid = payments
    server = scripted([ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_x")]),
                       ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_x"),
                                  Call("pay", {"to": "bob", "amount": 1}, id="call_y")]),
                       Answer("done")])
    await Runner.run(sdk_agent(server.url, reach_openai_agents.tools(reach)), "pay", run_config=OFFLINE, max_turns=6)
    assert sorted(paid) == [("ann", 5), ("bob", 1)]


async def test_distinct_runs_with_the_same_call_id_each_write(payments, scripted):
    reach, paid = payments
    step = ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_0")])
    server = scripted([step, Answer("one"), step, Answer("two")])
    agent = sdk_agent(server.url, reach_openai_agents.tools(reach))
    for _ in range(2):
        await Runner.run(agent, "pay ann 5", run_config=OFFLINE)
    assert paid == [("ann", 5), ("ann", 5)]


async def test_different_calls_in_one_run_each_write(payments, scripted):
    reach, paid = payments
    server = scripted([ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_a"),
                                  Call("pay", {"to": "bob", "amount": 7}, id="call_b")]),
                       ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_c")]), Answer("done")])
    await Runner.run(sdk_agent(server.url, reach_openai_agents.tools(reach)), "pay", run_config=OFFLINE)
    assert sorted(paid) == [("ann", 5), ("ann", 5), ("bob", 7)]


async def test_the_run_id_reaches_reach_and_is_one_per_run(payments, scripted):
    reach, _ = payments
    seen: list[str | None] = []

    @connector(risk="read", name="whoami")
    def whoami(ctx=None) -> str:
        """Which run am I in?"""
        seen.append(ctx.run_id)
        return ctx.run_id or ""

    reach.register(whoami)
    runs = []
    for _ in range(2):
        seen.clear()
        server = scripted([ToolCalls([Call("whoami", {}, id="w1")]), ToolCalls([Call("whoami", {}, id="w2")]),
                           Answer("ok")])
        await Runner.run(sdk_agent(server.url, reach_openai_agents.tools(reach)), "who", run_config=OFFLINE)
        assert len(seen) == 2 and seen[0] and seen[0] == seen[1] and seen[0].startswith("oa-")
        runs.append(seen[0])
    assert runs[0] != runs[1]


async def test_a_traced_run_uses_its_trace_id(payments, scripted):
    """With tracing on, the run id is the trace's, which a resumed RunState keeps."""
    from agents.tracing import set_trace_processors
    from agents.tracing.setup import get_trace_provider

    reach, paid = payments
    provider = get_trace_provider()
    before = list(getattr(getattr(provider, "_multi_processor", None), "_processors", ()))
    set_trace_processors([])  # traced, but nothing is exported
    try:
        step = ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_t")])
        server = scripted([step, Answer("one"), step, Answer("two")])
        agent = sdk_agent(server.url, reach_openai_agents.tools(reach))
        traced = RunConfig(tracing_disabled=False, trace_id="trace_" + "ab" * 16)
        await Runner.run(agent, "pay", run_config=traced)
        await Runner.run(agent, "pay", run_config=traced)  # the same trace: the same run
    finally:
        set_trace_processors(before)
    assert paid == [("ann", 5)]


@pytest.mark.parametrize("traced", [False, True])
async def test_a_run_resumed_after_approval_does_not_repeat_a_write(payments, scripted, traced):
    """One turn pays and asks to delete a city (a person must approve); the run resumes
    from its RunState: the payment of that turn is not made again."""
    from agents.tracing import set_trace_processors
    from agents.tracing.setup import get_trace_provider

    reach, paid = payments
    server = scripted([
        ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_pay"),
                   Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer("done"),
    ])
    agent = sdk_agent(server.url, reach_openai_agents.tools(reach))
    provider = get_trace_provider()
    before = list(getattr(getattr(provider, "_multi_processor", None), "_processors", ()))
    config = RunConfig(tracing_disabled=False, trace_id="trace_" + "cd" * 16) if traced else OFFLINE
    set_trace_processors([])
    try:
        first = await Runner.run(agent, "pay ann and delete Shanghai", run_config=config)
        [pending] = first.interruptions
        state = first.to_state()
        state.approve(pending)
        second = await Runner.run(agent, state, run_config=config)
    finally:
        set_trace_processors(before)
    assert second.final_output == "done"
    assert paid == [("ann", 5)]
