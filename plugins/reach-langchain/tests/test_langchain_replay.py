"""Writes through LangChain's own agent loop carry a run id, so a replayed step
writes once: the tool-call id the model sends again within the run (or on the
same LangGraph thread) gets the ledger's receipt, not a second write."""

from __future__ import annotations

import json

import pytest
import reach_langchain
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from reach_openai.scripted import Answer, Call, ToolCalls

from reach_core import connector

API_KEY = "sk-scripted-langchain"


def chat_model(url: str) -> ChatOpenAI:
    return ChatOpenAI(model="reach-scripted", base_url=url, api_key=API_KEY, max_retries=0, timeout=10)


@pytest.fixture
def payments(make_reach):
    """A Reach with a counting write tool: every real payment is one entry."""
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


def tool_results(state: dict) -> list[dict]:
    return [json.loads(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]


@pytest.mark.parametrize("times", [2, 3])
@pytest.mark.parametrize("call_id", ["call_pay", "call_0", "c-1"])
async def test_a_replayed_step_writes_once(payments, scripted, times, call_id):
    reach, paid = payments
    step = ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id=call_id)])
    server = scripted([step] * times + [Answer("done")])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach))

    state = await agent.ainvoke({"messages": [{"role": "user", "content": "pay ann 5"}]})

    assert paid == [("ann", 5)], "the replayed step paid again"
    results = tool_results(state)
    assert len(results) == times and all(r == results[0] for r in results)  # the receipt is the first result


async def test_distinct_runs_with_the_same_call_id_each_write(payments, scripted):
    reach, paid = payments
    server = scripted([ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_0")]), Answer("one"),
                       ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_0")]), Answer("two")])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach))
    for _ in range(2):
        await agent.ainvoke({"messages": [{"role": "user", "content": "pay ann 5"}]})
    assert paid == [("ann", 5), ("ann", 5)]


async def test_different_calls_in_one_run_each_write(payments, scripted):
    reach, paid = payments
    server = scripted([ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_a"),
                                  Call("pay", {"to": "bob", "amount": 7}, id="call_b")]),
                       ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_c")]), Answer("done")])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach))
    await agent.ainvoke({"messages": [{"role": "user", "content": "pay"}]})
    assert sorted(paid) == [("ann", 5), ("ann", 5), ("bob", 7)]


async def test_a_step_replayed_on_the_same_thread_writes_once(payments, scripted):
    """A LangGraph thread resumed in a second invocation (a checkpointer and ``thread_id``)
    that sends the same tool call again: the key is the thread's, the write is not repeated."""
    reach, paid = payments
    step = ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_thread")])
    server = scripted([step, Answer("one"), step, Answer("two")])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-replay"}}
    await agent.ainvoke({"messages": [{"role": "user", "content": "pay ann 5"}]}, config)
    await agent.ainvoke({"messages": [{"role": "user", "content": "again"}]}, config)
    assert paid == [("ann", 5)]
    # another thread is another conversation: its call writes
    await create_agent(chat_model(scripted([step, Answer("x")]).url), reach_langchain.tools(reach),
                       checkpointer=InMemorySaver()).ainvoke(
        {"messages": [{"role": "user", "content": "pay"}]}, {"configurable": {"thread_id": "t-other"}})
    assert paid == [("ann", 5), ("ann", 5)]


@pytest.mark.parametrize("how", ["tools()", "langgraph config"])
async def test_a_run_id_the_caller_gives_is_the_run(payments, scripted, how):
    reach, paid = payments
    step = ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_same")])
    server = scripted([step, Answer("one"), step, Answer("two")])
    if how == "tools()":
        agent = create_agent(chat_model(server.url), reach_langchain.tools(reach, run_id="order-42"))
        config: dict = {}
    else:
        import uuid

        agent = create_agent(chat_model(server.url), reach_langchain.tools(reach))
        config = {"run_id": uuid.UUID(int=42)}
    for _ in range(2):  # two invocations of one run: the same call is the same write
        await agent.ainvoke({"messages": [{"role": "user", "content": "pay"}]}, config)
    assert paid == [("ann", 5)]


async def test_the_run_id_reaches_reach(payments, scripted):
    reach, _ = payments
    seen: list[str | None] = []

    @connector(risk="read", name="whoami")
    def whoami(ctx=None) -> str:
        """Which run am I in?"""
        seen.append(ctx.run_id)
        return ctx.run_id or ""

    reach.register(whoami)
    server = scripted([ToolCalls([Call("whoami", {}, id="w1")]), ToolCalls([Call("whoami", {}, id="w2")]),
                       Answer("ok")])
    await create_agent(chat_model(server.url), reach_langchain.tools(reach)).ainvoke(
        {"messages": [{"role": "user", "content": "who"}]})
    assert len(seen) == 2 and seen[0] and seen[0] == seen[1] and seen[0].startswith("lc-")


@pytest.mark.parametrize(("first", "second"), [
    ("billing", "refunds"), (None, "billing"), ("billing", None), ("billing", "Billing"), ("billing", "billing "),
    ("支付", "退款"),
])
@pytest.mark.parametrize("call_id", ["call_0", "0", "调用"])
async def test_two_reach_agents_on_one_thread_each_write(payments, scripted, first, second, call_id):
    """Two reach agents on one LangGraph thread (a supervisor's sub-agents share its
    ``thread_id``) whose models number their calls alike: each write is its own. The
    key was the thread's and the call id only, and the ledger denies another agent's
    key, so the second agent's payment was refused with a "new key" it cannot send."""
    reach, paid = payments
    step = ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id=call_id)])
    config = {"configurable": {"thread_id": "t-shared"}}
    replies = []
    for agent_name in (first, second):
        agent = create_agent(chat_model(scripted([step, Answer("ok")]).url),
                             reach_langchain.tools(reach, agent=agent_name), checkpointer=InMemorySaver())
        state = await agent.ainvoke({"messages": [{"role": "user", "content": "pay ann 5"}]}, config)
        replies.extend(tool_results(state))
    assert paid == [("ann", 5), ("ann", 5)], replies
    assert all("error" not in r for r in replies)


async def test_one_agent_replayed_on_a_shared_thread_still_writes_once(payments, scripted):
    """The agent in the key does not split one agent's replay: same agent, same thread,
    same call id, a second invocation: one payment."""
    reach, paid = payments
    step = ToolCalls([Call("pay", {"to": "ann", "amount": 5}, id="call_0")])
    config = {"configurable": {"thread_id": "t-one"}}
    server = scripted([step, Answer("one"), step, Answer("two")])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach, agent="billing"),
                         checkpointer=InMemorySaver())
    for _ in range(2):
        await agent.ainvoke({"messages": [{"role": "user", "content": "pay ann 5"}]}, config)
    assert paid == [("ann", 5)]
