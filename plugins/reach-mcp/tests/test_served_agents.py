"""Served over MCP, a client gets exactly its agent's rights, never ``default``'s by mistake.

reach gives an agent it has no ``[agents.NAME]`` table for the ``default`` agent's
rights. A token mapped to a misspelt agent (``"suport"``, ``"Support"``, a trailing
space, a Cyrillic ``ѕ``, a zero-width space) therefore served that client every tool
``default`` may use, while the restricted ``[agents.support]`` was meant: a config
typo that widened rights instead of failing. ``build_server`` (stdio and HTTP) now
refuses such names with a ``ConfigError``; ``default`` may still be named explicitly.
The served path is also checked to apply the same policy and confirmation as
``reach.invoke``: what the agent may not use is neither listed nor run, a tool that
needs a person is not run unattended, and look-alike tool names find nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from reach_mcp.server import build_server, http_app
from reach_mcp.settings import ClientEntry, ServeSettings

from reach_core import ConfigError, connector
from reach_core.testing import make_reach

ran: list[str] = []


@connector(risk="read")
def weather(city: str) -> str:
    """The weather in a city."""
    ran.append(f"weather:{city}")
    return "sunny"


@connector(risk="write")
def send_mail(to: str) -> str:
    """Send a mail."""
    ran.append(f"send_mail:{to}")
    return "sent"


@connector(risk="dangerous")
def wipe(target: str) -> str:
    """Wipe a target."""
    ran.append(f"wipe:{target}")
    return "wiped"


AGENTS = {"support": {"allow": ["weather"]}, "ops": {"max_tier": "write"}}


@pytest.fixture
def reach(tmp_path):
    ran.clear()
    r = make_reach(config={"agents": AGENTS}, data_dir=tmp_path / "data")
    for c in (weather, send_mail, wipe):
        r.register(c)
    return r


TYPOS = ["suport", "Support", "SUPPORT", "support ", " support", "support\u200b", "\u0455upport", "supp0rt",
         "support\t", "", "Default", "default ", "DEFAULT", "ops\u00a0", "оps"]


def test_control_a_name_without_a_table_gets_defaults_rights(reach) -> None:
    """Why this is a hole: the misspelt agent sees what `support` may not."""
    assert {t.name for t in reach.select(agent="support")} == {"weather"}
    assert "send_mail" in {t.name for t in reach.select(agent="suport")}


@pytest.mark.parametrize("name", TYPOS)
@pytest.mark.parametrize("where", ["tokens", "clients", "anonymous_agent"])
def test_http_refuses_an_agent_without_a_table(reach, name: str, where: str) -> None:
    if where == "tokens":
        settings = ServeSettings(tokens={"tok-0123456789": name})
    elif where == "clients":
        settings = ServeSettings(clients=[ClientEntry(token="tok-0123456789", agent=name)])
    else:
        settings = ServeSettings(tokens={"tok-0123456789": "support"}, anonymous_agent=name)
    with pytest.raises(ConfigError, match=r"no \[agents\..*\] table"):
        http_app(reach, settings)
    with pytest.raises(ConfigError):
        build_server(reach, settings, from_request=True)


@pytest.mark.parametrize("name", TYPOS)
def test_stdio_refuses_an_agent_without_a_table(reach, name: str) -> None:
    with pytest.raises(ConfigError, match="default"):
        build_server(reach, ServeSettings(), agent=name)


def test_the_message_names_the_close_agent(reach) -> None:
    with pytest.raises(ConfigError, match="did you mean 'support'"):
        build_server(reach, ServeSettings(tokens={"tok-0123456789": "Support"}), from_request=True)


@pytest.mark.parametrize("settings", [
    ServeSettings(), ServeSettings(tokens={"tok-0123456789": "support"}),
    ServeSettings(tokens={"tok-0123456789": "default"}, anonymous_agent="ops"),
    ServeSettings(clients=[ClientEntry(token="tok-0123456789", agent="ops")], anonymous_agent="default"),
])
def test_named_agents_and_default_are_served(reach, settings: ServeSettings) -> None:
    http_app(reach, settings)
    build_server(reach, settings, agent=None)
    build_server(reach, settings, agent="support")
    build_server(reach, settings, agent="default")


def _error(res: Any) -> dict[str, Any]:
    assert res.is_error, res
    return res.structured_content["error"]


async def test_served_support_gets_only_its_tools(reach) -> None:
    async with Client(build_server(reach, ServeSettings(), agent="support"), cache=None) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"weather"}
        assert not (await client.call_tool("weather", {"city": "Bern"})).is_error
        for name, args in [("send_mail", {"to": "x@example.com"}), ("wipe", {"target": "all"})]:
            assert _error(await client.call_tool(name, args))["code"] == "denied"
    assert ran == ["weather:Bern"]


@pytest.mark.parametrize("agent", [None, "ops", "default"])
async def test_served_dangerous_tool_needs_a_person(reach, agent: str | None) -> None:
    async with Client(build_server(reach, ServeSettings(), agent=agent), cache=None) as client:
        err = _error(await client.call_tool("wipe", {"target": "all"}))
    assert err["code"] == "denied" and ("approval" in err["message"] or "not available" in err["message"])
    assert ran == []


@pytest.mark.parametrize("name", ["WIPE", "Wipe", "wipe ", " wipe", "wipe\u200b", "ｗｉｐｅ", "wіpe", "wipe\x00",
                                  "send_mail\u200b", "SEND_MAIL", "weather/../wipe", "w*", "wip?"])
async def test_look_alike_tool_names_find_nothing(reach, name: str) -> None:
    async with Client(build_server(reach, ServeSettings(), agent="support"), cache=None) as client:
        err = _error(await client.call_tool(name, {"target": "all", "to": "x", "city": "y"}))
    assert err["code"] in ("unknown_tool", "denied"), err
    assert ran == []
