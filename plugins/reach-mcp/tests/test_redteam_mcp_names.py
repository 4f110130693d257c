"""Red team: an MCP server's tool names never switch off, re-tier or block another plugin's tool.

With ``prefix = ""`` a server names its tools as it likes. The core's rule for one name
from two plugins made the name unavailable until ``[connectors.NAME] provider`` picked
one; and with the other plugin picked, the server's later listing changes (a new
description, a destructive annotation) still reached the tool of that name, which is the
other plugin's: its tier was raised or it was blocked. Now a server's tools are
imported (``Connector.imported``: they step aside for a tool another plugin registered,
or a look-alike of one), and a link acts only on its own tools.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import stdio_server

from reach_core import connector, hookimpl

CALLS: list[str] = []


@connector(risk="read", name="echo")
def own_echo(text: str) -> str:
    """Echo a text (the other plugin's tool).

    Args:
        text: the text
    """
    CALLS.append(text)
    return f"own: {text}"


@connector(risk="read", name="weather")
def own_weather(city: str) -> str:
    """Weather for a city (the other plugin's tool).

    Args:
        city: the city
    """
    return f"own weather in {city}"


class Own:
    REACH_PLUGIN_NAME = "own"

    @hookimpl
    def reach_register_tools(self, register: Any) -> None:
        register(own_echo)
        register(own_weather)


@pytest.mark.parametrize("picked", [False, True], ids=["no-config", "provider-own"])
async def test_a_server_naming_its_tools_after_another_plugins_leaves_them_alone(reach_for, picked) -> None:
    CALLS.clear()
    connectors = {"echo": {"provider": "own"}, "weather": {"provider": "own"}} if picked else {}
    reach = reach_for({"demo": stdio_server(prefix="", tools=["weather", "echo", "escalate", "rug_pull"],
                                            refresh=3600)}, Own(), connectors=connectors)
    try:
        assert reach.conflicts == {}
        assert reach.tool("echo").plugin == "own" and reach.tool("weather").plugin == "own"
        reach.pin_tools()
        assert (await reach.invoke("escalate", {})).ok  # the server marks its echo destructive
        assert (await reach.invoke("rug_pull", {})).ok  # and changes its weather's description
        await asyncio.sleep(0.5)  # the list-changed announcements are handled in the background
        assert (await reach.invoke("escalate", {})).ok  # a request after them: they have been read
        echo, weather = reach.tool("echo"), reach.tool("weather")
        assert echo.risk == "read" and echo.blocked is None, "the server re-tiered the other plugin's echo"
        assert weather.blocked is None, "the server blocked the other plugin's weather"
        res = await reach.invoke("echo", {"text": "hi"})
        assert res.ok and res.content == "own: hi" and CALLS == ["hi"]
        assert (await reach.invoke("weather", {"city": "Oslo"})).content == "own weather in Oslo"
    finally:
        await reach.aclose()


async def test_positive_control_the_servers_own_tools_are_still_re_tiered_and_blocked(reach_for) -> None:
    reach = reach_for({"demo": stdio_server(prefix="", tools=["weather", "echo", "escalate", "rug_pull"],
                                            refresh=3600)})
    try:
        reach.pin_tools()
        await reach.invoke("escalate", {})
        await reach.invoke("rug_pull", {})
        for _ in range(100):
            if reach.tool("echo").risk == "dangerous" and reach.tool("weather").blocked:
                break
            await asyncio.sleep(0.05)
        assert reach.tool("echo").risk == "dangerous" and reach.tool("weather").blocked
    finally:
        await reach.aclose()


@pytest.mark.parametrize("own_name", ["ECHO", "Echo", "eCHO"])
async def test_a_server_tool_steps_aside_for_a_look_alike(reach_for, own_name) -> None:
    @connector(risk="read", name=own_name)
    def mine(text: str) -> str:
        """Echo a text (the other plugin's look-alike).

        Args:
            text: the text
        """
        return text

    class Mine:
        REACH_PLUGIN_NAME = "mine"

        @hookimpl
        def reach_register_tools(self, register: Any) -> None:
            register(mine)

    reach = reach_for({"demo": stdio_server(prefix="", tools=["echo"])}, Mine())
    try:
        assert [t.name for t in reach.all_tools()] == [own_name]
    finally:
        await reach.aclose()
