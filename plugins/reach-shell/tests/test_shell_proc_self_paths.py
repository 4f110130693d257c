"""Paths through `/proc/self` name the reading process's own directory, not reach's.

The path check resolved `/proc/self/cwd/..` in reach's process: with reach started in a
folder inside the shell root (root = the home folder, reach run in `~/project`), that is
a folder inside the root, and the call passed. The program resolves it in *its* process,
whose working directory is the call's (`root` itself by default): `/proc/self/cwd/..` is
the root's parent. `cat /proc/self/cwd/../outside/secret.txt` printed a file beside the
root, `sort -o` wrote one, and a link to `/proc/self/cwd/..` (made by `ln` or extracted
by tar) was kept by the sweep, since reach resolved it inside too. Now a path that goes
through /proc (also by a link, `/dev/fd`) is outside the root, in the check and in the sweep.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import SECRET, lexists, snapshot, tar_archive

from reach_core import InvalidArguments

COMMANDS = {"cat": {}, "head": {}, "sort": {}, "ln": {}, "tar": {}, "cp": {}}

# The program runs in the root; reach in `root/sub`: `/proc/self/cwd/..` is the root to reach,
# the root's parent (where `outside/` is) to the program.
ATTACKS = [
    ("cat", ["/proc/self/cwd/../outside/secret.txt"]),
    ("cat", ["//proc/self/cwd/../outside/secret.txt"]),
    ("cat", ["/proc/./self/cwd/../outside/secret.txt"]),
    ("cat", ["/proc/thread-self/cwd/../outside/secret.txt"]),
    ("cat", ["/dev/fd/../cwd/../outside/secret.txt"]),
    ("cat", ["/proc/self/task/../cwd/../outside/secret.txt"]),
    ("cat", ["/proc/self/root/proc/self/cwd/../outside/secret.txt"]),
    ("cat", ["a.txt", "/proc/self/cwd/../outside/secret.txt"]),
    ("head", ["-c", "100", "/proc/self/cwd/../outside/secret.txt"]),
    ("sort", ["-o", "/proc/self/cwd/../outside/written.txt", "a.txt"]),
    ("sort", ["--output=/proc/self/cwd/../outside/written.txt", "a.txt"]),
    ("cp", ["a.txt", "/proc/self/cwd/../outside/written.txt"]),
    ("ln", ["-s", "/proc/self/cwd/..", "pc"]),
]

LINK_TARGETS = [
    "/proc/self/cwd/..",
    "/proc/thread-self/cwd/..",
    "/dev/fd/../cwd/..",
    "//proc/self/cwd/..",
    "/proc/self/root/proc/self/cwd/..",
]


@pytest.fixture
def inside_root(root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """reach started in a folder of the root; conftest's secret beside the root."""
    monkeypatch.chdir(root / "sub")
    return outside


def _copied_in(root: Path) -> list[str]:
    """Files of the root holding the secret (an archive or copy of it)."""
    return [str(p) for p in root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


@pytest.mark.parametrize(("program", "args"), ATTACKS, ids=[f"{p}:{' '.join(a)}" for p, a in ATTACKS])
async def test_paths_through_proc_self_are_outside_the_root(
    root: Path, tmp_path: Path, inside_root: Path, program: str, args: list[str]
) -> None:
    tool = RunCommand(ShellSettings(root=root, commands=COMMANDS))
    before = snapshot(tmp_path, root)
    content = None
    with pytest.raises(InvalidArguments) as refused:
        content = await tool.execute({"command": program, "args": args})
    assert refused.value.field.startswith("args[")
    assert SECRET not in str(content)
    assert snapshot(tmp_path, root) == before
    assert _copied_in(root) == []
    assert not lexists(root / "pc")


@pytest.mark.parametrize("target", LINK_TARGETS)
async def test_a_link_through_proc_self_is_removed(
    root: Path, tmp_path: Path, inside_root: Path, target: str
) -> None:
    tar_archive(root / "l.tar", [("pc", target, b"")])
    tool = RunCommand(ShellSettings(root=root, commands=COMMANDS))
    first = await tool.execute({"command": "tar", "args": ["-xf", "l.tar"]})
    assert first.get("removed") == [f"pc -> {target}"]
    content = None
    try:
        content = await tool.execute({"command": "cat", "args": ["pc/outside/secret.txt"]})
    except InvalidArguments:
        pass
    assert SECRET not in str(content)


async def test_honest_calls_from_a_reach_started_inside_the_root_still_run(root: Path, inside_root: Path) -> None:
    tool = RunCommand(ShellSettings(root=root, commands=COMMANDS))
    assert (await tool.execute({"command": "cat", "args": ["a.txt", "sub/../b.txt"]}))["stdout"] == "alpha\nbeta\n"
    linked = await tool.execute({"command": "ln", "args": ["-s", "a.txt", "alias"]})
    assert "removed" not in linked
    assert (await tool.execute({"command": "cat", "args": ["alias"]}))["stdout"] == "alpha\n"
    assert (await tool.execute({"command": "cat", "args": ["/dev/null"]}))["exit_code"] == 0
