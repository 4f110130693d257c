"""Two-call escapes through a symbolic link a program made from its input.

The first call restores a link that leads out (GNU tar extracts an archive's symlink
as it is; `ln` with a target that reads as inside from the working directory but not
from the link's folder; `cp -r`/`mv` carry links); the second writes through it
(`tar -xf` of a member `esc/x`, `cp a.txt esc`, `sort -o esc`). Each attack proves
nothing appeared or changed outside the root, and that the first call named the link
it removed. Links that stay inside, and links that were there before (a deployment's),
are kept.
"""

from __future__ import annotations

import asyncio
import io
import os
import tarfile
from pathlib import Path

import pytest
from reach_shell.links import sweep_way_outs
from shell_attack import lexists, snapshot, tar_archive

from reach_core import InvalidArguments


@pytest.fixture
def outside(outside: Path) -> Path:
    """conftest's folder beside the root, with a `victim.txt` the links aim at."""
    (outside / "victim.txt").write_text("keep\n")
    return outside


def links_leading_out(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_symlink() and not Path(os.path.realpath(p)).is_relative_to(root)]


TAR = {"allow_options": ["-x", "-v", "-f", "-C"]}


def _targets(root: Path, outside: Path) -> dict[str, str]:
    """Spellings of a link target that leads to `outside` (or above the root) from `esc`'s folder."""
    rel = os.path.relpath(outside, root)
    return {
        "absolute": str(outside),
        "relative": rel,
        "dot-slash": "./" + rel,
        "double-slash": "//" + str(outside).lstrip("/"),
        "trailing-slash": str(outside) + "/",
        "dotdot-chain": "../" * 8 + str(outside).lstrip("/"),
        "parent-of-root": "..",
        "filesystem-root": "/",
        "through-proc": f"/proc/self/root{outside}",
    }


LINK_NAMES = ["esc", "deep/er/esc", ".git/esc", ".hidden", "sp ace", "ünï", "-dash"]


@pytest.mark.parametrize("spelling", list(_targets(Path("/r"), Path("/o"))))
@pytest.mark.parametrize("name", LINK_NAMES)
async def test_a_link_leading_out_extracted_by_one_call_is_gone_before_the_next(make_tool,
    root: Path, tmp_path: Path, outside: Path, spelling: str, name: str
) -> None:
    target = _targets(root, outside)[spelling]
    if spelling in {"relative", "dot-slash", "parent-of-root"}:  # relative to the link's own folder
        target = "../" * name.count("/") + target
    tar_archive(root / "one.tar", [(name, target, b"")])
    tar_archive(root / "two.tar", [(f"{name}/x.txt", None, b"pwned\n"), (f"{name}/victim.txt", None, b"pwned\n")])
    before = snapshot(tmp_path, root)
    run = make_tool(tar=TAR)
    first = await run.execute({"command": "tar", "args": ["-xf", "one.tar"]})
    assert first["exit_code"] == 0, first["stderr"]
    assert first["removed"] == [f"{name} -> {target}"]
    assert "removed" in first["note"]
    assert not lexists(root / name)
    await run.execute({"command": "tar", "args": ["-xf", "two.tar"]})
    assert snapshot(tmp_path, root) == before
    assert (outside / "victim.txt").read_text() == "keep\n"


@pytest.mark.parametrize(
    "members",
    [
        [("a", "b", b""), ("b", "{out}", b"")],  # a chain: the second link leads out
        [("b", "{out}", b""), ("a", "b", b"")],
        [("d/", None, b""), ("d/esc", "../..", b"")],  # climbs from its own folder
        [("esc", "{out}/not-yet", b"")],  # dangling, out: a later mkdir would make it live
        [("file-link", "{out}/victim.txt", b"")],  # a file outside: `cp x file-link` writes it
    ],
    ids=["chain", "chain-reversed", "climb-from-folder", "dangling", "file-link"],
)
async def test_link_shapes_that_lead_out_are_removed(make_tool,
    root: Path, tmp_path: Path, outside: Path, members: list[tuple[str, str | None, bytes]]
) -> None:
    members = [(n, t.replace("{out}", str(outside)) if t else t, d) for n, t, d in members]
    if members[0][0] == "d/":  # a directory member: tarfile wants a DIRTYPE entry
        with tarfile.open(root / "one.tar", "w", format=tarfile.GNU_FORMAT) as tar:
            info = tarfile.TarInfo("d")
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
            link = tarfile.TarInfo("d/esc")
            link.type, link.linkname = tarfile.SYMTYPE, "../.."
            tar.addfile(link)
    else:
        tar_archive(root / "one.tar", members)
    out = await make_tool(tar=TAR).execute({"command": "tar", "args": ["-xf", "one.tar"]})
    assert out["exit_code"] == 0, out["stderr"]
    assert out["removed"], out
    for name in out["removed"]:
        assert not lexists(root / name.split(" -> ")[0])
    assert links_leading_out(root) == []  # what is left stays inside


@pytest.mark.parametrize(
    "second",
    [
        ["cp", ["a.txt", "file-link"]],
        ["sort", ["-o", "file-link", "a.txt"]],
        ["cp", ["a.txt", "esc/new.txt"]],
    ],
    ids=["cp-onto-link", "sort-o-onto-link", "cp-into-linked-folder"],
)
async def test_writes_by_other_programs_through_a_removed_link_stay_inside(make_tool,
    root: Path, tmp_path: Path, outside: Path, second: list
) -> None:
    tar_archive(root / "one.tar", [("file-link", str(outside / "victim.txt"), b""), ("esc", str(outside), b"")])
    before = snapshot(tmp_path, root)
    run = make_tool(tar=TAR, cp={}, sort={})
    first = await run.execute({"command": "tar", "args": ["-xf", "one.tar"]})
    assert sorted(first["removed"]) == [f"esc -> {outside}", f"file-link -> {outside / 'victim.txt'}"]
    command, args = second
    try:
        await run.execute({"command": command, "args": args})
    except InvalidArguments:
        pass  # refused is fine too; what matters is outside
    assert snapshot(tmp_path, root) == before
    assert (outside / "victim.txt").read_text() == "keep\n"


async def test_ln_whose_target_reads_inside_from_the_working_directory_but_not_from_its_folder(make_tool,
    root: Path, tmp_path: Path, outside: Path
) -> None:
    """`ln -s ../.. ../../up` run in deep/er: the path check reads `../..` from deep/er (the
    root: inside), but the link lives in the root, where `../..` is above it."""
    (root / "deep" / "er").mkdir(parents=True)
    run = make_tool(ln={}, cp={})
    out = await run.execute({"command": "ln", "args": ["-s", "../..", "../../up"], "cwd": "deep/er"})
    assert out["exit_code"] == 0, out["stderr"]
    assert out["removed"] == ["up -> ../.."]
    assert not lexists(root / "up")
    before = snapshot(tmp_path, root)
    again = await run.execute({"command": "cp", "args": ["a.txt", "up/" + outside.name + "/x"]})
    assert again["exit_code"] != 0  # no such folder in the root
    assert snapshot(tmp_path, root) == before


async def test_links_that_stay_inside_are_kept(make_tool, root: Path) -> None:
    (root / "d").mkdir()
    tar_archive(root / "one.tar", [("alias", "a.txt", b""), ("d/up", "../sub", b""), ("self", ".", b""),
                                ("abs-inside", str(root / "b.txt"), b"")])
    out = await make_tool(tar=TAR).execute({"command": "tar", "args": ["-xf", "one.tar"]})
    assert out["exit_code"] == 0, out["stderr"]
    assert "removed" not in out and "note" not in out
    assert (root / "alias").read_text() == "alpha\n"
    assert (root / "d" / "up").is_dir() and (root / "self").is_symlink()
    assert (root / "abs-inside").read_text() == "beta\n"


async def test_links_there_before_the_call_are_a_deployments_and_kept(make_tool, root: Path, outside: Path) -> None:
    (root / "shared").symlink_to(outside)
    (root / "deep").mkdir()
    (root / "deep" / "old").symlink_to("../../" + outside.name)
    await asyncio.sleep(1.1)  # the call's window starts a second early (ctime granularity)
    (root / "new.txt").write_text("new\n")
    # (extracting is refused while such links are there: test_shell_links_followed.py)
    out = await make_tool(tar={}).execute({"command": "tar", "args": ["-cf", "one.tar", "new.txt"]})
    assert out["exit_code"] == 0 and "removed" not in out
    assert (root / "shared").is_symlink() and (root / "deep" / "old").is_symlink()


def test_the_sweep_leaves_links_older_than_the_call(root: Path, outside: Path) -> None:
    (root / "old").symlink_to(outside)
    ctime = os.lstat(root / "old").st_ctime
    assert sweep_way_outs(root, since=ctime + 5) == []
    assert (root / "old").is_symlink()
    assert sweep_way_outs(root, since=ctime - 5) == [f"old -> {outside}"]
    assert not lexists(root / "old")


async def test_an_unconfined_command_keeps_its_links(make_tool, root: Path, outside: Path) -> None:
    """`confine_paths = false` lets a command name any file: its links are its deployer's choice."""
    tar_archive(root / "one.tar", [("esc", str(outside), b"")])
    out = await make_tool(tar=TAR, confine_paths=False).execute({"command": "tar", "args": ["-xf", "one.tar"]})
    assert "removed" not in out
    assert (root / "esc").is_symlink()


async def test_a_failed_or_timed_out_call_is_swept_too(make_tool, root: Path, tmp_path: Path, outside: Path) -> None:
    """tar stops on a damaged member after restoring the link: the call fails, the link goes."""
    tar_archive(root / "one.tar", [("esc", str(outside), b""), ("x.txt", None, b"data\n")])
    data = (root / "one.tar").read_bytes()
    (root / "one.tar").write_bytes(data[:1024 + 100])  # cut inside the second member
    out = await make_tool(tar=TAR).execute({"command": "tar", "args": ["-xf", "one.tar"]})
    assert out["exit_code"] != 0
    assert out["removed"] == [f"esc -> {outside}"]
    assert not lexists(root / "esc")


def _device_archive(path: Path, members: list[tuple[str, bytes, int, int]]) -> None:
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for name, kind, major, minor in members:
            info = tarfile.TarInfo(name)
            info.type, info.devmajor, info.devminor = kind, major, minor
            tar.addfile(info)


DEVICES = [
    ("disk", tarfile.BLKTYPE, 8, 0),
    ("deep/nvme", tarfile.BLKTYPE, 259, 0),
    ("mem", tarfile.CHRTYPE, 1, 1),
    ("kmsg", tarfile.CHRTYPE, 1, 11),
    (".hidden-null", tarfile.CHRTYPE, 1, 3),
    ("tty", tarfile.CHRTYPE, 5, 0),
]


@pytest.mark.parametrize("device", DEVICES, ids=[d[0] for d in DEVICES])
async def test_device_files_an_archive_restores_are_removed(
    make_tool, root: Path, device: tuple[str, bytes, int, int]
) -> None:
    """As root, tar makes the archive's devices (`cat disk` would read the raw disk); as
    another user it cannot. Either way none is left in the root after the call."""
    name, kind, major, minor = device
    _device_archive(root / "dev.tar", [device])
    out = await make_tool(tar=TAR).execute({"command": "tar", "args": ["-xf", "dev.tar"]})
    if os.geteuid() == 0:
        kind_name = "block" if kind == tarfile.BLKTYPE else "character"
        assert out["removed"] == [f"{name} ({kind_name} device {major}:{minor})"], out
    assert not lexists(root / name)


async def test_fifos_and_plain_files_stay(make_tool, root: Path) -> None:
    with tarfile.open(root / "one.tar", "w", format=tarfile.GNU_FORMAT) as tar:
        fifo = tarfile.TarInfo("pipe")
        fifo.type = tarfile.FIFOTYPE
        tar.addfile(fifo)
    out = await make_tool(tar=TAR).execute({"command": "tar", "args": ["-xf", "one.tar"]})
    assert out["exit_code"] == 0 and "removed" not in out, out
    assert lexists(root / "pipe")


async def test_one_turns_calls_cannot_race_the_sweep(make_tool, root: Path, tmp_path: Path, outside: Path) -> None:
    """The model sends both calls in one turn: run_command is sequential, so the second
    starts after the first's sweep, whatever the per-turn limit."""
    from reach_core import Reach

    tar_archive(root / "one.tar", [("esc", str(outside), b"")])
    tar_archive(root / "two.tar", [("esc/x.txt", None, b"pwned\n")])
    before = snapshot(tmp_path, root)
    reach = Reach({"reach": {"data_dir": str(tmp_path / "data")}, "agents": {"ops": {"auto_tier": "dangerous"}}})
    reach.register(make_tool(tar=TAR))
    try:
        assert reach.runtime.tools["run_command"].sequential
        results = await reach.invoke_many(
            [{"name": "run_command", "arguments": {"command": "tar", "args": ["-xf", "one.tar"]}},
             {"name": "run_command", "arguments": {"command": "tar", "args": ["-xf", "two.tar"]}}] * 3, agent="ops")
    finally:
        await reach.aclose()
    assert all(r.ok for r in results), [r.error for r in results]
    assert results[0].content["removed"] == [f"esc -> {outside}"]
    assert snapshot(tmp_path, root) == before


def _make_link(path: Path, target: Path) -> None:
    path.symlink_to(target)


async def test_a_cancelled_call_is_swept_too(make_tool, root: Path, outside: Path) -> None:
    """The core's deadline or a closed loop cancels the call: the link the program made
    while it ran (made here by the test, as a program would) is still removed."""
    run = asyncio.ensure_future(make_tool(sleep={}).execute({"command": "sleep", "args": ["30"]}))
    await asyncio.sleep(0.5)
    _make_link(root / "esc", outside)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert not lexists(root / "esc")


def _mode(path: Path) -> int:
    return os.lstat(path).st_mode


@pytest.mark.parametrize("mode", [0o4755, 0o2755, 0o6755, 0o4711, 0o6777], ids=oct)
async def test_set_id_bits_an_archive_restores_are_taken_off(make_tool, root: Path, mode: int) -> None:
    """As root, tar restores a setuid-root program as it is: any local user could run it as root."""
    with tarfile.open(root / "s.tar", "w", format=tarfile.GNU_FORMAT) as tar:
        data = b"\x7fELF not really\n"
        info = tarfile.TarInfo("bin/tool")
        info.size, info.mode, info.uid, info.gid = len(data), mode, 0, 0
        tar.addfile(info, io.BytesIO(data))
    out = await make_tool(tar=TAR).execute({"command": "tar", "args": ["-xf", "s.tar"]})
    assert out["exit_code"] == 0, out["stderr"]
    assert _mode(root / "bin" / "tool") & 0o6000 == 0
    if os.geteuid() == 0:  # tar restored the bits; the sweep took them off and said so
        bits = [n for b, n in ((0o4000, "set-user-ID"), (0o2000, "set-group-ID")) if mode & b]
        assert out["removed"] == [f"bin/tool ({' and '.join(bits)} bit)"]
        assert _mode(root / "bin" / "tool") & 0o777 == mode & 0o777  # the rest as the archive said


@pytest.mark.parametrize("spelling", ["4755", "u+s", "g+s", "ug+s", "+s", "a+s", "6711"])
async def test_chmod_that_sets_an_id_bit_is_undone(make_tool, root: Path, spelling: str) -> None:
    out = await make_tool(chmod={}).execute({"command": "chmod", "args": [spelling, "a.txt"]})
    assert out["exit_code"] == 0, out["stderr"]
    assert _mode(root / "a.txt") & 0o6000 == 0
    assert out["removed"] and out["removed"][0].startswith("a.txt (set-")


async def test_older_set_id_files_and_setgid_folders_are_kept(make_tool, root: Path) -> None:
    (root / "old").write_text("x")
    os.chmod(root / "old", 0o4755)
    (root / "shared").mkdir()
    os.chmod(root / "shared", 0o2775)  # a group's shared folder: harmless, common
    await asyncio.sleep(1.1)
    out = await make_tool(chmod={}).execute({"command": "chmod", "args": ["g+s", "shared"]})
    assert "removed" not in out
    assert _mode(root / "old") & 0o4000 and _mode(root / "shared") & 0o2000
