"""Helpers for tests and benchmarks that start ``reach serve http`` in a child process."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any

__all__ = ["wait_ready"]


def wait_ready(base_url: str, proc: subprocess.Popen[Any], *, timeout: float = 30.0,
               log: Callable[[], str] = lambda: "") -> None:
    """Poll ``{base_url}/readyz`` until it answers 200.

    Raises ``RuntimeError`` with ``log()`` (the server's output) if the process exits
    first or ``timeout`` seconds pass.
    """
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{base_url}: the server exited with {proc.returncode}:\n{log()}")
        try:
            if httpx.get(f"{base_url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{base_url}: the server was not ready after {timeout:g} s:\n{log()}")
        time.sleep(0.1)
