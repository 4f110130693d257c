"""reach.run through the `openai` adapter and the real openai SDK, against a scripted server."""

from __future__ import annotations

import json
import socket

import openai
import pytest
from reach_openai import OpenAIAdapter, OpenAISettings
from reach_openai.scripted import Answer, Call, Fail, ToolCalls

from reach_core.adapter import ModelRequest

WEATHER_ANSWER = Answer(
    "北京 {get_weather[temperature]}，湿度 {get_weather[humidity]}，{get_weather[condition]}"
)


def tool_messages(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m["role"] == "tool"]


async def test_native_tool_call_then_answer_from_the_result(scripted, make_reach):
    server = scripted([ToolCalls([Call("get_weather", {"city": "北京"})]), WEATHER_ANSWER])
    reach = make_reach(server.url)
    result = await reach.run("北京天气怎么样？")
    assert result.outcome == "answered", result.error
    assert result.text == "北京 21 °C，湿度 45 %，晴"
    first, second = server.requests
    assert first["model"] == "scripted-test"
    assert first["tool_choice"] == "auto"
    assert {t["function"]["name"] for t in first["tools"]} == {"get_weather", "add"}
    assert first["tools"][0]["type"] == "function"
    # the tool result goes back as a tool message with compact JSON that keeps Chinese as is
    [msg] = tool_messages(second)
    assert (
        msg["content"] == '{"city":"北京","temperature":"21 °C","humidity":"45 %","condition":"晴"}'
    )
    assert result.usage.prompt_tokens > 0 and result.usage.cached_tokens > 0
    assert result.usage == result.steps[0].usage + result.steps[1].usage


async def test_several_calls_in_one_turn(scripted, make_reach):
    server = scripted(
        [
            ToolCalls([Call("get_weather", {"city": "上海"}), Call("add", {"a": 25, "b": 75})]),
            Answer("上海 {get_weather[temperature]}; sum {add}"),
        ]
    )
    result = await make_reach(server.url).run("上海天气？25 + 75？")
    assert result.text == "上海 24 °C; sum 100"
    assert len(result.steps[0].tool_calls) == 2 and [r.ok for r in result.results] == [True, True]
    assistant = next(m for m in server.requests[1]["messages"] if m["role"] == "assistant")
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert [m["tool_call_id"] for m in tool_messages(server.requests[1])] == ids


async def test_forced_tool_choice_named_then_auto(scripted, make_reach):
    server = scripted([ToolCalls([Call("add", {"a": 1, "b": 2})]), Answer("{add}")])
    result = await make_reach(server.url).run("1+2", tool_choice="add")
    assert result.text == "3"
    assert server.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert server.requests[1]["tool_choice"] == "auto"

    server = scripted([ToolCalls([Call("add", {"a": 1, "b": 2})]), Answer("{add}")])
    await make_reach(server.url).run("1+2", tool_choice="required")
    assert [r["tool_choice"] for r in server.requests] == ["required", "auto"]


async def test_unknown_tool_gets_an_error_and_the_model_continues(scripted, make_reach):
    server = scripted(
        [ToolCalls([Call("launch_rocket", {"target": "moon"})]), Answer("I cannot do that.")]
    )
    result = await make_reach(server.url).run("launch")
    assert result.outcome == "answered"
    assert result.results[0].error.code == "unknown_tool"
    [msg] = tool_messages(server.requests[1])
    assert json.loads(msg["content"])["error"]["code"] == "unknown_tool"


async def test_invalid_json_arguments_reach_the_model_as_an_error(scripted, make_reach):
    server = scripted(
        [
            ToolCalls([Call("add", '{"a": 1, "b": ')]),
            ToolCalls([Call("add", {"a": 1, "b": 2})]),
            Answer("{add}"),
        ]
    )
    result = await make_reach(server.url).run("1+2")
    assert [r.error.code if r.error else "ok" for r in result.results] == ["invalid_json", "ok"]
    assert (
        "not valid JSON"
        in json.loads(tool_messages(server.requests[1])[0]["content"])["error"]["message"]
    )
    assert result.text == "3"


async def test_arguments_failing_validation_then_a_corrected_call(scripted, make_reach):
    server = scripted(
        [
            ToolCalls([Call("get_weather", {"city": "Atlantis"})]),
            ToolCalls([Call("get_weather", {"city": "北京"})]),
            WEATHER_ANSWER,
        ]
    )
    result = await make_reach(server.url).run("weather?")
    first, second = result.results
    assert first.error.code == "invalid_arguments" and "北京" in first.error.message
    assert second.ok
    # the model saw the validation message before it corrected the call
    assert "one of 北京, 上海" in tool_messages(server.requests[1])[0]["content"]
    assert result.text.startswith("北京 21 °C")


async def test_schema_violation_is_reported_before_the_connector_runs(scripted, make_reach):
    server = scripted(
        [
            ToolCalls([Call("add", {"a": "one", "b": 2})]),
            ToolCalls([Call("add", {"a": 1, "b": 2})]),
            Answer("{add}"),
        ]
    )
    result = await make_reach(server.url).run("1+2")
    assert result.results[0].error.code == "invalid_arguments"
    assert result.text == "3"


async def test_max_steps_outcome(scripted, make_reach):
    server = scripted([ToolCalls([Call("add", {"a": i, "b": 1})]) for i in range(5)])
    result = await make_reach(server.url).run("count", max_steps=3)
    assert result.outcome == "max_steps"
    assert len(server.requests) == 3
    assert "3 model steps" in result.error


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_connection_refused_names_the_endpoint(make_reach):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = await make_reach(url).run("hi")
    assert result.outcome == "model_error"
    assert url in result.error and "running" in result.error
    assert "Traceback" not in result.error


@pytest.mark.parametrize(
    ("fail", "expected"),
    [
        (
            Fail(429, "Rate limit reached for requests", retry_after=1),
            ["HTTP 429", "rate limiting"],
        ),
        (Fail(500, "The server had an error"), ["HTTP 500", "The server had an error"]),
        (Fail(404, "The model does not exist"), ["HTTP 404", "scripted-test"]),
        (Fail(400, "tools are not supported"), ["HTTP 400", 'mode = "tagged"']),
    ],
)
async def test_endpoint_errors_end_the_run_clearly(scripted, make_reach, fail, expected):
    server = scripted([fail])
    result = await make_reach(server.url).run("hi")
    assert result.outcome == "model_error"
    assert server.url in result.error
    for text in expected:
        assert text in result.error


async def test_wrong_api_key_says_what_to_check(scripted, make_reach):
    server = scripted([Answer("never")])
    result = await make_reach(server.url, api_key="sk-wrong").run("hi")
    assert result.outcome == "model_error"
    assert "HTTP 401" in result.error and "OPENAI_API_KEY" in result.error


async def test_slow_endpoint_times_out(scripted, make_reach):
    server = scripted([Answer("late", delay=3)])
    result = await make_reach(server.url, timeout=0.3).run("hi")
    assert result.outcome == "model_error"
    assert "did not answer within 0.3 s" in result.error and server.url in result.error


async def test_run_deadline_cuts_a_slow_model_short(scripted, make_reach):
    server = scripted([Answer("late", delay=3)])
    result = await make_reach(server.url).run("hi", deadline=0.4)
    assert result.outcome in ("deadline", "model_error")
    assert "0.4" in result.error


async def test_tagged_mode_for_models_without_tool_calling(scripted, make_reach):
    server = scripted(
        [
            ToolCalls(
                [Call("get_weather", {"city": "北京"}), Call("add", {"a": 2, "b": 2})],
                text="Let me check.",
            ),
            Answer("北京 {get_weather[temperature]}, 2+2={add}"),
        ]
    )
    result = await make_reach(server.url, mode="tagged").run("北京天气？2+2？", tool_choice="get_weather")
    assert result.outcome == "answered", result.error
    assert result.text == "北京 21 °C, 2+2=4"
    first, second = server.requests
    assert "tools" not in first and "tool_choice" not in first
    system = first["messages"][0]
    assert (
        system["role"] == "system"
        and "<tool_call>" in system["content"]
        and "get_weather" in system["content"]
    )
    assert all(m["role"] != "tool" for m in second["messages"])
    assert "<tool_result" in second["messages"][-1]["content"]
    assert result.steps[0].text == "Let me check."


async def test_tagged_mode_unreadable_call_is_sent_back(scripted, make_reach):
    server = scripted(
        [
            ToolCalls([Call("add", '{"a": 1,')]),
            ToolCalls([Call("add", {"a": 1, "b": 2})]),
            Answer("{add}"),
        ]
    )
    result = await make_reach(server.url, mode="tagged").run("1+2")
    assert result.text == "3"
    assert result.steps[0].feedback and "could not be read" in result.steps[0].feedback[0]
    assert "could not be read" in server.requests[1]["messages"][-1]["content"]


def test_settings_fall_back_to_the_openai_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1234/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    s = OpenAISettings()
    assert s.effective_base_url() == "http://127.0.0.1:1234/v1"
    assert s.effective_api_key() == "sk-env"
    assert OpenAISettings(api_key="sk-own").effective_api_key() == "sk-own"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert OpenAISettings(base_url="http://127.0.0.1:11434/v1").effective_api_key() == "not-needed"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert OpenAISettings().effective_api_key() is None
    with pytest.raises(ValueError, match="http"):
        OpenAISettings(base_url="127.0.0.1:1234")


async def test_missing_key_for_openai_is_a_clear_model_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    adapter = OpenAIAdapter(OpenAISettings())
    from reach_core.adapter import ModelError

    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        await adapter.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}], tools=[]))


def test_scripted_server_streams_for_sdk_clients(scripted):
    server = scripted([ToolCalls([Call("add", {"a": 1, "b": 2}), Call("add", {"a": 3, "b": 4})])])
    client = openai.OpenAI(base_url=server.url, api_key="sk-test-scripted", max_retries=0)
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    stream = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "add"}],
        tools=tools,
        stream=True,
        stream_options={"include_usage": True},
    )
    calls, usage = {}, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                calls[tc.index] = (tc.function.name, json.loads(tc.function.arguments))
    assert calls == {0: ("add", {"a": 1, "b": 2}), 1: ("add", {"a": 3, "b": 4})}
    assert usage is not None and usage.prompt_tokens > 0
    assert client.models.list().data[0].id == "reach-scripted"


def test_run_sync_can_be_called_again_in_a_script(scripted, make_reach):
    server = scripted([Answer("hello")])
    reach = make_reach(server.url)
    # each run_sync has its own event loop; the adapter must not reuse a pool from a closed one
    assert [reach.run_sync("hi").text for _ in range(2)] == ["hello", "hello"]
