"""Hook order, combination rules, sync and async implementations, strategies."""

from __future__ import annotations

import pytest

from reach_core import ConfigError, Denied, NeedsConfirmation, ToolResult, hookimpl
from reach_core.testing import HookRecorder, make_reach


class Plugin:
    """A local plugin class, as pytest's own tests write them."""

    def __init__(self, name, priority=None, **hooks):
        self.REACH_PLUGIN_NAME = name
        if priority:
            self.REACH_HOOK_PRIORITY = priority
        for hook, fn in hooks.items():
            setattr(self, hook, hookimpl(fn))


def _reach(tmp_path, *plugins, config=None):
    from reach_test_support import GetWeather, add

    reach = make_reach(*plugins, config=config, data_dir=tmp_path / "d")
    reach.register(add)
    reach.register(GetWeather())
    return reach


async def test_pre_validate_is_chained(tmp_path):
    def first(call, tool, ctx):
        return {**call.arguments, "a": call.arguments["a"] + 10}

    async def second(call, tool, ctx):  # async implementation, sees the first one's output
        return {**call.arguments, "b": call.arguments["b"] * 2}

    reach = _reach(tmp_path, Plugin("p1", reach_pre_validate=first), Plugin("p2", reach_pre_validate=second))
    res = await reach.invoke("add", {"a": 1, "b": 3})
    assert res.content == 11 + 6


async def test_pre_validate_output_is_validated(tmp_path):
    reach = _reach(tmp_path, Plugin("p1", reach_pre_validate=lambda call, tool, ctx: {"a": "oops", "b": 1}))
    res = await reach.invoke("add", {"a": 1, "b": 3})
    assert res.error.code == "invalid_arguments"


async def test_pre_invoke_all_run_and_any_may_deny(tmp_path):
    seen = []

    def watcher(call, tool, ctx):
        seen.append(tool.name)

    async def guard(call, tool, ctx):
        if call.arguments.get("a") == 13:
            raise Denied("13 is unlucky; pick another number")

    reach = _reach(tmp_path, Plugin("a-watch", reach_pre_invoke=watcher), Plugin("b-guard", reach_pre_invoke=guard))
    ok = await reach.invoke("add", {"a": 1, "b": 1})
    denied = await reach.invoke("add", {"a": 13, "b": 1})
    assert ok.ok and denied.error.code == "denied" and "unlucky" in denied.error.message
    assert seen == ["add", "add"]


async def test_needs_confirmation_from_hook(tmp_path):
    def ask(call, tool, ctx):
        raise NeedsConfirmation("add 1 and 1", confirmation_id="c-1")

    reach = _reach(tmp_path, Plugin("confirmer", reach_pre_invoke=ask))
    res = await reach.invoke("add", {"a": 1, "b": 1})
    assert res.error.code == "needs_confirmation"
    assert res.meta["confirmation_id"] == "c-1" and "c-1" in res.error.message


async def test_post_invoke_chained_and_sees_failures(tmp_path):
    def double(call, tool, result, ctx):
        if result.ok:
            return ToolResult(result.call_id, result.name, True, result.content * 2, None, 0, result.trace_id)
        return None

    seen = []

    async def audit(call, tool, result, ctx):
        seen.append((call.name, result.ok, result.content, result.error.code if result.error else None))

    reach = _reach(
        tmp_path,
        Plugin("z-shape", {"reach_post_invoke": 50}, reach_post_invoke=double),
        Plugin("a-audit", {"reach_post_invoke": 90}, reach_post_invoke=audit),
    )
    assert (await reach.invoke("add", {"a": 1, "b": 2})).content == 6
    await reach.invoke("nope", {})
    assert seen == [("add", True, 6, None), ("nope", False, None, "unknown_tool")]
    assert reach.hook_order("reach_post_invoke") == ["z-shape", "a-audit"]


async def test_hook_order_config_override(tmp_path):
    order = []
    p1 = Plugin("one", reach_post_invoke=lambda call, tool, result, ctx: order.append("one"))
    p2 = Plugin("two", reach_post_invoke=lambda call, tool, result, ctx: order.append("two"))
    reach = _reach(tmp_path, p1, p2, config={"hooks": {"reach_post_invoke": ["two", "one"]}})
    await reach.invoke("add", {"a": 1, "b": 2})
    assert order == ["two", "one"]
    with pytest.raises(ConfigError, match="ghost"):
        _reach(tmp_path, p1, p2, config={"hooks": {"reach_post_invoke": ["ghost"]}})


async def test_hooks_disabled_per_plugin_keeps_tools(tmp_path):
    from reach_core import connector

    calls = []

    class Both:
        REACH_PLUGIN_NAME = "both"

        @hookimpl
        def reach_register_tools(self, register):
            @connector(risk="read")
            def say_hi() -> str:
                """Say hi. Use when greeting."""
                return "hi"

            register(say_hi)

        @hookimpl
        def reach_post_invoke(self, call, tool, result, ctx):
            calls.append(call.name)

    reach = make_reach(Both(), config={"plugins": {"both": {"hooks_disabled": ["reach_post_invoke"]}}},
                       data_dir=tmp_path)
    assert (await reach.invoke("say_hi", {})).content == "hi"
    assert calls == []


async def test_format_error_first_non_none_and_strategy(tmp_path):
    p1 = Plugin("fmt-a", reach_format_error=lambda call, error, ctx: None)
    p2 = Plugin("fmt-b", reach_format_error=lambda call, error, ctx: f"B says: {error.code}")
    p3 = Plugin("fmt-c", reach_format_error=lambda call, error, ctx: f"C says: {error.code}")
    reach = _reach(tmp_path, p1, p2, p3)
    assert (await reach.invoke("nope", {})).error.message == "B says: unknown_tool"
    reach = _reach(tmp_path, p1, p2, p3, config={"strategies": {"error_formatter": "fmt-c"}})
    assert (await reach.invoke("nope", {})).error.message == "C says: unknown_tool"


async def test_hook_recorder_sees_pipeline_order(tmp_path):
    rec = HookRecorder()
    reach = _reach(tmp_path, rec)
    await reach.invoke("add", {"a": 1, "b": 2})
    assert rec.names() == ["reach_pre_validate", "reach_pre_invoke", "reach_post_invoke"]


async def test_broken_post_hook_does_not_break_call(tmp_path):
    def boom(call, tool, result, ctx):
        raise RuntimeError("observer bug")

    reach = _reach(tmp_path, Plugin("buggy", reach_post_invoke=boom))
    assert (await reach.invoke("add", {"a": 1, "b": 2})).content == 3


def test_each_reach_has_its_own_manager(tmp_path):
    rec = HookRecorder()
    r1 = _reach(tmp_path, rec)
    r2 = _reach(tmp_path)
    assert r1.runtime.pm is not r2.runtime.pm
    assert r2.hook_order("reach_pre_invoke") == []


class _Sel:
    def __init__(self, order):
        self.order = order

    def select(self, query, tools, ctx, limit):
        return [n for n in self.order if n in {t.name for t in tools}][:limit]


def test_one_of_strategy_picked_by_config(tmp_path):
    p1 = Plugin("sel-one", reach_register_selectors=lambda register: register("alpha", _Sel(["add", "get_weather"])))
    p2 = Plugin("sel-two", reach_register_selectors=lambda register: register("beta", _Sel(["get_weather", "add"])))
    only = _reach(tmp_path, p1)
    assert [t["function"]["name"] for t in only.tools(query="x", limit=1)] == ["add"]
    both = _reach(tmp_path, p1, p2)
    with pytest.raises(ConfigError, match="choose one"):
        both.tools(query="x", limit=1)
    chosen = _reach(tmp_path, p1, p2, config={"strategies": {"selector": "beta"}})
    assert [t["function"]["name"] for t in chosen.tools(query="x", limit=1)] == ["get_weather"]
    with pytest.raises(ConfigError, match="no installed plugin"):
        _reach(tmp_path, p1, config={"strategies": {"selector": "gamma"}}).tools(query="x", limit=1)


def test_pinned_tools_always_offered(tmp_path):
    p1 = Plugin("sel-one", reach_register_selectors=lambda register: register("alpha", _Sel(["add", "get_weather"])))
    reach = _reach(tmp_path, p1, config={"agents": {"default": {"pinned": ["get_weather"]}}})
    names = [t["function"]["name"] for t in reach.tools(query="sum", limit=1)]
    assert names == ["get_weather"] or set(names) == {"get_weather", "add"}
    assert "get_weather" in names
