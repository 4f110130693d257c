"""Real parts shared by the three bridge plugins' tests (reach-langchain,
reach-pydantic-ai, reach-openai-agents): the local weather service and the
scripted OpenAI-compatible model server (both on 127.0.0.1), and a Reach holding
reach-weather, reach-audit and the bridge under test, with its state in ``tmp_path``.

Each bridge's ``tests/conftest.py`` imports these fixtures and defines ``bridge``:
``(plugin name, plugin module, API key its scripted server accepts)``. They are
test code of this repository (the bridges' tests run from a checkout), not part of
any distribution.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
import reach_audit.plugin as audit_plugin
import reach_weather.plugin as weather_plugin
from reach_openai.scripted import ScriptedModelServer, scripted_servers
from reach_weather.demo_server import DemoServer, start_demo_server

from reach_core import Reach, connector

__all__ = ["delete_city", "make_reach", "saver", "scripted", "weather_service"]


@connector(risk="dangerous")
def delete_city(city: str) -> str:
    """Delete a city from the weather service (dangerous: needs a person's approval).

    Args:
        city: the city to delete
    """
    return f"deleted {city}"


@pytest.fixture
def weather_service() -> Iterator[DemoServer]:
    with start_demo_server() as server:
        yield server


@pytest.fixture
def scripted(bridge: tuple[str, Any, str]) -> Iterator[Callable[..., ScriptedModelServer]]:
    with scripted_servers(api_key=bridge[2]) as start:
        yield start


@pytest.fixture
async def make_reach(tmp_path, weather_service, bridge) -> AsyncIterator[Callable[..., Reach]]:
    made: list[Reach] = []
    name, module, _ = bridge

    def make(config: dict[str, Any] | None = None, *, confirm: bool = False) -> Reach:
        """``confirm=True`` adds reach-confirm (reach's own approval queue)."""
        cfg: dict[str, Any] = {
            "reach": {"data_dir": str(tmp_path / "data")},
            "plugins": {"reach-weather": weather_service.settings(), "reach-audit": {"log": "off"}},
        }
        for key, value in (config or {}).items():
            cfg.setdefault(key, {}).update(value)
        plugins: list[Any] = [("reach-weather", weather_plugin), ("reach-audit", audit_plugin)]
        if confirm:
            import reach_confirm.plugin

            plugins.append(("reach-confirm", reach_confirm.plugin))
        reach = Reach(cfg, plugins=[*plugins, (name, module)], strict=True)
        reach.register(delete_city)
        made.append(reach)
        return reach

    yield make
    for reach in made:
        await reach.aclose()


@pytest.fixture
def saver(make_reach: Callable[..., Reach]) -> tuple[Reach, list[str]]:
    """A Reach holding one write, ``save(target)``, and the list of targets it saved: a call
    the bridge should have refused shows up there."""
    saved: list[str] = []

    @connector(risk="write", name="save")
    def save(target: str) -> str:
        """Save a target (a write: counted by the test).

        Args:
            target: what to save
        """
        saved.append(target)
        return f"saved {target}"

    reach = make_reach()
    reach.register(save)
    return reach, saved
