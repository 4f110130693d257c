"""pydantic-ai's own agent loop (``Agent`` + ``OpenAIChatModel``) driving reach tools
against the scripted model server and the local weather service."""

from __future__ import annotations

import json

import pytest
import reach_audit
import reach_pydantic_ai
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from reach_audit.query import tail_sync
from reach_openai.scripted import Answer, Call, ToolCalls
from reach_pydantic_ai import ReachToolset

API_KEY = "sk-scripted-pydantic-ai"  # the key the conftest's scripted server accepts


def model(url: str) -> OpenAIChatModel:
    return OpenAIChatModel("reach-scripted", provider=OpenAIProvider(base_url=url, api_key=API_KEY))


async def audit_records(reach) -> list[dict]:
    await reach_audit.flush(reach)
    return [e.record for e in tail_sync(reach.store, limit=100, kind="call")]


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m.get("role") == "tool"]


async def test_weather_through_pydantic_ai_agent_is_real_and_audited(make_reach, scripted, weather_service):
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("get_weather", {"city": "北京"}, id="call_bj")]),
        Answer("北京现在 {get_weather[temperature]}，{get_weather[condition]}。"),
    ])
    toolset = reach_pydantic_ai.toolset(reach, agent="assistant")
    assert isinstance(toolset, ReachToolset)
    agent = Agent(model(server.url), toolsets=[toolset])

    result = await agent.run("北京天气怎么样？")

    [sent] = tool_messages(server.requests[1])
    weather = json.loads(sent["content"])
    assert sent["tool_call_id"] == "call_bj" and weather["city"] == "北京"
    assert result.output == f"北京现在 {weather['temperature']}，{weather['condition']}。"
    assert any(p.startswith("/v1/forecast") for p in weather_service.requests)
    offered = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
    assert offered["get_weather"]["parameters"]["properties"] == reach.tool("get_weather").schema["properties"]

    [record] = await audit_records(reach)
    assert (record["tool"], record["call_id"], record["agent"], record["status"]) == (
        "get_weather", "call_bj", "assistant", "ok")
    assert record["run_id"]  # pydantic-ai's run id ties the audit record to the run


async def test_invalid_arguments_become_a_model_retry(make_reach, scripted):
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("get_weather", {"city": 5}, id="call_bad")]),
        ToolCalls([Call("get_weather", {"city": "上海"}, id="call_good")]),
        Answer("{get_weather[city]} {get_weather[temperature]}"),
    ])
    agent = Agent(model(server.url), toolsets=[reach_pydantic_ai.toolset(reach)])

    result = await agent.run("上海天气？")

    [retry] = tool_messages(server.requests[1])
    assert retry["tool_call_id"] == "call_bad"
    assert "`city` must be a string" in retry["content"]
    assert result.output.startswith("上海 ")
    statuses = [(r["call_id"], r["status"]) for r in await audit_records(reach)]
    assert statuses == [("call_bad", "invalid_arguments"), ("call_good", "ok")]


async def test_dangerous_call_waits_for_pydantic_ai_approval_then_runs_through_reach(make_reach, scripted):
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer("done: {delete_city}"),
    ])
    agent = Agent(model(server.url), toolsets=[reach_pydantic_ai.toolset(reach)],
                  output_type=[str, DeferredToolRequests])

    first = await agent.run("delete Shanghai")
    assert isinstance(first.output, DeferredToolRequests)
    [pending] = first.output.approvals
    assert (pending.tool_name, pending.tool_call_id) == ("delete_city", "call_del")
    assert first.output.metadata["call_del"]["risk"] == "dangerous"
    assert await audit_records(reach) == []  # nothing ran while waiting for a person

    second = await agent.run(message_history=first.all_messages(),
                             deferred_tool_results=DeferredToolResults(approvals={"call_del": True}))
    assert second.output == "done: deleted 上海"
    [record] = await audit_records(reach)
    assert record["status"] == "ok" and record["call_id"] == "call_del"
    assert record["confirmation"]["approved"] is True
    assert "pydantic-ai" in record["confirmation"]["reason"]


async def test_refused_approval_never_reaches_the_connector(make_reach, scripted):
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer(lambda ctx: f"tool said: {ctx.history[-1][1]}"),
    ])
    agent = Agent(model(server.url), toolsets=[reach_pydantic_ai.toolset(reach)],
                  output_type=[str, DeferredToolRequests])
    first = await agent.run("delete Shanghai")
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"call_del": ToolDenied("not today")}),
    )
    assert second.output == "tool said: not today"
    assert await audit_records(reach) == []


async def test_reach_denials_reach_the_model_as_tool_failures(make_reach, scripted):
    """approval="reach" with no confirmer installed: reach denies, the model is told why."""
    reach = make_reach()
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer(lambda ctx: "code: " + str(ctx.history[-1][1])),
    ])
    agent = Agent(model(server.url), toolsets=[reach_pydantic_ai.toolset(reach, approval="reach")])

    result = await agent.run("delete Shanghai")

    [sent] = tool_messages(server.requests[1])
    error = json.loads(sent["content"])["error"]
    assert error.startswith("denied: ") and "approval" in error
    assert "try again" not in error  # a terminal failure, not a retry prompt
    assert result.output.startswith("code: ")
    [record] = await audit_records(reach)
    assert record["status"] == "denied"


async def test_policy_filters_tools_per_reach_agent(make_reach, scripted):
    reach = make_reach({"agents": {"kiosk": {"deny": ["get_forecast", "delete_city"]}}})
    server = scripted([Answer("ok")])
    agent = Agent(model(server.url), toolsets=[reach_pydantic_ai.toolset(reach, agent="kiosk")])
    await agent.run("hello")
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == ["get_weather"]


def test_approval_mode_is_checked(make_reach):
    with pytest.raises(ValueError, match="approval"):
        reach_pydantic_ai.toolset(make_reach(), approval="ask")  # type: ignore[arg-type]


async def test_reach_confirm_queue_answers_needs_confirmation_then_a_person_runs_it(make_reach, scripted):
    """With reach-confirm installed, approval="auto" leaves the decision to its queue: the
    model learns the call awaits a person; the approved call then runs once, through reach."""
    from reach_confirm.plugin import queue_for

    reach = make_reach(confirm=True)
    server = scripted([
        ToolCalls([Call("delete_city", {"city": "上海"}, id="call_del")]),
        Answer("I asked a person to approve deleting 上海."),
    ])
    agent = Agent(model(server.url), toolsets=[reach_pydantic_ai.toolset(reach)])
    await agent.run("delete Shanghai")

    [sent] = tool_messages(server.requests[1])
    assert json.loads(sent["content"])["error"].startswith("needs_confirmation: ")
    [pending] = await queue_for(reach).list()
    assert (pending.tool, pending.arguments) == ("delete_city", {"city": "上海"})
    result = await queue_for(reach).approve(pending.id, by="alice")
    assert result.ok and result.content == "deleted 上海"
    statuses = [r["status"] for r in await audit_records(reach)]
    assert statuses == ["needs_confirmation", "ok"]
