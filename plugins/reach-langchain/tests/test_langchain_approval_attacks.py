"""LangGraph interrupt approvals (``approval="interrupt"``) approve exactly the call the
person saw: its tool, id and arguments, once."""

from __future__ import annotations

import pytest
import reach_audit
import reach_langchain
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI
from reach_audit.query import tail_sync
from reach_openai.scripted import Answer, Call, ToolCalls

API_KEY = "sk-scripted-langchain"


def chat_model(url: str) -> ChatOpenAI:
    return ChatOpenAI(model="reach-scripted", base_url=url, api_key=API_KEY, max_retries=0, timeout=10)


async def ran(reach) -> list[dict]:
    await reach_audit.flush(reach)
    return [e.record for e in tail_sync(reach.store, limit=100, kind="call") if e.record["status"] == "ok"]


async def test_one_approval_for_two_parallel_dangerous_calls_approves_at_most_what_was_shown(make_reach, scripted):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    reach = make_reach()
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_a"),
                   Call("delete_city", {"city": "北京"}, id="call_b")]),
        Answer("done"), Answer("done"), Answer("done"),
    ])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach, approval="interrupt"),
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-par"}}
    first = await agent.ainvoke({"messages": [{"role": "user", "content": "delete both"}]}, config)
    pending = first["__interrupt__"]
    assert sorted(p.value["call_id"] for p in pending) == ["call_a", "call_b"]
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):  # one answer cannot approve both
        await agent.ainvoke(Command(resume={"type": "approve"}), config)
    assert await ran(reach) == []
    a = next(p for p in pending if p.value["call_id"] == "call_a")
    b = next(p for p in pending if p.value["call_id"] == "call_b")
    out = await agent.ainvoke(Command(resume={a.id: {"type": "approve", "call_id": "call_a"},
                                              b.id: {"type": "reject", "call_id": "call_b"}}), config)
    records = await ran(reach)
    assert [r["call_id"] for r in records] == ["call_a"]
    assert "北京" not in str(records)
    assert any("declined" in str(m.content) for m in out["messages"])


@pytest.mark.parametrize("answer", [
    "approve", "yes", 1, 0, {"type": "APPROVE"}, {"type": ["approve"]}, {"decision": "approve"},
    {"type": "edit", "args": {"city": "北京"}}, {"decisions": []},
    {"decisions": [{"type": "reject"}, {"type": "approve"}]},
    {"type": "approve "}, {"type": "аpprove"},  # trailing space; Cyrillic а
])
async def test_only_a_clear_approve_counts(make_reach, scripted, answer):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    reach = make_reach()
    server = scripted([ToolCalls([Call("delete_city", {"city": "上海"}, id="call_x")]), Answer("done")])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach, approval="interrupt"),
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-ans"}}
    await agent.ainvoke({"messages": [{"role": "user", "content": "delete"}]}, config)
    await agent.ainvoke(Command(resume=answer), config)
    assert await ran(reach) == []


@pytest.mark.parametrize("extra", [
    {"tool_call_id": "call_other"}, {"self": 1}, {"__pregel_runtime": 1}, {"run_id": "r"}, {"config": {"tags": []}},
])
async def test_langchain_reserved_names_in_arguments_smuggle_nothing(make_reach, extra):
    """Arguments named like LangChain's own parameters are tool arguments: reach validates
    them (refused here), the call keeps the tool-call id LangChain gave it."""
    reach = make_reach()
    [tool] = reach_langchain.tools(reach, names=["get_weather"])
    out = await tool.ainvoke({"name": "get_weather", "args": {"city": "北京", **extra}, "id": "call_1",
                              "type": "tool_call"})
    assert out.status == "error" and "invalid_arguments" in out.content
    assert out.tool_call_id == "call_1"
    assert await ran(reach) == []


@pytest.mark.parametrize("raw", ['{"city":"上海\\ud800"}', '{"city":"\\udfff"}', '{"city":"\\ud83d"}'])
async def test_a_lone_surrogate_from_the_model_is_refused_and_the_audit_log_goes_on(make_reach, scripted, raw):
    """LangChain parses ``"\\ud800"`` into a ``str`` with a lone surrogate: reach refuses the
    call, and its audit record is written (the surrogate as its escape), and so is every
    later one. (LangChain's own next request to the model may fail on that text: not
    reach's loop.) Before, the writer could not store the record and stopped for good."""
    reach = make_reach()
    server = scripted([ToolCalls([Call("get_weather", raw, id="call_bad")]), Answer("done")])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach))
    try:
        await agent.ainvoke({"messages": [{"role": "user", "content": "weather"}]})
    except UnicodeEncodeError:  # langchain-openai sending the surrogate back to the model
        pass
    [tool] = reach_langchain.tools(reach, names=["get_weather"])
    await tool.ainvoke({"name": "get_weather", "args": {"city": "北京"}, "id": "call_ok", "type": "tool_call"})
    await reach_audit.flush(reach)
    records = {e.record["call_id"]: e.record for e in tail_sync(reach.store, limit=10, kind="call")}
    assert records["call_bad"]["status"] == "invalid_arguments" and records["call_ok"]["status"] == "ok"
