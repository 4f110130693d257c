"""The agent loop (reach.run) against an in-process adapter and real connectors.

The adapter here is a stand-in for a model only; the tools, the pipeline and
the policy are the real ones. The wire-level adapter (real openai SDK over
HTTP) is tested in plugins/reach-openai.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from reach_core import ConfigError, Reach, connector, hookimpl
from reach_core.adapter import ModelError, ModelRequest, ModelResponse, ModelToolCall, Usage
from reach_core.loop import DEFAULT_SYSTEM_HINT, RunResult

Reply = Callable[[ModelRequest], ModelResponse]


class ScriptAdapter:
    """Answers each step with the next reply; records every request."""

    name = "script"

    def __init__(self, *replies: Reply | ModelResponse) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    def describe(self) -> str:
        return "script adapter"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        return reply(request) if callable(reply) else reply


def calls(*specs: tuple[str, Any], id_prefix: str = "c") -> ModelResponse:
    return ModelResponse(
        tool_calls=[
            ModelToolCall(
                f"{id_prefix}{i}", name, args if isinstance(args, str) else json.dumps(args)
            )
            for i, (name, args) in enumerate(specs)
        ],
        usage=Usage(100, 10, 40),
    )


def answer(text: str) -> ModelResponse:
    return ModelResponse(text=text, usage=Usage(120, 20, 90))


def offered(request: ModelRequest) -> list[str]:
    return [t["function"]["name"] for t in request.tools]


@pytest.fixture
def seen() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def reach(tmp_path, seen) -> Reach:
    r = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])

    @connector(risk="read")
    async def get_weather(city: str, ctx=None) -> dict[str, Any]:
        """Current weather in a city.

        Args:
            city: the city
        """
        seen.append(
            {"tool": "get_weather", "run_id": ctx.run_id if ctx else None, "t": time.perf_counter()}
        )
        await asyncio.sleep(0.2)
        return {"city": city, "temperature": "21 °C"}

    @connector(risk="read")
    async def add(a: int, b: int, ctx=None) -> int:
        """Add two integers.

        Args:
            a: first
            b: second
        """
        seen.append({"tool": "add", "run_id": ctx.run_id if ctx else None})
        await asyncio.sleep(0.2)
        return a + b

    @connector(risk="read")
    def mul(a: int, b: int) -> int:
        """Multiply two integers.

        Args:
            a: first
            b: second
        """
        seen.append({"tool": "mul"})
        return a * b

    for c in (get_weather, add, mul):
        r.register(c)
    return r


async def test_plain_answer_needs_one_step(reach):
    model = ScriptAdapter(answer("Hello."))
    result = await reach.run("Say hello", adapter=model)
    assert isinstance(result, RunResult)
    assert (result.outcome, result.text, result.error) == ("answered", "Hello.", None)
    assert len(result.steps) == 1
    assert [m["role"] for m in result.messages] == ["user", "assistant"]
    assert offered(model.requests[0]) == ["get_weather", "add", "mul"]


async def test_tool_calls_run_in_parallel_and_results_reach_the_model(reach, seen):
    model = ScriptAdapter(
        calls(("get_weather", {"city": "北京"}), ("add", {"a": 2, "b": 3})), answer("done")
    )
    t0 = time.perf_counter()
    result = await reach.run("weather and a sum", adapter=model)
    elapsed = time.perf_counter() - t0
    assert result.outcome == "answered"
    assert elapsed < 0.38, "two 0.2 s tools must run concurrently"
    assert [r.ok for r in result.results] == [True, True]
    assert result.results[1].content == 5
    tool_msgs = [m for m in model.requests[1].messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c0", "c1"]
    assert json.loads(tool_msgs[0]["content"]) == {"city": "北京", "temperature": "21 °C"}
    assert "北京" in tool_msgs[0]["content"], "non-ASCII stays readable (ensure_ascii=False)"
    assert result.usage == Usage(220, 30, 130)
    assert [s.usage for s in result.steps] == [Usage(100, 10, 40), Usage(120, 20, 90)]
    assert result.steps[0].tools_ms >= 150


async def test_one_run_id_covers_every_call(reach, seen):
    model = ScriptAdapter(
        calls(("add", {"a": 1, "b": 1})),
        calls(("get_weather", {"city": "x"}), id_prefix="d"),
        answer("ok"),
    )
    result = await reach.run("go", adapter=model, run_id="run-fixed")
    assert result.run_id == "run-fixed"
    assert {s["run_id"] for s in seen} == {"run-fixed"}
    assert len(seen) == 2
    assert {r.run_id for r in model.requests} == {"run-fixed"}


async def test_max_steps_is_an_outcome_not_an_exception(reach):
    model = ScriptAdapter(
        lambda req: calls(("mul", {"a": req.step, "b": 2}), id_prefix=f"s{req.step}_")
    )
    result = await reach.run("loop forever", adapter=model, max_steps=3)
    assert result.outcome == "max_steps"
    assert "3 model steps" in (result.error or "")
    assert len(result.steps) == 3 and len(model.requests) == 3
    # the calls of the last step still ran, so the transcript is complete
    assert result.messages[-1]["role"] == "tool"
    assert [r.content for r in result.results] == [2, 4, 6]


async def test_forced_tool_choice_applies_to_the_first_step_only(reach):
    model = ScriptAdapter(calls(("mul", {"a": 2, "b": 2})), answer("4"))
    await reach.run("two times two", adapter=model, tool_choice="mul")
    assert model.requests[0].tool_choice == {"type": "function", "function": {"name": "mul"}}
    assert model.requests[1].tool_choice == "auto"

    model = ScriptAdapter(calls(("mul", {"a": 2, "b": 2})), answer("4"))
    await reach.run(
        "two times two", adapter=model, tool_choice="required", force_every_step=True, max_steps=2
    )
    assert [r.tool_choice for r in model.requests] == ["required", "required"]


async def test_unknown_forced_tool_is_a_programming_error(reach):
    with pytest.raises(ConfigError, match="nope"):
        await reach.run("x", adapter=ScriptAdapter(answer("x")), tool_choice="nope")


class OnlyAddSelector:
    """A selector that keeps `add` only and counts how often it is asked."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def select(self, query: str, tools: list[Any], ctx: Any, limit: int) -> list[str]:
        self.queries.append(query)
        return [t.name for t in tools if t.name == "add"]


def selector_plugin(selector: OnlyAddSelector) -> Any:
    class Plugin:
        REACH_PLUGIN_NAME = "test-selector"

        @hookimpl
        def reach_register_selectors(self, register):
            register("only-add", selector)

    return Plugin()


async def test_forced_tool_is_offered_even_when_the_selector_drops_it(tmp_path):
    selector = OnlyAddSelector()
    r = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[selector_plugin(selector)])

    @connector(risk="read")
    def add(a: int, b: int) -> int:
        """Add.

        Args:
            a: first
            b: second
        """
        return a + b

    @connector(risk="read")
    def mul(a: int, b: int) -> int:
        """Multiply.

        Args:
            a: first
            b: second
        """
        return a * b

    r.register(add)
    r.register(mul)
    model = ScriptAdapter(calls(("mul", {"a": 3, "b": 3})), answer("9"))
    result = await r.run("multiply three by three", adapter=model, tool_choice="mul")
    assert offered(model.requests[0]) == ["mul", "add"]
    # stable within the run: the second step offers exactly the same tools, in the same order
    assert offered(model.requests[1]) == ["mul", "add"]
    assert selector.queries == ["multiply three by three"]
    assert result.results[0].content == 9

    # a new user message selects again
    model = ScriptAdapter(answer("ok"))
    await r.run([*result.messages, {"role": "user", "content": "and now add"}], adapter=model)
    assert selector.queries[-1] == "and now add"
    assert offered(model.requests[0]) == ["add"]


async def test_unknown_tool_and_invalid_json_go_back_to_the_model(reach):
    model = ScriptAdapter(
        calls(("launch_rocket", {}), ("add", '{"a": 1,'), ("add", {"a": "one", "b": 2})),
        calls(("add", {"a": 1, "b": 2}), id_prefix="fix"),
        answer("3"),
    )
    result = await reach.run("add one and two", adapter=model)
    assert result.outcome == "answered"
    codes = [r.error.code if r.error else None for r in result.results]
    assert codes == ["unknown_tool", "invalid_json", "invalid_arguments", None]
    errors = [json.loads(m["content"]) for m in model.requests[1].messages if m["role"] == "tool"]
    assert [e["error"]["code"] for e in errors] == [
        "unknown_tool",
        "invalid_json",
        "invalid_arguments",
    ]
    assert result.results[-1].content == 3


async def test_tools_argument_restricts_the_run(reach, seen):
    model = ScriptAdapter(calls(("mul", {"a": 2, "b": 2}), ("add", {"a": 1, "b": 1})), answer("ok"))
    result = await reach.run("x", adapter=model, tools=["add"])
    assert offered(model.requests[0]) == ["add"]
    assert [s["tool"] for s in seen] == ["add"], "a tool outside tools=[...] never runs"
    assert result.results[0].error.code == "unknown_tool"
    assert "add" in result.results[0].error.message
    with pytest.raises(ConfigError, match="not registered"):
        await reach.run("x", adapter=model, tools=["nope"])


async def test_deadline_bounds_the_run(reach):
    async def slow(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(5)
        return answer("late")

    class Slow(ScriptAdapter):
        async def complete(self, request):
            self.requests.append(request)
            return await slow(request)

    model = Slow()
    t0 = time.perf_counter()
    result = await reach.run("x", adapter=model, deadline=0.3)
    assert time.perf_counter() - t0 < 1.5
    assert result.outcome == "deadline"
    assert "0.3 s" in (result.error or "")
    assert model.requests[0].timeout is not None and model.requests[0].timeout <= 0.3


async def test_model_failures_end_the_run_with_a_clear_message(reach):
    class Down(ScriptAdapter):
        async def complete(self, request):
            raise ModelError(
                "cannot connect to the model endpoint http://127.0.0.1:9/v1; check the server"
            )

    result = await reach.run("x", adapter=Down())
    assert result.outcome == "model_error"
    assert "http://127.0.0.1:9/v1" in result.error

    class Buggy(ScriptAdapter):
        async def complete(self, request):
            raise RuntimeError("boom")

    result = await reach.run("x", adapter=Buggy())
    assert result.outcome == "model_error"
    assert "RuntimeError: boom" in result.error and "Traceback" not in result.error


async def test_run_step_hook_and_on_step_see_every_step(tmp_path):
    steps: list[tuple[int, str, list[str]]] = []

    class Observer:
        REACH_PLUGIN_NAME = "test-observer"

        @hookimpl
        def reach_run_step(self, step, ctx):
            steps.append((step.index, ctx.run_id, [r.name for r in step.results]))

    r = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[Observer()])

    @connector(risk="read")
    def mul(a: int, b: int) -> int:
        """Multiply.

        Args:
            a: first
            b: second
        """
        return a * b

    r.register(mul)
    seen_steps = []
    result = await r.run(
        "x",
        adapter=ScriptAdapter(calls(("mul", {"a": 1, "b": 2})), answer("2")),
        on_step=seen_steps.append,
    )
    assert steps == [(1, result.run_id, ["mul"]), (2, result.run_id, [])]
    assert [s.index for s in seen_steps] == [1, 2]


async def test_system_hint_is_optional_and_configurable(tmp_path, reach):
    model = ScriptAdapter(answer("ok"))
    await reach.run("x", adapter=model)
    assert model.requests[0].messages[0]["role"] == "user"
    await reach.run("x", adapter=model, system_hint=True)
    assert model.requests[1].messages[0] == {"role": "system", "content": DEFAULT_SYSTEM_HINT}
    configured = Reach(
        {"reach": {"data_dir": str(tmp_path), "system_hint": "Use tools."}}, plugins=[]
    )
    await configured.run("x", adapter=model)
    assert model.requests[2].messages[0] == {"role": "system", "content": "Use tools."}
    # the caller's own system message wins
    await configured.run(
        [{"role": "system", "content": "mine"}, {"role": "user", "content": "x"}], adapter=model
    )
    assert [m["content"] for m in model.requests[3].messages if m["role"] == "system"] == ["mine"]


async def test_repeated_call_ids_are_made_unique_within_a_run(reach):
    model = ScriptAdapter(
        calls(("mul", {"a": 1, "b": 1})), calls(("mul", {"a": 2, "b": 2})), answer("ok")
    )
    result = await reach.run("x", adapter=model)
    ids = [r.call_id for r in result.results]
    assert len(set(ids)) == 2 and ids[0] == "c0"
    assert [r.content for r in result.results] == [1, 4]


def adapter_plugin(made: list[Any]) -> Any:
    class Plugin:
        REACH_PLUGIN_NAME = "test-adapter"

        @hookimpl
        def reach_register_adapters(self, register):
            def factory(reach, settings):
                adapter = ScriptAdapter(answer("from the factory"))
                made.append(adapter)
                return adapter

            register("script", factory)

    return Plugin()


async def test_configured_adapter_factory_is_built_once(tmp_path):
    made: list[Any] = []
    r = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[adapter_plugin(made)])
    first = await r.run("x")
    second = await r.run("y")
    assert first.text == second.text == "from the factory"
    assert len(made) == 1
    assert first.adapter == "script adapter"


async def test_no_adapter_installed_says_what_to_install(reach):
    with pytest.raises(ConfigError, match="reach-openai"):
        await reach.run("x")


def test_run_sync_for_scripts(reach):
    result = reach.run_sync("hi", adapter=ScriptAdapter(answer("hello")))
    assert result.text == "hello"


async def test_deadline_during_tools_keeps_the_transcript_well_formed(tmp_path):
    r = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])

    @connector(risk="read")
    async def slow_lookup(q: str) -> str:
        """Look something up slowly.

        Args:
            q: what
        """
        await asyncio.sleep(3)
        return q

    r.register(slow_lookup)
    observed = []
    t0 = time.perf_counter()
    result = await r.run(
        "x",
        adapter=ScriptAdapter(calls(("slow_lookup", {"q": "a"}))),
        deadline=0.3,
        on_step=observed.append,
    )
    assert time.perf_counter() - t0 < 2
    assert result.outcome == "deadline" and "tools were running" in result.error
    assert result.messages[-1]["role"] == "tool"
    assert result.results[0].error.code == "timeout"  # a read cut off by the run's deadline
    assert [s.index for s in observed] == [1], "observers hear of the cut-off step too"
    assert observed[0].error == result.error


async def test_result_can_offer_tools_for_next_step(tmp_path):
    """A post-invoke plugin (shaping, find_tools) can ask for tools from the next step on."""
    from reach_core import hookimpl

    class Offer:
        REACH_PLUGIN_NAME = "offer"

        @hookimpl
        def reach_post_invoke(self, call, tool, result, ctx):
            if call.name == "search_docs":
                result.meta["offer_tools"] = ["read_page", "secret_tool"]

        @hookimpl
        def reach_register_selectors(self, register):
            class OnlySearch:
                def select(self, query, tools, ctx, limit):
                    return ["search_docs"]

            register("only-search", OnlySearch())

    r = Reach({"reach": {"data_dir": str(tmp_path)}, "agents": {"default": {"deny": ["secret_tool"]}}},
              plugins=[Offer()])

    @connector(risk="read")
    def search_docs(q: str) -> str:
        """Search docs. Use when asked."""
        return "found page 7"

    @connector(risk="read")
    def read_page(n: int) -> str:
        """Read a page. Use when asked."""
        return "page"

    @connector(risk="read")
    def secret_tool() -> str:
        """Secret. Use never."""
        return "x"

    for c in (search_docs, read_page, secret_tool):
        r.register(c)
    adapter = ScriptAdapter(calls(("search_docs", {"q": "x"})), answer("done"))
    result = await r.run("find it", adapter=adapter)
    assert result.outcome == "answered"
    assert offered(adapter.requests[0]) == ["search_docs"]
    assert offered(adapter.requests[1]) == ["search_docs", "read_page"]  # denied tools never offered
