"""LangChain's own agent loop (``langchain.agents.create_agent`` + ``ChatOpenAI``)
driving reach tools against the scripted model server and the local weather service."""

from __future__ import annotations

import asyncio
import json

import reach_audit
import reach_langchain
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langchain_openai import ChatOpenAI
from reach_audit.query import tail_sync
from reach_openai.scripted import Answer, Call, ToolCalls

API_KEY = "sk-scripted-langchain"  # the key the conftest's scripted server accepts


def chat_model(url: str) -> ChatOpenAI:
    return ChatOpenAI(model="reach-scripted", base_url=url, api_key=API_KEY, max_retries=0, timeout=10)


async def audit_records(reach) -> list[dict]:
    await reach_audit.flush(reach)
    return [e.record for e in tail_sync(reach.store, limit=100, kind="call")]


async def test_weather_through_langchain_agent_is_real_and_audited(make_reach, scripted, weather_service):
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("get_weather", {"city": "北京"}, id="call_bj")]),
        Answer("北京现在 {get_weather[temperature]}，{get_weather[condition]}。"),
    ])
    tools = reach_langchain.tools(reach, agent="assistant")
    assert all(isinstance(t, BaseTool) for t in tools)
    agent = create_agent(chat_model(server.url), tools)

    state = await agent.ainvoke({"messages": [{"role": "user", "content": "北京天气怎么样？"}]})

    tool_msg = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    weather = json.loads(tool_msg.content)
    assert tool_msg.tool_call_id == "call_bj" and tool_msg.status == "success"
    assert weather["city"] == "北京" and "°C" in weather["temperature"]
    assert state["messages"][-1].content == f"北京现在 {weather['temperature']}，{weather['condition']}。"
    assert any(p.startswith("/v1/forecast") for p in weather_service.requests)  # a real call went out
    # the model was offered reach's schema as is
    offered = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
    assert offered["get_weather"]["parameters"] == reach.tool("get_weather").schema

    records = await audit_records(reach)
    assert [(r["tool"], r["call_id"], r["agent"], r["status"]) for r in records] == [
        ("get_weather", "call_bj", "assistant", "ok"),
    ]


async def test_errors_reach_the_model_as_error_tool_messages(make_reach, scripted):
    reach = make_reach()
    server = scripted([
        ToolCalls([
            Call("get_weather", {"city": 5}, id="call_bad"),
            Call("delete_city", {"city": "上海"}, id="call_del"),
        ]),
        Answer(lambda ctx: "seen: " + ", ".join(r["error"]["code"] for _, r in ctx.history)),
    ])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach))

    state = await agent.ainvoke({"messages": [{"role": "user", "content": "delete Shanghai"}]})

    msgs = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert msgs["call_bad"].status == "error" and msgs["call_del"].status == "error"
    bad = json.loads(msgs["call_bad"].content)["error"]
    assert bad["code"] == "invalid_arguments" and "`city`" in bad["message"]
    denied = json.loads(msgs["call_del"].content)["error"]
    assert denied["code"] == "denied" and "approval" in denied["message"]
    assert state["messages"][-1].content == "seen: invalid_arguments, denied"

    statuses = {r["call_id"]: r["status"] for r in await audit_records(reach)}
    assert statuses == {"call_bad": "invalid_arguments", "call_del": "denied"}


async def test_policy_decides_which_tools_langchain_sees_and_still_holds_at_call_time(make_reach, scripted):
    reach = make_reach({"agents": {"kiosk": {"deny": ["get_forecast", "delete_city"]}}})
    tools = reach_langchain.tools(reach, agent="kiosk")
    assert [t.name for t in tools] == ["get_weather"]

    # a tool list made for another agent does not smuggle a forbidden tool in
    other = {t.name: t for t in reach_langchain.tools(reach)}["get_forecast"]
    other.agent = "kiosk"
    msg = await other.ainvoke({"name": "get_forecast", "args": {"city": "北京"}, "id": "c1", "type": "tool_call"})
    assert msg.status == "error" and json.loads(msg.content)["error"]["code"] == "denied"


async def test_sync_invoke_and_artifact(make_reach):
    reach = make_reach()
    [tool] = reach_langchain.tools(reach, names=["get_weather"])
    msg = await asyncio.to_thread(
        tool.invoke, {"name": "get_weather", "args": {"city": "London"}, "id": "c-sync", "type": "tool_call"}
    )
    assert msg.status == "success" and msg.artifact.ok and msg.artifact.call_id == "c-sync"
    assert json.loads(msg.content)["city"] == "London"


async def test_interrupt_approval_asks_a_person_before_reach_runs_the_call(make_reach, scripted):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    reach = make_reach()
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer(lambda ctx: f"tool said: {ctx.history[-1][1]}"),
    ])
    tools = reach_langchain.tools(reach, approval="interrupt")
    assert [t.name for t in tools if t.ask_person] == ["delete_city"]
    agent = create_agent(chat_model(server.url), tools, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}

    first = await agent.ainvoke({"messages": [{"role": "user", "content": "delete Shanghai"}]}, config)
    [pending] = first["__interrupt__"]
    assert pending.value["tool"] == "delete_city" and pending.value["arguments"] == {"city": "上海"}
    assert await audit_records(reach) == []  # nothing ran while waiting for a person

    done = await agent.ainvoke(Command(resume={"type": "approve", "call_id": "call_del"}), config)
    assert done["messages"][-1].content == "tool said: deleted 上海"
    [record] = await audit_records(reach)
    assert record["status"] == "ok" and record["call_id"] == "call_del"
    assert record["confirmation"]["approved"] is True and "interrupt" in record["confirmation"]["reason"]


async def test_interrupt_rejection_never_reaches_the_connector(make_reach, scripted):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    reach = make_reach()
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer(lambda ctx: ctx.history[-1][1]["error"]["message"]),
    ])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach, approval="interrupt"),
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t2"}}
    await agent.ainvoke({"messages": [{"role": "user", "content": "delete Shanghai"}]}, config)
    done = await agent.ainvoke(Command(resume={"type": "reject", "message": "not today", "call_id": "call_del"}),
                               config)
    assert done["messages"][-1].content.startswith("a person declined this delete_city call: not today")
    assert await audit_records(reach) == []


async def test_reach_confirm_queue_answers_needs_confirmation(make_reach, scripted):
    from reach_confirm.plugin import queue_for

    reach = make_reach(confirm=True)
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer(lambda ctx: ctx.history[-1][1]["error"]["code"]),
    ])
    agent = create_agent(chat_model(server.url), reach_langchain.tools(reach))
    state = await agent.ainvoke({"messages": [{"role": "user", "content": "delete Shanghai"}]})
    msg = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert msg.status == "error" and json.loads(msg.content)["error"]["code"] == "needs_confirmation"
    assert state["messages"][-1].content == "needs_confirmation"
    [pending] = await queue_for(reach).list()
    assert pending.tool == "delete_city"
