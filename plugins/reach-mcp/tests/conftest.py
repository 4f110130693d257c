"""Fixtures: real MCP servers (the official SDK) in subprocesses on loopback, and a reach factory."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import reach_mcp.plugin as mcp_plugin

from reach_core import connector
from reach_core.testing import make_reach
from reach_core.tokens import uvicorn_options

DEMO = Path(__file__).parent / "servers" / "demo_server.py"
PY = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def start(cmd: list[str], port: int, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
    except Exception:
        proc.kill()
        raise
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def demo_http() -> Iterator[str]:
    """The demo server over stateless streamable HTTP; yields its endpoint URL."""
    port = free_port()
    proc = start([PY, str(DEMO), "--http", str(port)], port)
    yield f"http://127.0.0.1:{port}/mcp"
    stop(proc)


def stdio_server(**extra: Any) -> dict[str, Any]:
    return {"command": PY, "args": [str(DEMO)], **extra}


@pytest.fixture
def reach_for(tmp_path: Path) -> Any:
    """``reach_for(servers, *plugins, **config)``: a Reach with only reach-mcp (and ``plugins``)."""
    made: list[Any] = []

    def build(servers: dict[str, Any], *plugins: Any, **config: Any) -> Any:
        cfg: dict[str, Any] = {"reach": {"log_calls": False}, **config}
        cfg.setdefault("plugins", {})
        cfg["plugins"] = {**cfg["plugins"], "reach-mcp": {"servers": servers}}
        reach = make_reach(("reach-mcp", mcp_plugin), *plugins, config=cfg, data_dir=tmp_path / "data")
        made.append(reach)
        return reach

    return build


#: the headers a streamable-HTTP MCP client sends with a JSON-RPC POST
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "mcp-protocol-version": "2025-06-18"}


class ServedMcp:
    """``reach serve mcp --http`` in this test's event loop: ``http_app`` built for ``bind`` (what
    ``--http BIND:PORT`` builds) under uvicorn, listening on 127.0.0.1 at ``port``::

        async with ServedMcp(reach, ServeSettings(...)) as served:
            res = await served.post({"authorization": "Bearer ..."}, body)
    """

    def __init__(self, reach: Any, settings: Any = None, bind: str = "127.0.0.1") -> None:
        import uvicorn
        from reach_mcp.server import http_app
        from reach_mcp.settings import ServeSettings

        self.port = free_port()
        self.app = http_app(reach, settings if settings is not None else ServeSettings(), host=bind)
        # the uvicorn options `reach serve mcp --http` uses (bounded heads, uvicorn's X-Forwarded-For off)
        options = uvicorn_options(settings.read_timeout if settings is not None else ServeSettings().read_timeout)
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="error",
                                                    lifespan="on", **options))
        self.task: asyncio.Task[Any] | None = None

    async def __aenter__(self) -> ServedMcp:
        self.task = asyncio.create_task(self.server.serve())
        for _ in range(400):
            if self.server.started:
                return self
            await asyncio.sleep(0.025)
        raise RuntimeError("uvicorn did not start")

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        assert self.task is not None
        await self.task

    async def post(self, headers: dict[str, str], body: str | bytes) -> httpx.Response:
        """POST ``body`` to ``/mcp`` with the MCP headers and ``headers`` (``{port}`` filled in)."""
        headers = {k: v.format(port=self.port) for k, v in headers.items()}
        async with httpx.AsyncClient(timeout=20) as client:
            return await client.post(f"http://127.0.0.1:{self.port}/mcp", content=body,
                                     headers={**MCP_HEADERS, **headers})


#: what ``add_note`` ran, in order (cleared by :func:`note_reach`): the served red-team tests
#: assert that a refused request ran nothing and an accepted one ran once
notes: list[str] = []


@connector(risk="write")
def add_note(text: str) -> str:
    """Add a note. Use when the user asks to remember something.

    Args:
        text: the note
    """
    notes.append(text)
    return "noted"


def note_reach(tmp_path: Path, *agents: str) -> Any:
    """A Reach with ``add_note`` registered and an empty ``[agents.NAME]`` table for each of ``agents``."""
    notes.clear()
    reach = make_reach(config={"agents": {name: {} for name in agents}}, data_dir=tmp_path / "data")
    reach.register(add_note)
    return reach
