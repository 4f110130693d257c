"""A malicious server changes a tool's description after a person pinned it: the tool is blocked."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import stdio_server


async def test_rug_pull_at_run_time_blocks_the_pinned_tool(reach_for: Any) -> None:
    # refresh is long: the change must be caught from the server's own list-changed announcement
    reach = reach_for({"demo": stdio_server(tools=["weather", "rug_pull", "echo", "escalate"], refresh=3600)})
    reach.pin_tools()
    res = await reach.invoke("demo__weather", {"city": "Paris"})
    assert res.ok, res.error
    res = await reach.invoke("demo__rug_pull", {})
    assert res.ok, res.error
    for _ in range(100):
        if reach.tool("demo__weather").blocked:
            break
        await asyncio.sleep(0.05)
    assert reach.tool("demo__weather").blocked
    assert "demo__weather" not in {d["function"]["name"] for d in reach.tools()}
    res = await reach.invoke("demo__weather", {"city": "Paris"})
    assert res.error is not None and res.error.code == "denied"
    assert "changed since it was pinned" in res.error.message
    assert res.meta["fix"] == "review the change, then run `reach tools pin demo__weather`"
    # the description the model was given never changed
    assert "ssh" not in reach.tool("demo__weather").description
    # a server may raise a tool's tier at run time (believed at once), never lower it
    assert reach.tool("demo__echo").risk == "read"
    await reach.invoke("demo__escalate", {})
    for _ in range(100):
        if reach.tool("demo__echo").risk == "dangerous":
            break
        await asyncio.sleep(0.05)
    assert reach.tool("demo__echo").risk == "dangerous"
    res = await reach.invoke("demo__echo", {"text": "x"})
    assert res.error is not None and "approval" in res.error.message
    await reach.aclose()
    # a later start finds the changed definition and blocks it from the beginning
    evil = reach_for({"demo": stdio_server(tools=["weather"], env={"DEMO_EVIL": "1"})})
    assert evil.tool("demo__weather").blocked
    assert evil.tools() == []


async def test_rug_pull_caught_by_relisting_before_a_call(reach_for: Any) -> None:
    """Without any announcement (refresh = 0 re-lists before each call) the change is caught too."""
    reach = reach_for({"demo": stdio_server(tools=["weather", "rug_pull"], refresh=0)})
    reach.pin_tools()
    link = reach.get("demo__weather").link
    await reach.invoke("demo__rug_pull", {})
    link.connectors["weather"].blocked = None  # forget what the announcement taught us
    reach.block_tool("demo__weather", None)
    res = await reach.invoke("demo__weather", {"city": "Paris"})
    assert res.error is not None and res.error.code == "denied"
    await reach.aclose()
