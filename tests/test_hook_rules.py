"""One test per hook's exception rule (the rules are written in ``reach_core.hookspecs``):
a plugin whose hook raises, and what the user sees."""

from __future__ import annotations

from typing import Any

import pytest

from reach_core import ConfigError, ConnectorError, Denied, InvalidArguments, hookimpl
from reach_core.connectors import connector
from reach_core.hooks import HookCaller, chain, each, pending
from reach_core.hookspecs import Confirmer, Parser, Selector
from reach_core.testing import make_reach


@connector(risk="read")
def echo(text: str) -> str:
    """Return the text."""
    return text


class Tools:
    @hookimpl
    def reach_register_tools(self, register: Any) -> None:
        register(echo)


class Boom(RuntimeError):
    pass


class Raises:
    """A plugin whose ``hook`` raises ``exc``; ``seen`` records the hooks that ran."""

    def __init__(self, hook: str, exc: BaseException) -> None:
        def raiser(*args: Any, **kwargs: Any) -> None:  # takes no argument of the spec
            raise exc

        setattr(self, hook, hookimpl(raiser))


class Seen:
    """Records which hooks it saw; implements every runtime hook after the raising one."""

    REACH_HOOK_PRIORITY = {"reach_pre_validate": 200, "reach_pre_invoke": 200, "reach_post_invoke": 200,
                           "reach_format_error": 200, "reach_tool_progress": 200}

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def reach_pre_validate(self, call: Any) -> None:
        self.seen.append("pre_validate")

    @hookimpl
    def reach_pre_invoke(self, call: Any) -> None:
        self.seen.append("pre_invoke")

    @hookimpl
    def reach_post_invoke(self, result: Any) -> None:
        self.seen.append(f"post_invoke:{result.ok}")

    @hookimpl
    def reach_format_error(self, error: Any) -> None:
        self.seen.append("format_error")

    @hookimpl
    def reach_tool_progress(self, event: Any) -> None:
        self.seen.append("progress")

    @hookimpl
    def reach_confirmation(self, event: Any) -> None:
        self.seen.append("confirmation")

    @hookimpl
    def reach_startup(self) -> None:
        self.seen.append("startup")

    @hookimpl
    def reach_shutdown(self) -> None:
        self.seen.append("shutdown")


def _events(caplog: Any, name: str) -> list[dict[str, Any]]:
    return [r.reach_event for r in caplog.records if getattr(r, "reach_event", {}).get("event") == name]


def _calls(seen: Seen) -> list[str]:
    """The runtime hooks ``seen`` saw (start-up left out)."""
    return [s for s in seen.seen if s != "startup"]


def build(tmp_path: Any, hook: str, exc: BaseException, **kw: Any) -> tuple[Any, Seen]:
    seen = Seen()
    # "a-raises" sorts before "z-seen": among equal priorities the raising plugin runs first
    r = make_reach(("tools", Tools()), ("a-raises", Raises(hook, exc)), ("z-seen", seen), data_dir=tmp_path, **kw)
    return r, seen


# ------------------------------------------------------------------ runtime hooks


async def test_pre_validate_toolfailure_refuses_the_call_and_post_invoke_still_runs(tmp_path):
    r, seen = build(tmp_path, "reach_pre_validate", InvalidArguments("text", "a greeting", "hi"))
    result = await r.invoke("echo", {"text": "x"})
    assert not result.ok and result.error.code == "invalid_arguments"
    # later pre_validate, pre_invoke and the tool did not run
    assert _calls(seen) == ["format_error", "post_invoke:False"]


async def test_pre_validate_bug_is_execution_failed_and_logged(tmp_path, caplog):
    r, seen = build(tmp_path, "reach_pre_validate", Boom("bad plugin"))
    with caplog.at_level("ERROR", logger="reach"):
        result = await r.invoke("echo", {"text": "x"})
    assert not result.ok and result.error.code == "execution_failed"
    assert "internal error in reach" in result.error.message and "bad plugin" not in result.error.message
    assert _events(caplog, "reach.pipeline_error")
    assert _calls(seen) == ["format_error", "post_invoke:False"]


async def test_pre_invoke_denied_refuses_and_the_tool_does_not_run(tmp_path):
    r, seen = build(tmp_path, "reach_pre_invoke", Denied("not today"))
    result = await r.invoke("echo", {"text": "x"})
    assert not result.ok and result.error.code == "denied" and "not today" in result.error.message
    assert _calls(seen) == ["pre_validate", "format_error", "post_invoke:False"]


async def test_pre_invoke_bug_is_execution_failed(tmp_path, caplog):
    r, seen = build(tmp_path, "reach_pre_invoke", Boom("oops"))
    with caplog.at_level("ERROR", logger="reach"):
        result = await r.invoke("echo", {"text": "x"})
    assert result.error.code == "execution_failed"
    assert _events(caplog, "reach.pipeline_error")
    assert _calls(seen) == ["pre_validate", "format_error", "post_invoke:False"]


async def test_post_invoke_failure_is_logged_skipped_and_the_others_still_run(tmp_path, caplog):
    r, seen = build(tmp_path, "reach_post_invoke", Boom("shaper broke"))
    with caplog.at_level("ERROR", logger="reach"):
        result = await r.invoke("echo", {"text": "x"})
    assert result.ok and result.content == "x"  # the caller never sees the exception
    assert _calls(seen) == ["pre_validate", "pre_invoke", "post_invoke:True"]
    [event] = _events(caplog, "reach.post_invoke_error")
    assert event["plugin"] == "a-raises" and "shaper broke" in event["error"]


async def test_format_error_failure_keeps_the_core_message_and_asks_no_one_else(tmp_path, caplog):
    r, seen = build(tmp_path, "reach_format_error", Boom("formatter broke"))
    with caplog.at_level("ERROR", logger="reach"):
        result = await r.invoke("nope", {})
    assert result.error.code == "unknown_tool" and "there is no tool called 'nope'" in result.error.message
    assert "format_error" not in seen.seen
    assert _events(caplog, "reach.format_error_failed")


async def test_tool_progress_observer_failure_is_logged_and_the_call_goes_on(tmp_path, caplog):
    r, seen = build(tmp_path, "reach_tool_progress", Boom("observer"))
    await r.start()
    from reach_core.context import CallContext

    ctx = CallContext(r.runtime, r.tool("echo"), "default", None, "c1", "t1")
    with caplog.at_level("ERROR", logger="reach"):
        await ctx.report_progress(1, 2, "half")
    assert seen.seen[-1] == "progress"  # the later observer ran
    [event] = _events(caplog, "reach.observer_error")
    assert event["hook"] == "reach_tool_progress" and event["plugin"] == "a-raises"
    await r.aclose()


async def test_confirmation_observer_failure_never_reaches_the_caller(tmp_path, caplog):
    r, seen = build(tmp_path, "reach_confirmation", Boom("chat down"))
    with caplog.at_level("ERROR", logger="reach"):
        await r.notify("reach_confirmation", event={"kind": "requested"}, ctx=None, reach=r)
    assert seen.seen == ["confirmation"]
    assert _events(caplog, "reach.observer_error")


async def test_run_step_observer_failure_is_logged(tmp_path, caplog):
    r, seen = build(tmp_path, "reach_run_step", Boom("dashboard down"))
    with caplog.at_level("ERROR", logger="reach"):
        await r.notify("reach_run_step", step=object(), ctx=object())
    [event] = _events(caplog, "reach.observer_error")
    assert event["hook"] == "reach_run_step"


# ------------------------------------------------------------------ lifecycle and set-up hooks


async def test_startup_failure_reaches_the_caller_and_the_reach_stays_unstarted(tmp_path):
    r, seen = build(tmp_path, "reach_startup", Boom("no database"))
    with pytest.raises(Boom, match="no database"):
        await r.invoke("echo", {"text": "x"})
    assert not r.started
    assert "startup" not in seen.seen  # registered after the raising plugin: not run


async def test_shutdown_failure_reaches_the_caller(tmp_path):
    r, seen = build(tmp_path, "reach_shutdown", Boom("flush failed"))
    await r.start()
    with pytest.raises(Boom, match="flush failed"):
        await r.aclose()
    assert "shutdown" not in seen.seen


def test_register_tools_connector_error_fails_only_that_plugin(tmp_path):
    r, _ = build(tmp_path, "reach_register_tools", ConnectorError("bad schema"))
    info = {p.name: p for p in r.plugin_info}
    assert info["a-raises"].status == "failed" and "bad schema" in info["a-raises"].reason
    assert info["tools"].status == "loaded" and [t.name for t in r.all_tools()] == ["echo"]


def test_register_tools_error_under_strict_reaches_the_caller(tmp_path):
    with pytest.raises(ConnectorError, match="bad schema"):
        build(tmp_path, "reach_register_tools", ConnectorError("bad schema"), strict=True)


def test_register_tools_config_error_always_reaches_the_caller(tmp_path):
    with pytest.raises(ConfigError, match="missing key"):
        build(tmp_path, "reach_register_tools", ConfigError("missing key"))


def test_register_providers_failure_fails_only_that_plugin(tmp_path):
    r, _ = build(tmp_path, "reach_register_selectors", ValueError("no model file"))
    info = {p.name: p for p in r.plugin_info}
    assert info["a-raises"].status == "failed" and "no model file" in info["a-raises"].reason


def test_plugin_settings_failure_reaches_the_caller(tmp_path):
    with pytest.raises(Boom):
        build(tmp_path, "reach_plugin_settings", Boom("cannot import model"))


# ------------------------------------------------------------------ the caller's rules themselves


def _caller(*plugins: Any) -> HookCaller:
    r = make_reach(*plugins)
    return r.runtime.hooks


async def test_chain_and_each_stay_synchronous_when_no_implementation_waits():
    class Plain:
        @hookimpl
        def reach_post_invoke(self, result: Any) -> Any:
            return result + 1

    class Async:
        @hookimpl
        async def reach_post_invoke(self, result: Any) -> Any:
            return result * 10

    impls = _caller(("p", Plain())).impls["reach_post_invoke"]
    out = chain(impls, (None, None, 1, None), 2)
    assert not pending(out) and out == 2
    assert each(impls, (None, None, 1, None)) is None
    impls = _caller(("p", Plain()), ("q", Async())).impls["reach_post_invoke"]
    out = chain(impls, (None, None, 1, None), 2)
    assert pending(out) and await out == 20


def test_the_strategy_protocols_describe_the_built_ins():
    from reach_core.calls import TaggedParser

    assert isinstance(TaggedParser(), Parser)
    assert not isinstance(object(), Selector) and not isinstance(object(), Confirmer)


def test_register_commands_failure_warns_naming_the_plugin_and_the_others_still_load(monkeypatch):
    """``reach_register_commands``: rule ``setup``; one plugin that raises gets a warning on
    stderr naming it, and the other plugins' commands are still there."""
    import click
    import pluggy
    from click.testing import CliRunner

    from reach_core import cli as cli_module
    from reach_core import hookspecs

    class Broken:
        @hookimpl
        def reach_register_commands(self, cli):
            raise RuntimeError("no commands today")

    class Good:
        @hookimpl
        def reach_register_commands(self, cli):
            @cli.command("good-hello")
            def hello() -> None:
                click.echo("hello from good")

    pm = pluggy.PluginManager("reach")
    pm.add_hookspecs(hookspecs)
    pm.register(Broken(), name="reach-broken-commands")
    pm.register(Good(), name="reach-good-commands")

    class Found:
        pass

    found = Found()
    found.pm = pm  # type: ignore[attr-defined]
    monkeypatch.setattr(cli_module, "_inventory", lambda ctx, quiet=False: found)
    group = cli_module.ReachGroup(name="reach", commands=dict(cli_module.cli.commands))
    out = CliRunner().invoke(group, ["good-hello"])
    assert out.exit_code == 0, out.output
    assert "hello from good" in out.stdout
    assert "warning: plugin reach-broken-commands could not add commands: no commands today" in out.stderr


class FullArgsPost:
    """Plain (sync, every argument) post-invoke hooks: the pipeline calls them directly."""

    def __init__(self, name: str, mode: str, log: list[str]) -> None:
        self.REACH_PLUGIN_NAME = name
        self.mode, self.log = mode, log

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: Any, ctx: Any) -> Any:
        self.log.append(f"{self.mode}:{result.content}")
        if self.mode == "raise":
            raise Boom("plain shaper broke")
        if self.mode == "awaitable":  # a sync function may hand back an awaitable: it is awaited
            async def later() -> Any:
                result.content = f"{result.content}+later"
                return result
            return later()
        if self.mode == "replace":
            result.content = f"{result.content}+replaced"
            return result
        return None


@pytest.mark.parametrize("order", [["raise", "replace"], ["replace", "raise"], ["awaitable", "replace"],
                                   ["raise", "awaitable", "replace"], ["none", "raise", "none"]])
async def test_plain_post_invoke_hooks_chain_and_one_that_raises_is_skipped(tmp_path, caplog, order):
    log: list[str] = []
    plugins = [FullArgsPost(f"p{i}", mode, log) for i, mode in enumerate(order)]
    r = make_reach(Tools(), *plugins, data_dir=tmp_path)
    with caplog.at_level("ERROR", logger="reach"):
        result = await r.invoke("echo", {"text": "x"})
    assert result.ok
    expected = "x"
    for mode in order:
        if mode == "awaitable":
            expected += "+later"
        elif mode == "replace":
            expected += "+replaced"
    assert result.content == expected
    assert len(log) == len(order)  # every hook ran, whichever raised
    failures = _events(caplog, "reach.post_invoke_error")
    assert [e["plugin"] for e in failures] == [p.REACH_PLUGIN_NAME for p in plugins if p.mode == "raise"]
    await r.aclose()
