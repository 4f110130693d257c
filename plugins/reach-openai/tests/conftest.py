"""Fixtures: a Reach wired to reach-openai and a scripted model server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import reach_openai.plugin
from reach_openai.scripted import ScriptedModelServer, scripted_servers

from reach_core import InvalidArguments, Reach, connector

API_KEY = "sk-test-scripted"


@connector(risk="read")
def get_weather(city: str) -> dict[str, Any]:
    """Current weather in a city.

    Args:
        city: the city, e.g. 北京
    """
    table = {"北京": ("21 °C", "45 %", "晴"), "上海": ("24 °C", "68 %", "多云")}
    if city not in table:
        raise InvalidArguments("city", "one of 北京, 上海", "北京")
    t, h, c = table[city]
    return {"city": city, "temperature": t, "humidity": h, "condition": c}


@connector(risk="read")
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first addend
        b: second addend
    """
    return a + b


ServerFactory = Callable[..., ScriptedModelServer]


@pytest.fixture
def scripted() -> Iterator[ServerFactory]:
    """Start scripted model servers; all are closed after the test."""
    with scripted_servers(api_key=API_KEY) as start:
        yield start


@pytest.fixture
def make_reach(tmp_path) -> Callable[..., Reach]:
    """A Reach with reach-openai pointed at ``url`` and the two test tools."""

    def make(url: str, **settings: Any) -> Reach:
        table = {
            "base_url": url,
            "api_key": API_KEY,
            "model": "scripted-test",
            "max_retries": 0,
            "timeout": 10,
        }
        table.update(settings)
        reach = Reach(
            {"reach": {"data_dir": str(tmp_path / "data")}, "plugins": {"reach-openai": table}},
            plugins=[("reach-openai", reach_openai.plugin)],
        )
        reach.register(get_weather)
        reach.register(add)
        return reach

    return make
