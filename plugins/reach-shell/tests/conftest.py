"""Fixtures: a working root and a factory for `run_command` with a chosen allow-list."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import SECRET


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("alpha\n")
    (work / "b.txt").write_text("beta\n")
    (work / "sub").mkdir()
    return work.resolve()


@pytest.fixture
def outside(tmp_path: Path, root: Path) -> Path:
    """A folder beside the root (`<tmp>/outside`) holding `secret.txt` (`SECRET`): where an escape
    lands or what it reads. A module adds its own files by a fixture of the same name asking for it."""
    where = tmp_path / "outside"
    where.mkdir()
    (where / "secret.txt").write_text(SECRET + "\n")
    return where


@pytest.fixture
def make_tool(root: Path) -> Callable[..., RunCommand]:
    """`make_tool(echo={}, sort={"forbid_options": [...]}, timeout=2)` -> a RunCommand."""

    def build(**kwargs: Any) -> RunCommand:
        commands = {k: v for k, v in kwargs.items() if isinstance(v, dict)}
        others = {k: v for k, v in kwargs.items() if not isinstance(v, dict)}
        return RunCommand(ShellSettings(root=root, commands=commands, **others))

    return build
