"""Red-team families: hard links, write-protected files, NUL in text, Windows-style paths.

* A hard link inside a root to a file outside *is* that file: `read_file`, `append` and
  the text search read or changed it. Regular files with more than one name are refused
  (checked on the open descriptor, so a link swapped in after the path check is caught).
* `overwrite` renamed a fresh 0644 file over the target: a 0600 file became readable by
  everyone, and a 0444 file (read-only on purpose) was replaced; `append` wrote to it when
  reach runs as root. Write-protected files are refused, replaced files keep mode and owner.
* NUL in `content` and `text` was accepted (the docs promise a refusal).
* `..\\x`, `\\\\server\\share`, `C:\\x` were names of new files in the root: harmless on
  POSIX, a way out once the folder is shared with Windows; refused with the POSIX spelling.

Families that held are pinned too: unicode look-alikes of `..` and `/` stay inside.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
import reach_files.jail as jail_module


def _outside_tree(box: Any) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in box.outside.iterdir()}


@pytest.fixture
def linked(box: Any) -> Path:
    """`hl.txt` in the root: a hard link to the outside secret."""
    os.link(box.outside / "secret.txt", box.root / "hl.txt")
    return box.root / "hl.txt"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"path": "hl.txt"}),
        ("read_file", {"path": "hl.txt", "offset": 3}),
        ("read_file", {"path": "hl.txt", "max_bytes": 1}),
        ("read_file", {"path": "./hl.txt"}),
        ("read_file", {"path": "notes/../hl.txt"}),  # refused for `..` anyway
        ("write_file", {"path": "hl.txt", "content": "pwned", "mode": "append"}),
        ("write_file", {"path": "hl.txt", "content": "", "mode": "append"}),
        ("write_file", {"path": "hl.txt", "content": "pwned"}),  # create: exists
    ],
)
async def test_a_hard_link_to_an_outside_file_is_neither_read_nor_changed(
    box: Any, linked: Path, secret: str, tool: str, args: dict[str, Any]
) -> None:
    before = _outside_tree(box)
    r = await box.call(tool, **{**args, "path": args["path"]})
    assert not r.ok, r.content
    assert secret not in r.error.message
    assert _outside_tree(box) == before


async def test_hard_links_at_depth_through_symlinks_and_in_search(box: Any, linked: Path, secret: str) -> None:
    (box.root / "notes" / "deep").mkdir()
    os.link(box.outside / "secret.txt", box.root / "notes" / "deep" / "k.txt")
    (box.root / "alias.txt").symlink_to(box.root / "hl.txt")  # a symlink inside, to the link
    for path in ("notes/deep/k.txt", "alias.txt", str(box.root / "hl.txt")):
        r = await box.call("read_file", path=path)
        assert not r.ok and r.error.code == "invalid_arguments", (path, r)
        assert "hard link" in r.error.message
    r = await box.call("search_files", text="TOP-SECRET")
    assert r.ok and r.content["matches"] == []
    r = await box.call("search_files", text="SECRET", ignore_case=True, pattern="**/*.txt")
    assert r.ok and r.content["matches"] == []


async def test_a_hard_link_swapped_in_after_the_check_is_refused(
    box: Any, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (box.root / "swap.txt").write_text("harmless\n")
    real_locate = jail_module.Jail.locate

    def locate_then_swap(self: Any, path: str) -> Any:
        loc = real_locate(self, path)
        os.unlink(box.root / "swap.txt")
        os.link(box.outside / "secret.txt", box.root / "swap.txt")
        return loc

    monkeypatch.setattr(jail_module.Jail, "locate", locate_then_swap)
    r = await box.call("read_file", path="swap.txt")
    assert not r.ok and "hard link" in r.error.message and secret not in str(r.error.message)
    before = _outside_tree(box)
    r = await box.call("write_file", path="swap.txt", content="pwned", mode="append")
    assert not r.ok and _outside_tree(box) == before


async def test_overwrite_of_a_hard_link_replaces_only_the_name_inside(box: Any, linked: Any, secret: str) -> None:
    r = await box.call("write_file", path="hl.txt", content="mine", mode="overwrite")
    assert r.ok
    assert linked.read_text() == "mine" and (box.outside / "secret.txt").read_text() == secret
    r = await box.call("read_file", path="hl.txt")  # one name again: a plain file
    assert r.ok and r.content["content"] == "mine"


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o440, 0o404, 0o000, 0o555, 0o4444])
@pytest.mark.parametrize("write_mode", ["overwrite", "append"])
async def test_write_protected_files_are_not_changed(box: Any, mode: int, write_mode: str) -> None:
    target = box.root / "notes" / "locked.md"
    target.write_text("keep me\n")
    target.chmod(mode)
    r = await box.call("write_file", path="notes/locked.md", content="pwned", mode=write_mode)
    assert not r.ok and r.error.code == "execution_failed"
    assert "write-protected" in r.error.message and f"{mode & 0o7777:04o}" in r.error.message
    assert target.read_bytes() == b"keep me\n" and stat.S_IMODE(target.stat().st_mode) == mode
    assert sorted(os.listdir(target.parent)) == ["locked.md", "todo.md", "北京.txt"]  # no temporary left


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o664, 0o755, 0o200, 0o620])
async def test_overwrite_keeps_the_mode_of_the_file_it_replaces(box: Any, mode: int) -> None:
    target = box.root / "notes" / "private.md"
    target.write_text("old\n")
    target.chmod(mode)
    r = await box.call("write_file", path="notes/private.md", content="new\n", mode="overwrite")
    assert r.ok, r.error
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == mode


@pytest.mark.parametrize("mode", [0o4755, 0o2755, 0o6755, 0o1777, 0o4644])
async def test_overwrite_drops_set_id_and_sticky_bits(box: Any, mode: int) -> None:
    target = box.root / "tool.sh"
    target.write_text("old\n")
    target.chmod(mode)
    r = await box.call("write_file", path="tool.sh", content="new\n", mode="overwrite")
    assert r.ok
    assert stat.S_IMODE(target.stat().st_mode) == mode & 0o777


async def test_overwrite_keeps_the_owner_when_reach_may(box: Any) -> None:
    target = box.root / "owned.md"
    target.write_text("old\n")
    if os.geteuid() != 0:
        pytest.fail("this test checks chown and needs root (the CI container runs as root)")
    os.chown(target, 65534, 65534)
    r = await box.call("write_file", path="owned.md", content="new\n", mode="overwrite")
    assert r.ok
    st = target.stat()
    assert (st.st_uid, st.st_gid, target.read_text()) == (65534, 65534, "new\n")


async def test_new_files_are_still_created_and_writable_ones_changed(box: Any) -> None:
    r = await box.call("write_file", path="fresh/a.md", content="a")
    assert r.ok
    r = await box.call("write_file", path="fresh/a.md", content="b", mode="append")
    assert r.ok and (box.root / "fresh" / "a.md").read_text() == "ab"


@pytest.mark.parametrize("value", ["\x00", "a\x00", "\x00b", "a\x00b", "line\n\x00\n", "北\x00京", "😀\x00"])
@pytest.mark.parametrize("tool", ["write_file", "search_files"])
async def test_nul_in_content_and_text_is_refused(box: Any, tool: str, value: str) -> None:
    args = {"path": "nul.md", "content": value} if tool == "write_file" else {"text": value}
    r = await box.call(tool, **args)
    assert not r.ok and r.error.code == "invalid_arguments"
    assert "NUL" in r.error.message
    assert not (box.root / "nul.md").exists()


async def test_nul_through_json_text_is_refused(box: Any) -> None:
    r = await box.reach.invoke("write_file", '{"path": "nul.md", "content": "a\\u0000b"}')
    assert not r.ok and r.error.code == "invalid_arguments"
    assert not (box.root / "nul.md").exists()


WINDOWS = [
    "..\\secret.txt",
    "..\\..\\etc\\passwd",
    "notes\\..\\..\\x.txt",
    "notes/..\\..\\x.txt",
    "notes\\..",
    "a\\b\\..\\..\\..\\x",
    "\\\\server\\share\\x.txt",
    "\\\\?\\C:\\x.txt",
    "\\\\.\\pipe\\x",
    "\\\\localhost\\c$\\x",
    "\\etc\\passwd",
    "C:\\Windows\\win.ini",
    "c:/x.txt",
    "C:",
    "Z:\\",
    "C:\\..\\x",
]


@pytest.mark.parametrize("path", WINDOWS)
@pytest.mark.parametrize("tool", ["read_file", "write_file", "list_dir", "search_files"])
async def test_windows_style_and_unc_paths_are_refused(box: Any, tool: str, path: str) -> None:
    before = sorted(p.name for p in box.root.rglob("*"))
    args: dict[str, Any] = {"path": path}
    if tool == "write_file":
        args["content"] = "pwned"
    r = await box.call(tool, **args)
    assert not r.ok and r.error.code == "invalid_arguments", (tool, path, r)
    assert "POSIX" in r.error.message
    assert sorted(p.name for p in box.root.rglob("*")) == before


async def test_a_backslash_inside_a_plain_name_is_still_a_name(box: Any) -> None:
    r = await box.call("write_file", path="notes/a\\b.txt", content="x")
    assert r.ok and (box.root / "notes" / "a\\b.txt").read_text() == "x"


LOOKALIKES = [
    "\uff0e\uff0e/x.txt",  # fullwidth full stops
    "\u2025/x.txt",  # two dot leader
    "\u2024\u2024/x.txt",  # one dot leader twice
    "\ufe52\ufe52/x.txt",  # small full stops
    "..\u200b/x.txt",  # zero-width space
    ".\u0307/x.txt",
    "%2e%2e/x.txt",
    "%2e%2e%2fx.txt",
    "..%2fx.txt",
    "..\u2215x.txt",  # division slash
    "..\u2044x.txt",  # fraction slash
    "..\uff0fx.txt",  # fullwidth solidus
    "\u2025\u2215\u2025\u2215x.txt",
]


@pytest.mark.parametrize("path", LOOKALIKES)
async def test_lookalikes_of_dotdot_and_slash_stay_inside(box: Any, path: str) -> None:
    outside_before = sorted(os.listdir(box.outside.parent))
    r = await box.call("write_file", path=path, content="x")
    assert r.ok, r.error
    made = box.root / path
    assert made.read_text() == "x" and made.resolve().is_relative_to(box.root.resolve())
    assert sorted(os.listdir(box.outside.parent)) == outside_before
    r = await box.call("read_file", path=path)
    assert r.ok and r.content["content"] == "x"


@pytest.mark.parametrize("swap", [str.upper, str.swapcase, lambda s: s.replace("/", "//")])
async def test_the_root_spelled_in_another_case_is_outside(box: Any, swap: Any) -> None:
    spelled = swap(str(box.root))
    r = await box.call("read_file", path=spelled + "/readme.txt")
    if swap is not str.upper and swap is not str.swapcase:  # `//` is the same folder
        assert r.ok
        return
    assert not r.ok and r.error.code == "invalid_arguments"


@pytest.mark.parametrize("kind", ["fifo", "socket"])
@pytest.mark.parametrize("write_mode", ["overwrite", "append", "create"])
async def test_pipes_and_sockets_are_not_replaced_by_overwrite(box: Any, kind: str, write_mode: str) -> None:
    """`overwrite` renamed a regular file over a FIFO or socket; now refused like the other modes."""
    import socket

    target = box.root / "notes" / "special"
    if kind == "fifo":
        os.mkfifo(target)
        holder = None
    else:
        holder = socket.socket(socket.AF_UNIX)
        holder.bind(str(target))
    try:
        r = await box.call("write_file", path="notes/special", content="x", mode=write_mode)
        assert not r.ok and r.error.code == "execution_failed"
        mode = target.lstat().st_mode
        assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISSOCK(mode)
    finally:
        if holder is not None:
            holder.close()


async def test_create_on_a_folder_says_it_is_a_folder(box: Any) -> None:
    for path in ("notes", "notes/", "./notes"):
        r = await box.call("write_file", path=path, content="x")
        assert not r.ok and "is a folder" in r.error.message, (path, r.error)


def _make_special(path: Path, kind: str) -> Any:
    """A FIFO, a socket or a character device (`/dev/null`'s and `/dev/zero`'s numbers; root)."""
    import socket

    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        holder = socket.socket(socket.AF_UNIX)
        holder.bind(str(path))
        return holder
    else:
        if os.geteuid() != 0:
            pytest.fail("device nodes need root (the CI container runs as root)")
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3 if kind == "null" else 5))
    return None


@pytest.mark.parametrize("kind", ["fifo", "socket", "null", "zero"])
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"path": "notes/dev"}),
        ("read_file", {"path": "notes/dev", "offset": 0, "max_bytes": 10}),
        ("write_file", {"path": "notes/dev", "content": "x", "mode": "append"}),
        ("write_file", {"path": "notes/dev", "content": "x", "mode": "create"}),
        ("write_file", {"path": "notes/dev", "content": "x", "mode": "overwrite"}),
        ("search_files", {"text": "x"}),
        ("search_files", {"text": "x", "pattern": "dev", "path": "notes"}),
    ],
)
async def test_devices_pipes_and_sockets_are_never_opened(
    box: Any, monkeypatch: pytest.MonkeyPatch, kind: str, tool: str, args: dict[str, Any]
) -> None:
    """Opening a device can act by itself (a watchdog arms, a tape rewinds; a FIFO's writer
    wakes up): the type is looked at first and the node is never opened."""
    holder = _make_special(box.root / "notes" / "dev", kind)
    opened: list[str] = []
    real_open = os.open

    def spy(path: Any, flags: int, *rest: Any, **kw: Any) -> int:
        opened.append(os.fsdecode(path))
        return real_open(path, flags, *rest, **kw)

    monkeypatch.setattr(os, "open", spy)
    try:
        r = await box.call(tool, **args)
    finally:
        monkeypatch.undo()
        if holder is not None:
            holder.close()
    assert "dev" not in opened, (tool, opened)
    if tool == "search_files":
        assert r.ok and r.content["matches"] == []
    else:
        assert not r.ok and r.error.code == "execution_failed"
        assert "not a regular file" in r.error.message or "already exists" in r.error.message
