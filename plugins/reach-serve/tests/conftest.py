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
from reach_core.testing import make_reach
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
    """One HTTP/1.1 request written byte for byte (clients refuse to send odd header values, or
    two ``Authorization`` headers), from the loopback address ``source`` when given (the whole
    127/8 is this machine), with the ``extra`` header lines (``b"Name: value"``); the status,
    the body and the headers (lower-case names)."""
    host, port = base.removeprefix("http://").split(":")
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n").encode()
    values = [authorization] if isinstance(authorization, bytes) else authorization or []
    head += b"".join(b"Authorization: " + value + b"\r\n" for value in values)
    head += b"".join(line + b"\r\n" for line in extra)
    with socket.create_connection((host, int(port)), timeout=10,
                                  source_address=(source, 0) if source else None) as sock:
        sock.sendall(head + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    top, _, answer = data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split(" ", 2)[1]), answer, headers


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
