"""The OpenAI Agents SDK's own loop (``Runner.run`` with ``OpenAIChatCompletionsModel``)
driving reach tools against the scripted model server and the local weather service."""

from __future__ import annotations

import json

import pytest
import reach_audit
import reach_openai_agents
from agents import Agent, FunctionTool, OpenAIChatCompletionsModel, RunConfig, Runner
from openai import AsyncOpenAI
from reach_audit.query import tail_sync
from reach_openai.scripted import Answer, Call, ToolCalls
from reach_openai_agents import strict_compatible

API_KEY = "sk-scripted-openai-agents"  # the key the conftest's scripted server accepts
# no traces leave the machine (the SDK would export them to OpenAI by default)
OFFLINE = RunConfig(tracing_disabled=True)


def sdk_agent(url: str, tools: list[FunctionTool]) -> Agent:
    model = OpenAIChatCompletionsModel(model="reach-scripted",
                                       openai_client=AsyncOpenAI(base_url=url, api_key=API_KEY, max_retries=0))
    return Agent(name="assistant", instructions="Answer briefly.", model=model, tools=tools)


async def audit_records(reach) -> list[dict]:
    await reach_audit.flush(reach)
    return [e.record for e in tail_sync(reach.store, limit=100, kind="call")]


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m.get("role") == "tool"]


async def test_weather_through_the_agents_sdk_is_real_and_audited(make_reach, scripted, weather_service):
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("get_weather", {"city": "北京"}, id="call_bj")]),
        Answer("北京现在 {get_weather[temperature]}，{get_weather[condition]}。"),
    ])
    tools = reach_openai_agents.tools(reach, agent="assistant")
    assert all(isinstance(t, FunctionTool) for t in tools)

    result = await Runner.run(sdk_agent(server.url, tools), "北京天气怎么样？", run_config=OFFLINE)

    [sent] = tool_messages(server.requests[1])
    weather = json.loads(sent["content"])
    assert sent["tool_call_id"] == "call_bj" and weather["city"] == "北京"
    assert "\\u" not in sent["content"]  # reach's compact JSON keeps Chinese as is
    assert result.final_output == f"北京现在 {weather['temperature']}，{weather['condition']}。"
    assert any(p.startswith("/v1/forecast") for p in weather_service.requests)
    offered = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
    assert offered["get_weather"]["parameters"] == reach.tool("get_weather").schema

    [record] = await audit_records(reach)
    assert (record["tool"], record["call_id"], record["agent"], record["status"]) == (
        "get_weather", "call_bj", "assistant", "ok")


async def test_errors_are_returned_to_the_model_and_the_run_goes_on(make_reach, scripted):
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("get_weather", '{"city": "北京"', id="call_json"),
                   Call("get_forecast", {"city": "北京", "days": 99}, id="call_days")]),
        Answer(lambda ctx: " ".join(r["error"]["code"] for _, r in ctx.history)),
    ])
    result = await Runner.run(sdk_agent(server.url, reach_openai_agents.tools(reach, approval="reach")),
                              "weather?", run_config=OFFLINE)
    assert result.final_output == "invalid_json invalid_arguments"
    statuses = {r["call_id"]: r["status"] for r in await audit_records(reach)}
    assert statuses == {"call_json": "invalid_json", "call_days": "invalid_arguments"}


async def test_dangerous_call_uses_the_sdk_approval_then_runs_through_reach(make_reach, scripted):
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer("done: {delete_city}"),
    ])
    tools = {t.name: t for t in reach_openai_agents.tools(reach)}
    assert tools["delete_city"].needs_approval is True and tools["get_weather"].needs_approval is False
    agent = sdk_agent(server.url, list(tools.values()))

    first = await Runner.run(agent, "delete Shanghai", run_config=OFFLINE)
    [pending] = first.interruptions
    assert pending.tool_name == "delete_city"
    assert await audit_records(reach) == []  # nothing ran while waiting for a person

    state = first.to_state()
    state.approve(pending)
    second = await Runner.run(agent, state, run_config=OFFLINE)
    assert second.final_output == "done: deleted 上海"
    [record] = await audit_records(reach)
    assert record["status"] == "ok" and record["call_id"] == "call_del"
    assert record["confirmation"]["approved"] is True
    assert "Agents SDK" in record["confirmation"]["reason"]


async def test_without_native_approval_reach_refuses_and_says_why(make_reach, scripted):
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer(lambda ctx: ctx.history[-1][1]["error"]["code"]),
    ])
    tools = reach_openai_agents.tools(reach, approval="reach")
    result = await Runner.run(sdk_agent(server.url, tools), "delete Shanghai", run_config=OFFLINE)
    assert result.final_output == "denied"
    [record] = await audit_records(reach)
    assert record["status"] == "denied"


def test_policy_and_strict_mode(make_reach):
    reach = make_reach({"agents": {"kiosk": {"deny": ["get_forecast", "delete_city"]}}})
    [tool] = reach_openai_agents.tools(reach, agent="kiosk")
    assert tool.name == "get_weather"
    # get_weather has an optional `unit`: strict mode would make it required, so it is off
    assert tool.strict_json_schema is False
    assert strict_compatible({"type": "object", "properties": {"a": {"type": "string"}},
                              "required": ["a"], "additionalProperties": False})
    with pytest.raises(ValueError, match="approval"):
        reach_openai_agents.tools(reach, approval="ask")  # type: ignore[arg-type]


async def test_reach_confirm_queue_answers_needs_confirmation(make_reach, scripted):
    from reach_confirm.plugin import queue_for

    reach = make_reach(confirm=True)
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer(lambda ctx: ctx.history[-1][1]["error"]["code"]),
    ])
    tools = reach_openai_agents.tools(reach)  # approval="auto": reach-confirm decides, the SDK does not ask
    assert not any(t.needs_approval for t in tools)
    result = await Runner.run(sdk_agent(server.url, tools), "delete Shanghai", run_config=OFFLINE)
    assert result.final_output == "needs_confirmation"
    [pending] = await queue_for(reach).list()
    assert pending.tool == "delete_city"
    assert [r["status"] for r in await audit_records(reach)] == ["needs_confirmation"]
