"""Every error code the pipeline produces, and what the model is told."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest

from reach_core import (
    BusinessError,
    Connector,
    InvalidArguments,
    NotFound,
    RateLimited,
    RetryableError,
    ToolCallError,
    connector,
)
from reach_core.testing import make_reach


def _make(tmp_path, *connectors, config=None):
    cfg = {"reach": {"retry_backoff": 0.001}}
    cfg.update(config or {})
    reach = make_reach(config=cfg, data_dir=tmp_path / "d")
    for c in connectors:
        reach.register(c)
    return reach


class Raiser(Connector):
    description = "Raises what it is told. Use when testing."

    def __init__(self, name, exc, risk="read"):
        self.name, self.exc, self.risk = name, exc, risk
        self.calls = 0

    async def execute(self, params):
        self.calls += 1
        exc = copy.copy(self.exc)
        exc.details = dict(getattr(self.exc, "details", {}) or {})
        raise exc


async def test_ok_result_and_message(reach):
    res = await reach.invoke("get_weather", {"city": "北京"})
    assert res.ok and res.error is None
    assert res.content == {"city": "北京", "temperature": 21, "unit": "celsius"}  # default filled in
    msg = res.to_message()
    assert msg["role"] == "tool" and msg["tool_call_id"] == res.call_id
    assert msg["content"] == '{"city":"北京","temperature":21,"unit":"celsius"}'  # compact, not escaped
    assert res.elapsed_ms > 0 and res.trace_id


async def test_unknown_tool_suggests_close_names(reach):
    res = await reach.invoke("get_wether", {"city": "x"})
    assert not res.ok and res.error.code == "unknown_tool"
    assert res.error.message == "there is no tool called 'get_wether'; did you mean get_weather?"


async def test_invalid_json(reach):
    res = await reach.invoke({"id": "c1", "function": {"name": "add", "arguments": '{"a": 1,'}})
    assert res.error.code == "invalid_json"
    assert res.call_id == "c1"
    assert "JSON" in res.error.message


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"a": "one", "b": 2}, "`a` must be an integer"),
        ({"a": 1}, "missing required field: `b`"),
        ('[1, 2]', "JSON object"),
        ('"text"', "JSON object"),
    ],
)
async def test_invalid_arguments(reach, args, needle):
    res = await reach.invoke("add", args)
    assert res.error.code == "invalid_arguments"
    assert needle in res.error.message


async def test_enum_message_lists_choices(reach):
    res = await reach.invoke("get_weather", {"city": "x", "unit": "kelvin"})
    assert res.error.code == "invalid_arguments"
    assert "`unit` must be one of celsius, fahrenheit" in res.error.message


async def test_format_checked_with_example(tmp_path):
    @connector(risk="read")
    def book_day(date: str) -> str:
        """Book a day. Use when asked."""
        return date

    book_day.input_schema["properties"]["date"]["format"] = "date"
    reach = _make(tmp_path, book_day)
    res = await reach.invoke("book_day", {"date": "明天"})
    assert res.error.code == "invalid_arguments"
    assert res.error.message.startswith('`date` must be YYYY-MM-DD, e.g. 2024-05-01; you sent "明天"')
    assert (await reach.invoke("book_day", {"date": "2024-05-01"})).ok


@pytest.mark.parametrize("fmt,bad,good", [
    ("email", "not-an-email", "ann@example.com"),
    ("uuid", "123", "123e4567-e89b-12d3-a456-426614174000"),
    ("date-time", "yesterday", "2024-05-01T09:30:00Z"),
])
async def test_other_formats(tmp_path, fmt, bad, good):
    class F(Connector):
        name = "take_value"
        description = "Takes a value. Use when testing."
        risk = "read"
        input_schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}, "required": ["v"]}

        async def execute(self, params):
            return params["v"]

    reach = _make(tmp_path, F())
    bad_res = await reach.invoke("take_value", {"v": bad})
    assert bad_res.error.code == "invalid_arguments" and "`v` must be" in bad_res.error.message
    assert (await reach.invoke("take_value", {"v": good})).ok


async def test_null_optional_treated_as_absent(reach):
    res = await reach.invoke("get_weather", {"city": "x", "unit": None})
    assert res.ok and res.content["unit"] == "celsius"


async def test_null_kept_when_schema_allows(tmp_path):
    class N(Connector):
        name = "echo_note"
        description = "Echo. Use when testing."
        risk = "read"
        input_schema = {"type": "object", "properties": {"note": {"type": ["string", "null"]}}}

        async def execute(self, params):
            return {"has_note": "note" in params, "note": params.get("note")}

    reach = _make(tmp_path, N())
    res = await reach.invoke("echo_note", {"note": None})
    assert res.content == {"has_note": True, "note": None}


@pytest.mark.parametrize("raw", ["", None, "null", "{}"])
async def test_empty_arguments(tmp_path, raw):
    @connector(risk="read")
    def ping_server() -> str:
        """Ping. Use when testing."""
        return "pong"

    reach = _make(tmp_path, ping_server)
    res = await reach.invoke({"id": "p", "name": "ping_server", "arguments": raw})
    assert res.ok and res.content == "pong"


async def test_oversized_and_deep_arguments(tmp_path, reach):
    big = json.dumps({"a": 1, "b": 2, "pad": "x" * 2_000_000})
    res = await reach.invoke("add", big)
    assert res.error.code == "invalid_arguments" and "limit" in res.error.message
    deep = '{"a": 1, "b": 2, "x": ' + "[" * 5000 + "]" * 5000 + "}"
    res = await reach.invoke("add", deep)
    assert res.error.code == "invalid_arguments" and "nested deeper" in res.error.message
    deep_dict: dict = {}
    cur = deep_dict
    for _ in range(100):
        cur["n"] = {}
        cur = cur["n"]
    res = await reach.invoke("add", {"a": 1, "b": 2, "x": deep_dict})
    assert res.error.code == "invalid_arguments"


async def test_caps_configurable(tmp_path):
    reach = _make(tmp_path, config={"reach": {"max_argument_bytes": 20, "retry_backoff": 0.001}})
    from reach_test_support import add

    reach.register(add)
    res = await reach.invoke("add", json.dumps({"a": 1, "b": 2, "c": "x" * 30}))
    assert res.error.code == "invalid_arguments"


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (NotFound("order 42"), "not_found"),
        (BusinessError("account is frozen"), "execution_failed"),
        (InvalidArguments("date", "YYYY-MM-DD", "2024-05-01"), "invalid_arguments"),
        (RateLimited(retry_after=30), "rate_limited"),
        (RetryableError("upstream 503"), "upstream_unavailable"),
    ],
)
async def test_connector_failures_map_to_codes(tmp_path, exc, code):
    reach = _make(tmp_path, Raiser("fail_now", exc))
    res = await reach.invoke("fail_now", {})
    assert res.error.code == code
    assert res.error.message == exc.message
    if code == "rate_limited":
        assert res.error.retry_after == 30


async def test_business_error_never_retried(tmp_path):
    tool = Raiser("refuse_now", BusinessError("no"))
    reach = _make(tmp_path, tool)
    await reach.invoke("refuse_now", {})
    assert tool.calls == 1


async def test_retryable_retried_for_idempotent_only(tmp_path):
    read = Raiser("read_flaky", RetryableError("503"), risk="read")
    write = Raiser("write_flaky", RetryableError("503"), risk="write")
    reach = _make(tmp_path, read, write)
    r1 = await reach.invoke("read_flaky", {})
    r2 = await reach.invoke("write_flaky", {})
    assert read.calls == 4 and r1.meta["attempts"] == 4  # 1 + max_retries
    assert write.calls == 1 and r2.error.code == "upstream_unavailable"


async def test_error_dict_is_business_error(tmp_path):
    @connector(risk="read")
    def lookup_user(user: str) -> dict:
        """Look up. Use when testing."""
        return {"error": "user is archived"}

    reach = _make(tmp_path, lookup_user)
    res = await reach.invoke("lookup_user", {"user": "x"})
    assert res.error.code == "execution_failed" and res.error.message == "user is archived"


async def test_unexpected_exception_is_model_safe(tmp_path, capsys):
    tool = Raiser("crash_now", KeyError("secret-internal-detail"))
    reach = _make(tmp_path, tool)
    res = await reach.invoke("crash_now", {})
    assert res.error.code == "execution_failed"
    assert "internal error" in res.error.message and "do not resend" in res.error.message
    assert "secret-internal-detail" not in res.to_json()
    assert "KeyError" not in res.to_json()
    assert tool.calls == 1


async def test_timeout_read_and_outcome_unknown_write(tmp_path):
    class Slow(Connector):
        description = "Slow. Use when testing."
        timeout = 0.2
        max_retries = 0

        def __init__(self, name, risk):
            self.name, self.risk = name, risk
            self.calls = 0

        async def execute(self, params):
            self.calls += 1
            await asyncio.sleep(5)

    read, write = Slow("slow_read", "read"), Slow("slow_write", "write")
    reach = _make(tmp_path, read, write)
    r1, r2 = await asyncio.gather(reach.invoke("slow_read", {}), reach.invoke("slow_write", {}))
    assert r1.error.code == "timeout"
    assert r2.error.code == "outcome_unknown" and "may or may not" in r2.error.message
    assert write.calls == 1
    assert r1.elapsed_ms < 1500 and r2.elapsed_ms < 1500


async def test_sync_connector_runs_off_loop(tmp_path):
    import threading

    main = threading.get_ident()

    @connector(risk="read")
    def where_am_i() -> bool:
        """Report the thread. Use when testing."""
        return threading.get_ident() != main

    reach = _make(tmp_path, where_am_i)
    assert (await reach.invoke("where_am_i", {})).content is True


async def test_dangerous_denied_without_confirmer(tmp_path):
    tool = Raiser("wipe_disk", RuntimeError("must not run"), risk="dangerous")
    reach = _make(tmp_path, tool)
    res = await reach.invoke("wipe_disk", {})
    assert res.error.code == "denied"
    assert "approval" in res.error.message
    assert "reach-confirm" in res.meta["fix"]
    assert tool.calls == 0


async def test_dangerous_runs_when_agent_allows(tmp_path):
    @connector(risk="dangerous")
    def wipe_cache() -> str:
        """Wipe. Use when testing."""
        return "wiped"

    reach = _make(tmp_path, wipe_cache, config={"agents": {"default": {"auto_tier": "dangerous"}}})
    assert (await reach.invoke("wipe_cache", {})).content == "wiped"


async def test_denied_by_agent_policy_everywhere(tmp_path):
    from reach_test_support import GetWeather, add

    reach = _make(tmp_path, add, GetWeather(), config={"agents": {"kid": {"deny": ["get_*"]}}})
    assert [t["function"]["name"] for t in reach.tools(agent="kid")] == ["add"]
    res = await reach.invoke("get_weather", {"city": "x"}, agent="kid")
    assert res.error.code == "denied"
    # unknown_tool suggestions never reveal tools this agent may not use
    res = await reach.invoke("get_weathr", {"city": "x"}, agent="kid")
    assert res.error.code == "unknown_tool" and "get_weather" not in res.error.message


async def test_allow_list_by_tag(tmp_path):
    from reach_test_support import GetWeather, add

    reach = _make(tmp_path, add, GetWeather(), config={"agents": {"calc": {"allow": ["tag:computation"]}}})
    assert [t["function"]["name"] for t in reach.tools(agent="calc")] == ["add"]
    assert (await reach.invoke("add", {"a": 1, "b": 1}, agent="calc")).ok
    assert (await reach.invoke("get_weather", {"city": "x"}, agent="calc")).error.code == "denied"


async def test_raise_errors_opt_in(reach):
    with pytest.raises(ToolCallError) as info:
        await reach.invoke("add", {"a": "x"}, raise_errors=True)
    assert info.value.result.error.code == "invalid_arguments"


async def test_invoke_many_keeps_order_and_runs_concurrently(tmp_path):
    class Sleep(Connector):
        name = "wait_for"
        description = "Sleep. Use when testing."
        risk = "read"
        input_schema = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}

        async def execute(self, params):
            await asyncio.sleep(params["s"])
            return params["s"]

    reach = _make(tmp_path, Sleep())
    calls = [{"id": str(i), "name": "wait_for", "arguments": json.dumps({"s": 0.2 - i * 0.05})} for i in range(4)]
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    results = await reach.invoke_many(calls)
    assert loop.time() - t0 < 0.45
    assert [r.call_id for r in results] == ["0", "1", "2", "3"]


async def test_invoke_many_limit_and_mixed_failures(tmp_path):
    running = 0
    peak = 0

    class Count(Connector):
        name = "count_up"
        description = "Count. Use when testing."
        risk = "read"

        async def execute(self, params):
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.02)
            running -= 1
            return 1

    reach = _make(tmp_path, Count())
    calls = [{"id": str(i), "name": "count_up", "arguments": "{}"} for i in range(12)]
    calls.append({"id": "bad", "name": "nope", "arguments": "{}"})
    results = await reach.invoke_many(calls)
    assert peak <= 5
    assert [r.ok for r in results] == [True] * 12 + [False]
    assert results[-1].error.code == "unknown_tool"


async def test_seed_article_shorthand(reach):
    res = await reach.invoke("get_weather", {"city": "北京"})
    assert res.ok


async def test_openai_sdk_tool_call_object(reach):
    from openai.types.chat import ChatCompletionMessageToolCall

    call = ChatCompletionMessageToolCall(
        id="call_abc", type="function", function={"name": "add", "arguments": '{"a": 2, "b": 3}'}
    )
    res = await reach.invoke(call)
    assert res.ok and res.content == 5 and res.call_id == "call_abc"
