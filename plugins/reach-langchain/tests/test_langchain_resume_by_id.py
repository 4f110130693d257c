"""A LangGraph resume answer approves only the call it names (``approval="interrupt"``).

LangGraph hands the resume answers of one node to that node's ``interrupt`` calls by
their order. A node that runs several tool calls (``ToolNode`` in a plain graph, a
custom node, a thread pool) may reach them in another order when it runs again after
the resume, and an approval the person gave for one call then approved another they
never saw. Now an answer that names a ``call_id`` counts only for that call, exactly; one
that names another call, or is ambiguous, is a denial, never an approval. An answer that
names no call (``{"type": "approve"}``, ``True``) is matched by LangGraph's order, as before.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest
import reach_audit
import reach_langchain
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command
from reach_audit.query import tail_sync
from reach_openai.scripted import Answer, Call, ToolCalls

API_KEY = "sk-scripted-langchain"


def chat_model(url: str) -> ChatOpenAI:
    return ChatOpenAI(model="reach-scripted", base_url=url, api_key=API_KEY, max_retries=0, timeout=10)


async def ran(reach) -> list[dict]:
    await reach_audit.flush(reach)
    return [e.record for e in tail_sync(reach.store, limit=100, kind="call") if e.record["status"] == "ok"]


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _graph(reach, order_per_run: list[list[str]]):
    """model -> a node that runs the tool calls one after another in the order the n-th run
    of the node is given (as a thread pool or callbacks may reorder them), under a checkpointer."""
    [tool] = reach_langchain.tools(reach, names=["delete_city"], approval="interrupt")
    runs = {"n": 0}

    def model(state: State) -> dict[str, Any]:
        return {"messages": [AIMessage("", tool_calls=[
            {"name": "delete_city", "args": {"city": "上海"}, "id": "call_a"},
            {"name": "delete_city", "args": {"city": "北京"}, "id": "call_b"},
        ])]}

    async def tools(state: State) -> dict[str, Any]:
        order = order_per_run[min(runs["n"], len(order_per_run) - 1)]
        runs["n"] += 1
        calls = {c["id"]: c for c in state["messages"][-1].tool_calls}
        out = [await tool.ainvoke({**calls[cid], "type": "tool_call"}) for cid in order]
        return {"messages": out}

    g = StateGraph(State)
    g.add_node("model", model)
    g.add_node("tools", tools)
    g.add_edge(START, "model")
    g.add_edge("model", "tools")
    g.add_edge("tools", END)
    return g.compile(checkpointer=InMemorySaver())


async def test_an_approval_given_for_one_call_never_runs_the_call_that_takes_its_place(make_reach):
    reach = make_reach()
    # first run asks about call_a; when it runs again, call_b reaches its interrupt first
    app = _graph(reach, [["call_a", "call_b"], ["call_b", "call_a"]])
    config = {"configurable": {"thread_id": "t-order"}}
    first = await app.ainvoke({"messages": [("user", "delete Shanghai")]}, config)
    [pending] = first["__interrupt__"]
    assert pending.value["call_id"] == "call_a" and pending.value["arguments"] == {"city": "上海"}
    second = await app.ainvoke(Command(resume={"type": "approve", "call_id": "call_a"}), config)
    assert await ran(reach) == [], "the approval for call_a ran call_b (北京)"
    [pending] = second["__interrupt__"]  # call_a asks again: the answer was not call_b's, and not spent on it
    assert pending.value["call_id"] == "call_a"
    done = await app.ainvoke(Command(resume={"type": "approve", "call_id": "call_a"}), config)
    assert [r["args"] for r in await ran(reach)] == [{"city": "上海"}]
    by_id = {m.tool_call_id: m for m in done["messages"] if isinstance(m, ToolMessage)}
    assert by_id["call_b"].status == "error" and "denied" in by_id["call_b"].content
    assert by_id["call_a"].status == "success"


def _x(call_id: Any) -> dict[str, Any]:
    return {"type": "approve", "call_id": call_id}


# answers that approve, but not this call (call_x): none may run it
NOT_THIS_CALL = [
    _x("call_y"), _x("CALL_X"), _x("call_x "), _x(" call_x"),
    _x("call_\u0445"), _x("call_x\u200b"), _x("call_x\n"), _x(["call_x"]), _x({"id": "call_x"}), _x(None), _x(""),
    _x("call_"), _x("call_x" * 2), _x(0),
    {"decisions": [_x("call_y")]},
    {"decisions": [{"type": "approve"}, _x("call_y")]},
    {"decisions": [_x("call_x"), _x("call_x")]},
    {"decisions": [_x("call_x"), {"type": "reject", "call_id": "call_x"}]},
    {"decisions": [{"type": "approve", "call_id": "call_x "}]},
    {"type": "approve", "call_id": "call_y", "decisions": "call_x"},
]


@pytest.mark.parametrize("answer", NOT_THIS_CALL, ids=repr)
async def test_an_answer_that_does_not_name_the_call_approves_nothing(make_reach, scripted, answer):
    reach = make_reach()
    server = scripted([ToolCalls([Call("delete_city", {"city": "上海"}, id="call_x")]), Answer("done")])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach, approval="interrupt"),
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-name"}}
    first = await agent.ainvoke({"messages": [{"role": "user", "content": "delete"}]}, config)
    assert first["__interrupt__"][0].value["call_id"] == "call_x"
    out = await agent.ainvoke(Command(resume=answer), config)
    assert await ran(reach) == []
    [msg] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert msg.status == "error" and "denied" in msg.content


@pytest.mark.parametrize("answer", [
    {"type": "approve", "call_id": "call_x"},
    {"type": "accept", "call_id": "call_x"},
    # naming no call: LangGraph's order, as documented before the ids (one call at a time)
    {"type": "approve"}, True, {"type": "accept"}, {"decisions": [{"type": "approve"}]},
    {"decisions": [{"type": "reject", "call_id": "call_y"}, {"type": "approve", "call_id": "call_x"}]},
], ids=repr)
async def test_positive_control_an_answer_naming_the_call_runs_it(make_reach, scripted, answer):
    reach = make_reach()
    server = scripted([ToolCalls([Call("delete_city", {"city": "上海"}, id="call_x")]), Answer("done")])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach, approval="interrupt"),
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-ok"}}
    await agent.ainvoke({"messages": [{"role": "user", "content": "delete"}]}, config)
    await agent.ainvoke(Command(resume=answer), config)
    assert [r["call_id"] for r in await ran(reach)] == ["call_x"]


async def test_parallel_interrupts_answered_by_interrupt_id_with_swapped_call_ids_run_nothing(make_reach, scripted):
    """The resume map is keyed by LangGraph's interrupt ids; an answer inside it still has to
    name the call of that interrupt, so a UI that mixes the two rows up approves nothing."""
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_a"),
                   Call("delete_city", {"city": "北京"}, id="call_b")]),
        Answer("done"), Answer("done"),
    ])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach, approval="interrupt"),
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-swap"}}
    first = await agent.ainvoke({"messages": [{"role": "user", "content": "delete both"}]}, config)
    by_call = {p.value["call_id"]: p for p in first["__interrupt__"]}
    await agent.ainvoke(Command(resume={by_call["call_a"].id: {"type": "approve", "call_id": "call_b"},
                                        by_call["call_b"].id: {"type": "reject", "call_id": "call_a"}}), config)
    assert await ran(reach) == []


async def test_a_call_without_a_tool_call_id_is_asked_and_answered_by_a_stable_id(make_reach):
    """A node that calls the tool with plain arguments runs again on resume: the id the
    interrupt showed still names the call then."""
    reach = make_reach()
    [tool] = reach_langchain.tools(reach, names=["delete_city"], approval="interrupt")

    async def node(state: State) -> dict[str, Any]:
        text = await tool.ainvoke({"city": "上海"})
        return {"messages": [AIMessage(str(text))]}

    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    app = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-plain"}}
    first = await app.ainvoke({"messages": [("user", "x")]}, config)
    [pending] = first["__interrupt__"]
    await app.ainvoke(Command(resume={"type": "approve", "call_id": pending.value["call_id"]}), config)
    assert [r["args"] for r in await ran(reach)] == [{"city": "上海"}]
