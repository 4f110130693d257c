"""``reach serve http`` as a user starts it: a real process, stopped with SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from typing import Any

import httpx
from reach_serve.testing import wait_ready

from reach_core.testing import assert_connections_capped


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(tmp_path: Any, settings: str = "") -> tuple[subprocess.Popen[bytes], int]:
    config = tmp_path / "reach.toml"
    config.write_text(f"""
[reach]
data_dir = "{tmp_path / 'data'}"
[agents.cli]
[plugins.reach-serve]
tokens = {{ "tok-cli-0000001" = "cli" }}
{settings}
""")
    port = _free_port()
    env = {**os.environ, "REACH_PLUGINS": "reach-serve"}
    env.pop("REACH_CONFIG", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from reach_core.cli import main; main()", "--config", str(config),
         "serve", "http", "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path,
    )
    try:
        wait_ready(f"http://127.0.0.1:{port}", proc, timeout=30,
                   log=lambda: proc.stdout.read().decode() if proc.stdout else "")
    except Exception:
        proc.kill()
        raise
    return proc, port


def test_serve_http_command_serves_and_stops_cleanly(tmp_path: Any) -> None:
    proc, port = _start(tmp_path)
    try:
        tools = httpx.get(f"http://127.0.0.1:{port}/v1/tools",
                          headers={"Authorization": "Bearer tok-cli-0000001"}).json()
        assert tools == {"agent": "cli", "tools": []}
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=20)[0].decode()
    # uvicorn shuts down gracefully (lifespan: reach.aclose), then re-raises the signal
    assert proc.returncode in (0, -signal.SIGTERM), out
    assert f"serving http://127.0.0.1:{port}/v1/" in out


def test_idle_connections_are_bounded_by_the_command(tmp_path: Any) -> None:
    """``reach serve http`` runs uvicorn with ``reach_core.tokens.uvicorn_options``: past 1,000
    connections a request is answered 503. Before: uvicorn's default, no bound, every request
    200. (Slow clients are also cut off after ``read_timeout``: test_redteam_serve_slow.py.)"""
    proc, port = _start(tmp_path)
    try:
        assert_connections_capped(port, "/healthz")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)


def test_the_command_believes_no_x_forwarded_for_from_127_0_0_1(tmp_path: Any) -> None:
    """uvicorn's default believed it, so a guesser on this host rotated its address and was never
    blocked (before: 401 every time). The families are in test_redteam_serve_proxies.py."""
    proc, port = _start(tmp_path, "max_token_failures = 2")
    try:
        statuses = [httpx.get(f"http://127.0.0.1:{port}/v1/tools", headers={
            "Authorization": "Bearer tok-guess-0000001", "X-Forwarded-For": f"198.51.100.{n}"}).status_code
            for n in range(3)]
        assert statuses == [401, 401, 429]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
