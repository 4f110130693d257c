"""Fixtures: real MCP servers (the official SDK) in subprocesses on loopback, and a reach factory."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import reach_mcp.plugin as mcp_plugin

from reach_core.testing import make_reach

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
