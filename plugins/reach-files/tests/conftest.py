"""A root folder with a few files, a sibling folder outside it, and a Reach over the root."""

from __future__ import annotations

import resource
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import reach_files.plugin

from reach_core import Reach

SECRET = "TOP-SECRET outside the root"
#: the file-size limit `invoke_size_limited` sets: writes past it fail part-way, as on a full disk
SIZE_LIMIT = 64 * 1024


async def invoke_size_limited(reach: Reach, tool: str, args: dict[str, Any]) -> Any:
    """``reach.invoke`` under the system's file-size limit (``RLIMIT_FSIZE``, SIGXFSZ ignored
    as a server does), so a write fails part-way with ``EFBIG``, the path of ``ENOSPC``.

    The limit is the whole process's, so it is set around the call alone: pytest writes its
    report (progress, junit XML) to files longer than the limit, such as CI's log, and a
    write of its own under the limit failed and ended the run.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (SIZE_LIMIT, hard))
    try:
        return await reach.invoke(tool, args)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def make_reach(tmp_path: Path, settings: dict[str, Any] | None = None) -> Reach:
    config: dict[str, Any] = {"reach": {"data_dir": str(tmp_path / "data")}}
    if settings is not None:
        config["plugins"] = {"reach-files": settings}
    return Reach(config, plugins=[("reach-files", reach_files.plugin)], strict=True)


def rooted_reach(tmp_path: Path, **settings: Any) -> tuple[Reach, Path]:
    """A Reach whose one root is ``tmp_path/root`` (made here), and that root."""
    root = tmp_path / "root"
    root.mkdir(parents=True, exist_ok=True)
    return make_reach(tmp_path, {"roots": [str(root)], **settings}), root


@dataclass
class Box:
    reach: Reach
    root: Path
    outside: Path

    async def call(self, tool: str, **args: Any) -> Any:
        return await self.reach.invoke(tool, args)


@pytest.fixture
def files_reach() -> Any:
    """``files_reach(tmp_path, settings=None)``: a Reach holding only reach-files."""
    return make_reach


@pytest.fixture
def secret() -> str:
    return SECRET


@pytest.fixture
def box(tmp_path: Path) -> Box:
    root = tmp_path / "data_root"
    outside = tmp_path / "data_root_evil"  # a sibling whose name starts with the root's name
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "todo.md").write_text("- buy tea\n- call Ada\n", encoding="utf-8")
    (root / "notes" / "北京.txt").write_text("天气晴朗\nsunny\n", encoding="utf-8")
    (root / "readme.txt").write_text("hello\n", encoding="utf-8")
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    reach = make_reach(tmp_path, {"roots": [str(root)], "max_read_bytes": 1000, "max_list_entries": 50})
    return Box(reach, root, outside)


def tree(root: Path) -> dict[str, bytes]:
    """Every file, folder and link below ``root`` with its bytes (or link target): equal before
    and after a refused call means nothing was written and no folder made."""
    import os

    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (b"->" + os.readlink(p).encode() if p.is_symlink()
                                             else p.read_bytes() if p.is_file() else b"<dir>")
    return out


async def refused_autorun_write(reach: Any, root: Path, path: str, place: str, mode: str, content: str) -> None:
    """``write_file`` of ``content`` to ``path`` is refused as the autorun place ``place``, and
    changes nothing under ``root``."""
    before = tree(root)
    r = await reach.invoke("write_file", {"path": path, "content": content, "mode": mode})
    assert not r.ok, f"{mode} {path!r} was written: {r.content}"
    assert r.error.code == "invalid_arguments", (path, r.error)
    assert "allow_autorun_writes" in r.error.message and f'"{place}"' in r.error.message, r.error.message
    assert tree(root) == before, path  # nothing written, no folder made
