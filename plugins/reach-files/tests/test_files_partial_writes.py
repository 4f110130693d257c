"""A write the system cuts short changes nothing, and says why in words.

The system's file-size limit (``RLIMIT_FSIZE``, with SIGXFSZ ignored as a server does)
makes ``write`` fail part-way, as a full disk or quota does. Before: ``create`` left a
partial new file behind (so the retry was refused as "already exists"), ``append`` left
the partial tail in the file, and every mode answered "internal error".
"""

from __future__ import annotations

from pathlib import Path

import pytest
import reach_files.plugin
from conftest import SIZE_LIMIT, invoke_size_limited

from reach_core import Reach

LIMIT = SIZE_LIMIT
OLD = "first line\n"


def _reach(tmp_path: Path) -> tuple[Reach, Path]:
    root = tmp_path / "root"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "log.txt").write_text(OLD)
    config = {"reach": {"data_dir": str(tmp_path / "data")},
              "plugins": {"reach-files": {"roots": [str(root)], "min_free_bytes": 0}}}
    return Reach(config, plugins=[("reach-files", reach_files.plugin)], strict=True), root


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("size", [LIMIT + 1, LIMIT * 2, LIMIT * 8])
@pytest.mark.parametrize(("mode", "path"), [
    ("create", "notes/new.txt"), ("create", "notes/log2.md"), ("append", "notes/log.txt"),
    ("overwrite", "notes/log.txt"), ("overwrite", "notes/fresh.txt"), ("append", "notes/fresh.txt"),
])
async def test_a_write_cut_short_changes_nothing(tmp_path: Path, mode: str, path: str,
                                                 size: int) -> None:
    reach, root = _reach(tmp_path)
    before = _tree(root)
    r = await invoke_size_limited(reach, "write_file", {"path": path, "content": "x" * size, "mode": mode})
    assert not r.ok
    assert r.error.code == "execution_failed" and "nothing was changed" in r.error.message, r.error
    assert _tree(root) == before
    if mode == "create":  # the retry with a smaller text is a plain create, not "already exists"
        r = await reach.invoke("write_file", {"path": path, "content": "short\n", "mode": mode})
        assert r.ok, r.error


@pytest.mark.parametrize("mode", ["create", "append", "overwrite"])
async def test_writes_under_the_limit_still_work(tmp_path: Path, mode: str) -> None:
    reach, root = _reach(tmp_path)
    path = "notes/log.txt" if mode != "create" else "notes/new.txt"
    r = await invoke_size_limited(reach, "write_file", {"path": path, "content": "y" * (LIMIT // 2), "mode": mode})
    assert r.ok, r.error
    expected = (OLD if mode == "append" else "") + "y" * (LIMIT // 2)
    assert (root / path).read_text() == expected
