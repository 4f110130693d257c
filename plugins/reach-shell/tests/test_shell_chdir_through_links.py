"""`tar -C`/`git -C` through a link inside the root, then `..`.

The path check read the arguments after a `-C dir` from `dir` with its `..` applied as
text: `-C l/..` with `l -> .` (a link that stays inside, kept) was the working folder
to the check, but its parent to tar, which follows `l` first. So from `sub`,
`tar -cf s.tar -C l/.. ../outside/secret.txt` looked like `sub/../outside/secret.txt`
(inside) and archived the file beside the root. Now the folder a `-C` changes to is
resolved as the program will reach it (links first, then `..`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import SECRET, TAR, make_repo, snapshot

from reach_core import InvalidArguments

# (cwd, links to make as (name, target), command, args); the secret is at <tmp>/outside/secret.txt
ATTACKS = [
    ("sub", [("sub/l", ".")], "tar", ["-cf", "s.tar", "-C", "l/..", "../outside/secret.txt"]),
    ("sub", [("sub/l", ".")], "tar", ["-cf", "s.tar", "--directory=l/..", "../outside/secret.txt"]),
    ("sub", [("sub/l", ".")], "tar", ["-cf", "s.tar", "--directory", "l/..", "../outside/secret.txt"]),
    ("sub", [("sub/l", ".")], "tar", ["cfC", "s.tar", "l/..", "../outside/secret.txt"]),
    ("sub", [("sub/l", ".")], "tar", ["-cf", "s.tar", "-C", "l", "-C", "..", "../outside/secret.txt"]),
    ("sub", [("sub/l", "./.")], "tar", ["-cf", "s.tar", "-C", "l/..", "../outside/secret.txt"]),
    ("sub", [("sub/l", "m"), ("sub/m", ".")], "tar", ["-cf", "s.tar", "-C", "l/..", "../outside/secret.txt"]),
    ("sub", [("sub/l", "../sub")], "tar", ["-cf", "s.tar", "-C", "l/..", "../outside/secret.txt"]),
    ("sub/deep", [("sub/deep/l", ".")], "tar", ["-cf", "s.tar", "-C", "l/../..", "../outside/secret.txt"]),
    ("sub", [("sub/l", ".")], "git", ["-C", "l/..", "diff", "--no-index", "a.txt", "../outside/secret.txt"]),
    ("sub", [("sub/l", ".")], "git", ["-C", "l/..", "-C", ".", "diff", "--no-index", "a.txt",
                                      "../outside/secret.txt"]),
]


@pytest.fixture
def outside(outside: Path, root: Path) -> Path:
    """conftest's folder (with `secret.txt`), and `a.txt` in `sub` and `sub/deep` of the root."""
    where = outside
    (root / "sub" / "deep").mkdir()
    for folder in (root / "sub", root / "sub" / "deep"):
        (folder / "a.txt").write_text("alpha\n")
    return where


def _archived(path: Path) -> str:
    if not path.exists():
        return ""
    return subprocess.run([TAR, "-xOf", str(path)], capture_output=True, text=True, check=False).stdout


@pytest.mark.parametrize(("cwd", "links", "program", "args"), ATTACKS,
                         ids=[f"{p}:{' '.join(a)}:{links}" for _, links, p, a in ATTACKS])
async def test_arguments_after_a_chdir_through_a_link_are_read_from_where_the_program_is(
    root: Path, tmp_path: Path, outside: Path, cwd: str, links: list[tuple[str, str]], program: str,
    args: list[str]
) -> None:
    for name, target in links:
        (root / name).symlink_to(target)
    if program == "git":
        make_repo(root)
    tool = RunCommand(ShellSettings(root=root, commands={program: {}}))
    before = snapshot(tmp_path, root)
    content = None
    with pytest.raises(InvalidArguments) as refused:
        content = await tool.execute({"command": program, "args": args, "cwd": cwd})
    assert refused.value.field.startswith("args[")
    assert SECRET not in str(content) and SECRET not in _archived(root / cwd / "s.tar")
    assert snapshot(tmp_path, root) == before


async def test_a_chdir_through_a_link_that_stays_inside_still_works(root: Path, outside: Path) -> None:
    (root / "sub" / "l").symlink_to(".")
    tool = RunCommand(ShellSettings(root=root, commands={"tar": {}}))
    done = await tool.execute({"command": "tar", "args": ["-cf", "s.tar", "-C", "l/..", "b.txt"], "cwd": "sub"})
    assert done["exit_code"] == 0, done["stderr"]
    assert _archived(root / "sub" / "s.tar") == "beta\n"
