"""Red team (issue 20's class, on reach-serve): a misspelt agent name never widens rights.

reach gives an agent without an ``[agents.NAME]`` table the ``default`` agent's rights.
reach-serve mapped tokens to any name, so ``tokens = { "tok-…" = "suport" }`` next to a
restricted ``[agents.support]`` served that client every tool ``default`` may use (and
so did a misspelt ``anonymous_agent``), without a word. reach-mcp's server refused
this; reach-serve now refuses it when the app is built. Families: case, spaces,
zero-width and look-alike letters, digits for letters, an empty name, ``Default``; in
``tokens``, ``clients``, ``anonymous_agent`` and ``operators``. Honest names (and
``default`` named on purpose) still serve.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from reach_serve.app import build_app
from reach_serve.settings import ClientEntry, ServeHttpSettings

from reach_core import ConfigError, connector
from reach_core.testing import make_reach


@connector(risk="read")
def weather(city: str) -> str:
    """The weather in a city."""
    return "sunny"


@connector(risk="write")
def send_mail(to: str) -> str:
    """Send a mail."""
    return "sent"


AGENTS = {"support": {"allow": ["weather"]}, "ops": {"max_tier": "write"}}
TOKEN = "tok-0123456789"


@pytest.fixture
def reach(tmp_path: Any) -> Any:
    r = make_reach(config={"agents": AGENTS}, data_dir=tmp_path / "data")
    for c in (weather, send_mail):
        r.register(c)
    return r


TYPOS = ["suport", "Support", "SUPPORT", "support ", " support", "support\u200b", "\u0455upport", "supp0rt",
         "support\t", "", "Default", "default ", "DEFAULT", "ops\u00a0", "\u043eps", "s\u00adupport", "ｓupport"]


def test_control_a_name_without_a_table_gets_defaults_rights(reach: Any) -> None:
    """Why this is a hole: the misspelt agent sees what `support` may not."""
    assert {t.name for t in reach.select(agent="support")} == {"weather"}
    assert "send_mail" in {t.name for t in reach.select(agent="suport")}


def _settings(where: str, name: str) -> ServeHttpSettings:
    if where == "tokens":
        return ServeHttpSettings(tokens={TOKEN: name})
    if where == "clients":
        return ServeHttpSettings(clients=[ClientEntry(token=TOKEN, agent=name)])
    if where == "anonymous_agent":
        return ServeHttpSettings(tokens={TOKEN: "support"}, anonymous_agent=name)
    return ServeHttpSettings(tokens={TOKEN: "ops"}, operators=["ops", name])


@pytest.mark.parametrize("name", TYPOS)
@pytest.mark.parametrize("where", ["tokens", "clients", "anonymous_agent", "operators"])
def test_an_agent_without_a_table_is_a_config_error(reach: Any, name: str, where: str) -> None:
    with pytest.raises(ConfigError, match=r"no \[agents\..*\] table"):
        build_app(reach, _settings(where, name), manage=False)


def test_the_message_names_the_close_agent(reach: Any) -> None:
    with pytest.raises(ConfigError, match="did you mean 'support'"):
        build_app(reach, ServeHttpSettings(tokens={TOKEN: "Support"}), manage=False)


async def test_a_typo_no_longer_serves_defaults_tools(reach: Any) -> None:
    """End to end: before, the client of a misspelt agent listed and ran `send_mail`."""
    try:
        app = build_app(reach, ServeHttpSettings(tokens={TOKEN: "suport"}), manage=False)
    except ConfigError:
        return
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1",
                                 headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        tools = (await client.get("/v1/tools")).text
        ran = await client.post("/v1/invoke", json={"name": "send_mail", "arguments": {"to": "x@example.com"}})
    raise AssertionError(f"served a misspelt agent: tools {tools[:120]}, send_mail {ran.status_code}")


@pytest.mark.parametrize("settings", [
    ServeHttpSettings(), ServeHttpSettings(tokens={TOKEN: "support"}),
    ServeHttpSettings(tokens={TOKEN: "default"}, anonymous_agent="support"),
    ServeHttpSettings(clients=[ClientEntry(token=TOKEN, agent="ops")], anonymous_agent="default", operators=["ops"]),
    ServeHttpSettings(tokens={TOKEN: "support", TOKEN + "-2": "ops"}, operators=["ops"]),
])
async def test_named_agents_and_default_are_served(reach: Any, settings: ServeHttpSettings) -> None:
    app = build_app(reach, settings, manage=False)
    token = next(iter(settings.token_agents()), None)
    if token is None:
        return
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1",
                                 headers={"Authorization": f"Bearer {token}"}) as client:
        r = await client.post("/v1/invoke", json={"name": "weather", "arguments": {"city": "Bern"}})
    assert r.status_code == 200 and r.json()["ok"], r.text
