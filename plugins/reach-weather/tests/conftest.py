"""Fixtures: the plugin's own demo weather service on 127.0.0.1 is the real server."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest
from reach_weather.demo_server import DemoServer, start_demo_server


@pytest.fixture
def demo() -> Iterator[DemoServer]:
    with start_demo_server() as server:
        yield server


@pytest.fixture(scope="session")
def http() -> Iterator[httpx.Client]:
    """One plain HTTP client for the tests that talk to the service directly."""
    with httpx.Client(timeout=5) as client:
        yield client


@pytest.fixture
def dead_url() -> str:
    """A loopback URL on which nothing listens (the port was bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
async def make_weather_reach(tmp_path):
    """Build a Reach holding only this plugin, with the given plugin settings.

    Retry backoff is shortened so retry tests stay fast; everything else is the
    default a user gets.
    """
    import reach_weather.plugin as plugin

    from reach_core.testing import make_reach

    made = []

    def make(settings: dict):
        reach = make_reach(
            plugin,
            config={"reach": {"retry_backoff": 0.01}, "plugins": {"reach-weather": settings}},
            data_dir=tmp_path / "data",
        )
        made.append(reach)
        return reach

    yield make
    for reach in made:
        await reach.aclose()


@pytest.fixture
def weather_reach(demo, make_weather_reach):
    return make_weather_reach(demo.settings())
