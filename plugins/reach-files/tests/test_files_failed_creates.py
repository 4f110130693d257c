"""A write that fails changes nothing: not the file, and no folder it made on the way.

``write_file`` makes missing folders for a new file. Before, a write that failed after
that (the system's file-size limit, as a full disk or quota fails it; a new file the
umask left without write bits) left the empty folders behind, and sometimes the empty
file. Now the folders a write made are removed again, innermost first, each only while it
is empty and still the folder this call made; folders that were there before stay.

``RLIMIT_FSIZE`` (with SIGXFSZ ignored, as a server does) makes ``write`` fail part-way
with ``EFBIG``, the same path as ``ENOSPC``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SIZE_LIMIT, invoke_size_limited, rooted_reach
from reach_files.jail import Jail, Made

LIMIT = SIZE_LIMIT


def _tree(root: Path) -> set[str]:
    """Every file and folder under ``root`` (folders end in ``/``)."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath).relative_to(root)
        out |= {f"{base / d}/" for d in dirnames} | {str(base / f) for f in filenames}
    return out


_NEW = ["new/x.txt", "a/b/x.txt", "a/b/c/d/x.txt", "notes/new/x.txt", "notes/new/deeper/x.md", "北京/报告/x.txt",
        "a b/c d/x.txt"]


@pytest.mark.parametrize("size", [LIMIT + 1, LIMIT * 4])
@pytest.mark.parametrize("mode", ["create", "append", "overwrite"])
@pytest.mark.parametrize("path", _NEW)
async def test_a_write_cut_short_leaves_no_folder(tmp_path: Path, path: str, mode: str,
                                                  size: int) -> None:
    reach, root = rooted_reach(tmp_path, min_free_bytes=0)
    (root / "notes").mkdir()
    (root / "notes" / "keep.txt").write_text("kept\n")
    before = _tree(root)
    r = await invoke_size_limited(reach, "write_file", {"path": path, "content": "x" * size, "mode": mode})
    assert not r.ok and r.error.code == "execution_failed" and "nothing was changed" in r.error.message, r
    assert _tree(root) == before, sorted(_tree(root) - before)
    assert (root / "notes" / "keep.txt").read_text() == "kept\n"
    r = await reach.invoke("write_file", {"path": path, "content": "fits\n", "mode": mode})  # the retry works
    assert r.ok, r.error
    assert (root / path).read_text() == "fits\n"


@pytest.fixture
def tight_umask() -> Iterator[None]:
    old = os.umask(0o277)  # new files 0400, new folders 0500
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize("path", ["x.txt", "new/x.txt", "a/b/c/x.txt"])
async def test_a_new_file_the_umask_made_read_only_is_still_written(tmp_path: Path, tight_umask: None,
                                                                    path: str) -> None:
    """The new file is this call's own: it used to be refused as "write-protected", leaving an
    empty file and its folders behind."""
    reach, root = rooted_reach(tmp_path)
    r = await reach.invoke("write_file", {"path": path, "content": "hello\n"})
    assert r.ok, r.error
    assert (root / path).read_text() == "hello\n"


async def test_an_existing_write_protected_file_is_still_refused(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path)
    (root / "ro.txt").write_text("old\n")
    (root / "ro.txt").chmod(0o444)
    for mode in ("append", "overwrite"):
        r = await reach.invoke("write_file", {"path": "ro.txt", "content": "new\n", "mode": mode})
        assert not r.ok and "write-protected" in r.error.message
    assert (root / "ro.txt").read_text() == "old\n"


def _made(jail: Jail, rel: str) -> tuple[Any, list[Made]]:
    loc = jail.locate(rel)
    made: list[Made] = []
    with jail.open_dir(loc, parts=loc.parts[:-1], create=True, made=made):
        pass
    return loc, made


def test_remove_made_takes_away_only_the_folders_this_write_made(tmp_path: Path) -> None:
    (tmp_path / "root" / "old").mkdir(parents=True)
    jail = Jail([tmp_path / "root"])
    loc, made = _made(jail, "old/n1/n2/n3/f.txt")
    assert [m.parts for m in made] == [("old", "n1"), ("old", "n1", "n2"), ("old", "n1", "n2", "n3")]
    jail.remove_made(loc, made)
    assert _tree(tmp_path / "root") == {"old/"}


def test_remove_made_keeps_a_folder_someone_else_filled(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    jail = Jail([tmp_path / "root"])
    loc, made = _made(jail, "n1/n2/n3/f.txt")
    (tmp_path / "root" / "n1" / "n2" / "theirs.txt").write_text("theirs\n")  # another process, meanwhile
    jail.remove_made(loc, made)
    assert _tree(tmp_path / "root") == {"n1/", "n1/n2/", "n1/n2/theirs.txt"}


def test_remove_made_keeps_a_folder_replaced_meanwhile(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    jail = Jail([tmp_path / "root"])
    loc, made = _made(jail, "n1/n2/f.txt")
    (tmp_path / "root" / "n1" / "n2").rename(tmp_path / "root" / "moved")  # still there: its inode stays in use
    (tmp_path / "root" / "n1" / "n2").mkdir()  # same name, another folder
    jail.remove_made(loc, made)
    assert _tree(tmp_path / "root") == {"n1/", "n1/n2/", "moved/"}


async def test_a_refused_write_makes_no_folder(tmp_path: Path) -> None:
    """Refusals decided before anything is made (guards, sizes, depth) leave the tree as it was."""
    reach, root = rooted_reach(tmp_path, max_file_bytes=10, max_write_depth=3)
    for path, content in (("n/a/b/big.txt", "x" * 11), ("n/a/b/c/d/deep.txt", "x"), ("n/a/.env", "A=1"),
                          ("n/a/.git/hooks/pre-commit", "x"), ("n/a/.vscode/tasks.json", "{}"),
                          ("n/a/prod.env", "A=1"), ("n/a/id_rsa", "x")):
        r = await reach.invoke("write_file", {"path": path, "content": content})
        assert not r.ok and r.error.code == "invalid_arguments", (path, r)
        assert _tree(root) == set(), (path, _tree(root))
