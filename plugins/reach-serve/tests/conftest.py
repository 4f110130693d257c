"""A real ``reach serve http`` app on 127.0.0.1 (uvicorn in a thread), SQLite store in tmp."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from reach_core import Connector
from reach_core.testing import make_reach, raw_http
from reach_core.tokens import uvicorn_options

TOKENS = {"tok-worker-000001": "worker", "tok-ops-000000001": "ops"}


class Counter(Connector):
    """A write tool that counts its real executions."""

    name = "add_credit"
    description = "Add credit to an account. Use when the user asks for credit."
    risk = "write"
    input_schema = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}

    def __init__(self) -> None:
        self.runs = 0

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        self.runs += 1
        return {"credited": params["amount"], "run": self.runs}


class Lookup(Connector):
    name = "lookup"
    description = "Look a city up. Use for city facts."
    risk = "read"
    input_schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        return {"city": params["city"], "country": "中国"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    def __init__(self, base: str, counter: Counter) -> None:
        self.base = base
        self.counter = counter

    def client(self, token: str | None = "tok-worker-000001") -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=10)


def serve(tmp_path: Any, extra: dict[str, Any] | None = None, plugins: tuple[Any, ...] = ()) -> Iterator[Served]:
    import uvicorn
    from reach_serve import plugin as serve_plugin
    from reach_serve.app import build_app

    settings = {"tokens": TOKENS, "operators": ["ops"], **(extra or {})}
    # every agent the settings name needs a table of its own (reach-serve refuses a name
    # without one: a typo would get `default`'s rights); an empty one gives the built-in defaults
    named = [*settings.get("tokens", {}).values(), *settings.get("operators", []), settings.get("anonymous_agent")]
    agents: dict[str, Any] = {name: {} for name in named if name}
    agents["worker"] = {"deny": ["nothing_here"]}
    config = {"reach": {"data_dir": str(tmp_path / "data")}, "plugins": {"reach-serve": settings}, "agents": agents}
    reach = make_reach(("reach-serve", serve_plugin), *plugins, config=config)
    counter = Counter()
    reach.register(counter)
    reach.register(Lookup())
    port = _free_port()
    # the uvicorn options `reach serve http` uses (bounded heads, uvicorn's X-Forwarded-For off)
    options = uvicorn_options(reach.plugin_settings("reach-serve").read_timeout)
    server = uvicorn.Server(uvicorn.Config(build_app(reach), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on", **options))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    try:
        yield Served(f"http://127.0.0.1:{port}", counter)
    finally:
        server.should_exit = True
        thread.join(10)


def raw_request(base: str, method: str, path: str, authorization: bytes | list[bytes] | None, body: bytes = b"",
                source: str | None = None, extra: Sequence[bytes] = ()) -> tuple[int, bytes, dict[str, str]]:
    """One JSON request written byte for byte (`reach_core.testing.raw_http`: clients refuse to send
    odd header values, or two ``Authorization`` headers), from the loopback address ``source``
    when given, with these ``Authorization`` values and the ``extra`` header lines; the status,
    the body and the headers (lower-case names)."""
    values = [authorization] if isinstance(authorization, bytes) else authorization or []
    headers = [b"Content-Type: application/json", *(b"Authorization: " + value for value in values), *extra]
    return raw_http(int(base.rsplit(":", 1)[1]), method, path, headers, body, source=source, timeout=10)


@pytest.fixture
def served(tmp_path: Any) -> Iterator[Served]:
    yield from serve(tmp_path)


@pytest.fixture
def make_served(tmp_path: Any) -> Iterator[Any]:
    """``make_served(settings)``: a server with extra ``[plugins.reach-serve]`` settings."""
    gens: list[Any] = []

    def make(extra: dict[str, Any]) -> Served:
        gen = serve(tmp_path, extra)
        gens.append(gen)
        return next(gen)

    yield make
    for gen in gens:
        gen.close()
