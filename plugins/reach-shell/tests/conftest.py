"""Fixtures: a working root and a factory for `run_command` with a chosen allow-list."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from reach_shell import RunCommand, ShellSettings


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("alpha\n")
    (work / "b.txt").write_text("beta\n")
    (work / "sub").mkdir()
    return work.resolve()


@pytest.fixture
def make_tool(root: Path) -> Callable[..., RunCommand]:
    """`make_tool(echo={}, sort={"forbid_options": [...]}, timeout=2)` -> a RunCommand."""

    def build(**kwargs: Any) -> RunCommand:
        commands = {k: v for k, v in kwargs.items() if isinstance(v, dict)}
        others = {k: v for k, v in kwargs.items() if not isinstance(v, dict)}
        return RunCommand(ShellSettings(root=root, commands=commands, **others))

    return build


#: An allow-list entry for the interpreter running the tests: lets a test spawn
#: children and print large output without relying on a shell.
PYTHON = {"path": sys.executable}


def process_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (killed, not yet reaped by init) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        time.sleep(0.02)
    return False
