"""Fixtures: a real Reach with reach-audit loaded, a real SQLite file in tmp_path,
and a handful of connectors that succeed, fail, retry and fall back."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import reach_audit.plugin as audit_plugin

from reach_core import BusinessError, Connector, Reach, RetryableError, connector


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "packaging: builds wheels and installs them into a fresh venv (slow-ish)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The packaging test (~30 s: wheels, a venv, installs) runs when asked for:
    ``-m packaging`` (alone) or ``REACH_TEST_PACKAGING=1`` (with the rest)."""
    import os

    if config.getoption("markexpr") or os.environ.get("REACH_TEST_PACKAGING") == "1":
        return
    slow = [i for i in items if i.get_closest_marker("packaging")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [i for i in items if not i.get_closest_marker("packaging")]
        config.stash[_DESELECTED] = len(slow)


_DESELECTED = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    n = config.stash.get(_DESELECTED, 0)
    if n:
        terminalreporter.write_line(
            f"reach-audit: {n} packaging test not run; run it with -m packaging (or REACH_TEST_PACKAGING=1)"
        )


@connector(risk="read")
def add(a: int, b: int) -> int:
    """Add two integers. Use for arithmetic.

    Args:
        a: first addend
        b: second addend
    """
    return a + b


@connector(risk="read")
def login(user: str, password: str, note: str = "") -> dict:
    """Pretend to log in; echoes back what it got (to prove redaction of results too).

    Args:
        user: user name
        password: the password
        note: free text
    """
    return {"user": user, "token": "tok-" + password, "note": note}


@connector(risk="read")
def refuse(reason: str) -> int:
    """Always fails with a business error.

    Args:
        reason: why
    """
    raise BusinessError(f"refused: {reason}")


@connector(risk="write")
def send(to: str, text: str) -> dict:
    """Send a message (a write: gets an idempotency key inside a run).

    Args:
        to: recipient
        text: message text
    """
    return {"sent": True, "to": to}


@connector(risk="dangerous")
def wipe(path: str) -> str:
    """Delete everything under a path (dangerous: needs confirmation).

    Args:
        path: what to wipe
    """
    return "wiped"


class Flaky(Connector):
    """Fails once with a retryable error, then succeeds: the record shows 2 attempts."""

    name = "flaky"
    description = "Succeeds on the second attempt."
    risk = "read"
    input_schema = {"type": "object", "properties": {}, "additionalProperties": False}

    def __init__(self) -> None:
        self.calls = 0

    async def execute(self, params: dict) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise RetryableError("upstream hiccup")
        return "ok"


class Down(Connector):
    """Always unavailable; has a static fallback."""

    name = "down"
    description = "Always down; falls back to a cached answer."
    risk = "read"
    max_retries = 0
    input_schema = {"type": "object", "properties": {}, "additionalProperties": False}
    fallback = {"cached": True}

    async def execute(self, params: dict) -> Any:
        raise RetryableError("service is down")


def register_all(reach: Reach) -> None:
    for obj in (add, login, refuse, send, wipe, Flaky(), Down()):
        reach.register(obj)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
async def make_reach(data_dir: Path) -> AsyncIterator[Callable[..., Reach]]:
    """``make_reach(**audit_settings)``: a Reach with reach-audit and the test tools."""
    made: list[Reach] = []

    def make(config: dict[str, Any] | None = None, plugins: tuple = (), **settings: Any) -> Reach:
        settings.setdefault("log", "off")
        cfg: dict[str, Any] = {
            "reach": {"data_dir": str(data_dir)},
            "plugins": {"reach-audit": settings},
        }
        for key, value in (config or {}).items():
            cfg.setdefault(key, {}).update(value)
        reach = Reach(cfg, plugins=[audit_plugin, *plugins])
        register_all(reach)
        made.append(reach)
        return reach

    yield make
    for reach in made:
        await reach.aclose()


def read_db(path: Path, sql: str = "SELECT seq, record, hash FROM audit_log ORDER BY seq") -> list[tuple]:
    """Read the database through a separate connection, as another process would."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture
def db_rows(data_dir: Path) -> Callable[..., list[tuple]]:
    """``db_rows(sql=...)``: rows of the test Reach's database, read from outside."""
    return lambda *sql: read_db(data_dir / "reach.db", *sql)


async def wait_until(condition: Callable[[], bool], what: str, *, seconds: float = 30.0) -> None:
    """Wait for ``condition``, polled every 10 ms. The deadline only bounds a hang and is never
    what a test measures: on a loaded CI host the background writer and its log lines may
    take much longer than on a quiet one, and must still pass."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds:g} s")
        await asyncio.sleep(0.01)
