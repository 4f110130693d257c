"""reach as a client: real MCP servers (stdio subprocess, streamable HTTP) become reach tools."""

from __future__ import annotations

from typing import Any

from conftest import PY, stdio_server

from reach_core import connector
from reach_core.testing import HookRecorder


async def test_stdio_server_tools_run_through_reach(reach_for: Any) -> None:
    reach = reach_for({"demo": stdio_server(), "broken": {"command": PY, "args": ["-c", "raise SystemExit(1)"],
                                                          "connect_timeout": 15}},
                      connectors={"demo__crash": {"max_retries": 0}})
    tools = {t.name: t for t in reach.all_tools()}
    # the broken server is a warning, not a crash: the demo server's tools are all there
    assert {"demo__weather", "demo__echo", "demo__create_note", "demo__delete_all_notes",
            "demo__transfer"} <= set(tools)
    assert not [n for n in tools if n.startswith("broken__")]
    assert (tools["demo__weather"].risk, tools["demo__weather"].idempotent) == ("read", True)
    assert "open_world" in tools["demo__weather"].tags and "mcp:demo" in tools["demo__weather"].tags
    assert (tools["demo__create_note"].risk, tools["demo__create_note"].idempotent) == ("write", True)
    assert tools["demo__delete_all_notes"].risk == "dangerous"
    assert (tools["demo__transfer"].risk, tools["demo__transfer"].idempotent) == ("write", False)
    assert tools["demo__weather"].output_schema["properties"]["temp_c"]["type"] == "number"

    # structuredContent is preferred; non-ASCII text survives
    res = await reach.invoke("demo__weather", {"city": "北京"})
    assert res.ok, res.error
    assert res.content == {"city": "北京", "temp_c": 21.5}
    assert "北京" in res.to_message()["content"]
    # a plain text result
    res = await reach.invoke("demo__echo", {"text": "hello"})
    assert (res.ok, res.content) == (True, "hello")
    # isError -> execution_failed with the server's own explanation, never retried
    res = await reach.invoke("demo__transfer", {"amount": 5})
    assert res.ok and res.content == {"result": "sent #1"}  # the server's own output schema wraps strings
    res = await reach.invoke("demo__transfer", {"amount": 500})
    assert res.error is not None and res.error.code == "execution_failed"
    assert "daily limit of 100" in res.error.message and res.meta["attempts"] == 1
    # reach validates before the server sees anything
    res = await reach.invoke("demo__transfer", {"amount": "lots"})
    assert res.error is not None and res.error.code == "invalid_arguments"
    # a dangerous tool needs a person: without a confirmer it is denied, the server never called
    res = await reach.invoke("demo__delete_all_notes", {})
    assert res.error is not None and res.error.code == "denied" and "approval" in res.error.message
    # the server process dies: retryable failure, and the next call opens a new session
    res = await reach.invoke("demo__crash", {})
    assert res.error is not None and res.error.code == "upstream_unavailable"
    assert "demo" in res.error.message
    res = await reach.invoke("demo__echo", {"text": "back"})
    assert (res.ok, res.content) == (True, "back")
    await reach.aclose()


async def test_http_server_and_every_hook_sees_the_call(reach_for: Any, demo_http: str) -> None:
    recorder = HookRecorder()
    reach = reach_for({"web": {"url": demo_http}}, recorder)
    res = await reach.invoke("web__create_note", {"title": "buy milk"})
    assert res.ok, res.error
    assert res.content == {"id": "n-1", "title": "buy milk"}
    names = [c[0] for c in recorder.calls if c[1] == "web__create_note" or c[0] == "reach_post_invoke"]
    assert names == ["reach_pre_validate", "reach_pre_invoke", "reach_post_invoke"]
    await reach.aclose()


async def test_config_tier_is_never_lowered_by_annotations(reach_for: Any, demo_http: str) -> None:
    reach = reach_for(
        {"web": {"url": demo_http, "min_risk": "write", "tools": ["weather", "echo", "create_note"]}},
        connectors={"web__create_note": {"risk": "dangerous"}},
        agents={"default": {"max_tier": "write"}},
    )
    tools = {t.name: t for t in reach.all_tools()}
    assert set(tools) == {"web__weather", "web__echo", "web__create_note"}  # the `tools` allow-list
    assert tools["web__weather"].risk == "write"  # readOnlyHint is not trusted below min_risk
    assert tools["web__create_note"].risk == "dangerous"  # [connectors] risk has the last word
    offered = {d["function"]["name"] for d in reach.tools()}
    assert "web__create_note" not in offered
    res = await reach.invoke("web__create_note", {"title": "x"})
    assert res.error is not None and res.error.code == "denied"
    await reach.aclose()


def test_unreachable_http_server_is_a_warning(reach_for: Any, capsys: Any, caplog: Any) -> None:
    from conftest import free_port

    @connector(risk="read")
    def ping() -> str:
        """Answer pong. Use to check reach is alive."""
        return "pong"

    with caplog.at_level("WARNING", logger="reach.mcp"):
        reach = reach_for({"gone": {"url": f"http://127.0.0.1:{free_port()}/mcp", "connect_timeout": 3}})
    reach.register(ping)
    assert [t.name for t in reach.all_tools()] == ["ping"]
    (warning,) = [r for r in caplog.records if r.reach_event["event"] == "reach.mcp_server_unavailable"]
    assert warning.levelname == "WARNING" and warning.reach_event["server"] == "gone"
    assert capsys.readouterr() == ("", "")  # a warning for the host's logging, never printed by reach
