"""A link that led inside the root when it was made, and leads out later without changing.

The sweep (links.py) used to judge only links whose inode changed during the call: a
relative link `a/b/x -> ../..` (the root, kept) leads above the root once its folder
is moved up (`mv a/b b2`: the folder's inode changes, not the link's), and `x -> y/..`
does once `y` is pointed elsewhere. The next `tar -xf` of a member `b2/x/escaped.txt`
wrote beside the root. Now every link is judged after every confined call, and one
that leads out is kept only when it led to that same place the last time a sweep saw
it (a deployment's own link, made outside reach's calls).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import lexists, snapshot, tar_archive

COMMANDS = {"mkdir": {}, "ln": {}, "mv": {}, "tar": {"allow_options": ["-x", "-f"]}}


async def _run(tool: RunCommand, command: str, *args: str, cwd: str | None = None) -> dict[str, object]:
    params: dict[str, object] = {"command": command, "args": list(args)}
    if cwd:
        params["cwd"] = cwd
    done = await tool.execute(params)
    assert done["exit_code"] == 0, done["stderr"]
    return done


# name: (calls that make a link leading inside, calls that make it lead out unchanged, the link after)
SCENARIOS: dict[str, tuple[list[tuple[str, list[str], str | None]], list[tuple[str, list[str], str | None]], str]] = {
    "parent-moved-up": (
        [("mkdir", ["-p", "a/b"], None), ("ln", ["-s", "../..", "x"], "a/b")],
        [("mv", ["a/b", "b2"], None)],
        "b2/x",
    ),
    "grandparent-moved-up": (
        [("mkdir", ["-p", "a/b/c"], None), ("ln", ["-s", "../../..", "x"], "a/b/c")],
        [("mv", ["a/b", "b2"], None)],
        "b2/c/x",
    ),
    "moved-by-target-directory": (
        [("mkdir", ["-p", "a/b"], None), ("ln", ["-s", "../..", "x"], "a/b")],
        [("mv", ["-t", ".", "a/b"], None)],
        "b/x",
    ),
    "moved-by-long-option": (
        [("mkdir", ["-p", "a/b"], None), ("ln", ["-s", "../..", "x"], "a/b")],
        [("mv", ["--target-directory=.", "a/b"], None)],
        "b/x",
    ),
    "folder-on-its-path-replaced-by-a-link": (
        [("mkdir", ["-p", "a/b"], None), ("ln", ["-s", "a/b/../..", "x"], None)],
        [("mv", ["a/b", "a/old"], None), ("ln", ["-s", ".", "a/b"], None)],
        "x",
    ),
    "link-on-its-path-retargeted": (
        [("ln", ["-s", "sub", "y"], None), ("ln", ["-s", "y/..", "x"], None)],
        [("ln", ["-sfn", ".", "y"], None)],
        "x",
    ),
}


@pytest.mark.parametrize("restart", [False, True], ids=["same-process", "after-a-restart"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_a_link_that_comes_to_lead_out_is_removed(
    root: Path, tmp_path: Path, scenario: str, restart: bool
) -> None:
    make, turn, link = SCENARIOS[scenario]
    tool = RunCommand(ShellSettings(root=root, commands=COMMANDS))
    for command, args, cwd in make:
        done = await _run(tool, command, *args, cwd=cwd)
        assert "removed" not in done  # it leads inside: kept
    if restart:
        tool = RunCommand(ShellSettings(root=root, commands=COMMANDS))
    await asyncio.sleep(1.1)  # the link is older than the next calls (their window starts a second early)
    removed: list[str] = []
    for command, args, cwd in turn:
        removed += list((await _run(tool, command, *args, cwd=cwd)).get("removed", []))  # type: ignore[call-overload]
    assert [r.split(" -> ")[0] for r in removed] == [link]
    assert not lexists(root / link)
    tar_archive(root / "e.tar", [(f"{link}/escaped.txt", None, b"pwned\n")])
    before = snapshot(tmp_path, root)
    await tool.execute({"command": "tar", "args": ["-xf", "e.tar"]})
    assert snapshot(tmp_path, root) == before
    assert not (tmp_path / "escaped.txt").exists()


async def test_a_deployments_link_that_leads_out_elsewhere_after_a_move_is_removed(root: Path, tmp_path: Path) -> None:
    """A link leading out from before reach started is kept; moved up, it leads somewhere else."""
    (tmp_path / "shared").mkdir()
    (root / "p" / "q").mkdir(parents=True)
    (root / "p" / "q" / "data").symlink_to("../../../shared")
    await asyncio.sleep(1.1)
    tool = RunCommand(ShellSettings(root=root, commands=COMMANDS))
    kept = await _run(tool, "mkdir", "other")
    assert "removed" not in kept and (root / "p" / "q" / "data").is_symlink()
    moved = await _run(tool, "mv", "p/q", "q")
    assert moved["removed"] == ["q/data -> ../../../shared"]


async def test_links_made_outside_reach_while_it_runs_are_kept(root: Path, tmp_path: Path) -> None:
    """An operator's link (a virtualenv's `python -> /usr/bin/python3`) made after start is kept."""
    tool = RunCommand(ShellSettings(root=root, commands=COMMANDS))
    (root / "venv" / "bin").mkdir(parents=True)
    (root / "venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (root / "inner").symlink_to("sub")
    await asyncio.sleep(1.1)
    for _ in range(2):
        done = await _run(tool, "mkdir", "-p", "more")
        assert "removed" not in done
    assert (root / "venv" / "bin" / "python").is_symlink() and (root / "inner").is_symlink()
