"""Every way out of the root is refused, and nothing outside is read or written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest


def _escape_paths(box: Any) -> dict[str, str]:
    return {
        "dotdot": "../data_root_evil/secret.txt",
        "dotdot_inside_then_out": "notes/../../data_root_evil/secret.txt",
        "dotdot_that_stays_inside": "notes/../readme.txt",
        "absolute_outside": str(box.outside / "secret.txt"),
        "absolute_system": "/etc/hostname",
        "sibling_prefix": str(box.root) + "_evil/secret.txt",
        "nul_byte": "readme.txt\x00.png",
        "nul_byte_only": "\x00",
    }


@pytest.mark.parametrize(
    "case",
    ["dotdot", "dotdot_inside_then_out", "dotdot_that_stays_inside", "absolute_outside", "absolute_system",
     "sibling_prefix", "nul_byte", "nul_byte_only"],
)
async def test_lexical_escapes_are_refused_by_every_tool(box: Any, case: str, secret: str) -> None:
    path = _escape_paths(box)[case]
    for tool, args in [
        ("read_file", {"path": path}),
        ("list_dir", {"path": path}),
        ("search_files", {"path": path, "text": "TOP-SECRET"}),
        ("write_file", {"path": path, "content": "pwned", "mode": "overwrite"}),
    ]:
        r = await box.call(tool, **args)
        assert not r.ok, f"{tool} accepted {path!r}: {r.content}"
        assert r.error.code == "invalid_arguments", (tool, r.error)
        assert secret not in r.error.message
    assert (box.outside / "secret.txt").read_text() == secret


async def test_symlink_to_an_outside_file_is_refused(box: Any, secret: str) -> None:
    (box.root / "link.txt").symlink_to(box.outside / "secret.txt")
    r = await box.call("read_file", path="link.txt")
    assert not r.ok and r.error.code == "invalid_arguments"
    assert "symlink" in r.error.message
    r = await box.call("write_file", path="link.txt", content="pwned", mode="overwrite")
    assert not r.ok
    r = await box.call("write_file", path="link.txt", content="pwned", mode="append")
    assert not r.ok
    assert (box.outside / "secret.txt").read_text() == secret


async def test_symlinked_folder_pointing_outside_is_refused(box: Any) -> None:
    (box.root / "shared").symlink_to(box.outside, target_is_directory=True)
    for tool, args in [
        ("read_file", {"path": "shared/secret.txt"}),
        ("list_dir", {"path": "shared"}),
        ("write_file", {"path": "shared/new.txt", "content": "pwned"}),
        ("search_files", {"path": "shared", "text": "TOP-SECRET"}),
    ]:
        r = await box.call(tool, **args)
        assert not r.ok and r.error.code == "invalid_arguments", (tool, r)
    assert not (box.outside / "new.txt").exists()


async def test_search_does_not_follow_symlinks_out(box: Any) -> None:
    (box.root / "shared").symlink_to(box.outside, target_is_directory=True)
    (box.root / "alias.txt").symlink_to(box.outside / "secret.txt")
    r = await box.call("search_files", text="TOP-SECRET")
    assert r.ok and r.content["matches"] == []
    r = await box.call("search_files", pattern="*secret*")
    assert r.ok and r.content["files"] == []


async def test_symlink_inside_the_root_is_fine(box: Any) -> None:
    (box.root / "current.md").symlink_to(box.root / "notes" / "todo.md")
    r = await box.call("read_file", path="current.md")
    assert r.ok and "buy tea" in r.content["content"]
    listing = await box.call("list_dir")
    assert {"name": "current.md", "type": "symlink"} in listing.content["entries"]


@pytest.mark.parametrize("tool", ["read_file", "write_file", "list_dir"])
async def test_symlink_swapped_in_after_the_check_is_not_followed(box: Any, tool: str, secret: str) -> None:
    """The race: the path is checked while it is a real folder, then replaced by a symlink."""
    jail = box.reach.get(tool).jail
    checked = jail.locate

    def locate_then_swap(path: str):
        loc = checked(path)
        notes = box.root / "notes"
        os.rename(notes, box.root / "notes.bak")
        notes.symlink_to(box.outside, target_is_directory=True)
        return loc

    jail.locate = locate_then_swap  # type: ignore[method-assign]
    try:
        args = {
            "read_file": {"path": "notes/secret.txt"},
            "write_file": {"path": "notes/secret.txt", "content": "pwned", "mode": "overwrite"},
            "list_dir": {"path": "notes"},
        }[tool]
        if tool == "read_file":
            (box.root / "notes" / "secret.txt").write_text("inside")  # exists at check time
        r = await box.call(tool, **args)
    finally:
        jail.locate = checked  # type: ignore[method-assign]
    assert not r.ok, r.content
    assert r.error.code == "invalid_arguments" and "symlink" in r.error.message
    assert (box.outside / "secret.txt").read_text() == secret
    assert sorted(p.name for p in box.outside.iterdir()) == ["secret.txt"]


async def test_final_component_swapped_for_a_symlink_is_not_followed(box: Any) -> None:
    jail = box.reach.get("read_file").jail
    checked = jail.locate

    def locate_then_swap(path: str):
        loc = checked(path)
        target = box.root / "readme.txt"
        target.unlink()
        target.symlink_to(box.outside / "secret.txt")
        return loc

    jail.locate = locate_then_swap  # type: ignore[method-assign]
    try:
        r = await box.call("read_file", path="readme.txt")
    finally:
        jail.locate = checked  # type: ignore[method-assign]
    assert not r.ok and "symlink" in r.error.message


async def test_absolute_paths_inside_a_root_work(box: Any, tmp_path: Path) -> None:
    r = await box.call("read_file", path=str(box.root / "readme.txt"))
    assert r.ok and r.content["content"] == "hello\n" and r.content["path"] == "readme.txt"


async def test_second_root_is_reachable_by_absolute_path(tmp_path: Path, files_reach: Any) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (b / "x.txt").write_text("from b")
    reach = files_reach(tmp_path, {"roots": [str(a), str(b)]})
    r = await reach.invoke("read_file", {"path": str(b / "x.txt")})
    assert r.ok and r.content["content"] == "from b"
    r = await reach.invoke("read_file", {"path": "x.txt"})  # relative paths start at the first root
    assert not r.ok and r.error.code == "not_found"


async def test_fifo_is_refused_without_hanging(box: Any) -> None:
    os.mkfifo(box.root / "pipe")
    r = await box.call("read_file", path="pipe")
    assert not r.ok and "not a regular file" in r.error.message


# The root itself, or a folder above it, replaced by a symlink after the check: the walk from the
# root's descriptor was safe, but the root was opened by its path, following symlinks, so a swap
# of the root (or any folder above it, by whoever may write there) led every open outside.

def _swap_root(box: Any, level: int) -> None:
    """Move the folder ``level`` steps above the root (0: the root) away and put a symlink in its
    place that leads to a copy of the tree where the root's files are the outside ones."""
    top = box.root
    for _ in range(level):
        top = top.parent
    fake = box.outside.parent / f"fake-{level}"
    rel = box.root.relative_to(top)
    target = fake / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(box.outside, target, target_is_directory=True)  # the "root" seen through the swap
    os.rename(top, str(top) + ".moved")
    os.symlink(fake if level else box.outside, top, target_is_directory=True)


@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("tool", ["read_file", "write_file", "append", "list_dir", "search_files"])
async def test_the_root_swapped_for_a_symlink_after_the_check_is_not_followed(
        box: Any, tool: str, level: int, secret: str, tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b"
    if level:  # a root one folder below a folder that can be swapped (not the test's own tmp_path)
        nested.mkdir(parents=True)
        os.rename(box.root, nested / "root")
        box.root = nested / "root"
        box.reach = files_reach_for(tmp_path, box.root)
    name = {"read_file": "secret.txt", "write_file": "secret.txt", "append": "secret.txt",
            "list_dir": ".", "search_files": "."}[tool]
    (box.root / "secret.txt").write_text("inside")  # exists at check time, as outside
    connector = "write_file" if tool == "append" else tool
    jail = box.reach.get(connector).jail
    checked = jail.locate

    def locate_then_swap(path: str):
        loc = checked(path)
        _swap_root(box, level)
        return loc

    jail.locate = locate_then_swap  # type: ignore[method-assign]
    args = {
        "read_file": {"path": name},
        "write_file": {"path": name, "content": "pwned", "mode": "overwrite"},
        "append": {"path": name, "content": "pwned", "mode": "append"},
        "list_dir": {"path": name},
        "search_files": {"path": name, "text": "TOP"},
    }[tool]
    try:
        r = await box.reach.invoke(connector, args)
    finally:
        jail.locate = checked  # type: ignore[method-assign]
    assert not r.ok, r.content
    assert r.error.code == "invalid_arguments" and "symlink" in r.error.message, r.error
    assert (box.outside / "secret.txt").read_text() == secret
    assert sorted(p.name for p in box.outside.iterdir()) == ["secret.txt"]


def files_reach_for(tmp_path: Path, root: Path) -> Any:
    from conftest import make_reach

    return make_reach(tmp_path, {"roots": [str(root)], "max_read_bytes": 1000})
