"""`git apply --unsafe-paths`: a patch applied to the names written in it.

git refuses a patch that names `../elsewhere/x` or `/elsewhere/x` unless it is given
`--unsafe-paths`; then `git apply p.patch` changed and created files outside the root.
No argument names them (they are inside the patch), so while paths are confined the
option is refused, in every spelling git accepts (parse-options takes unique prefixes),
and without it the same patches stay refused by git itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import make_repo, snapshot

from reach_core import InvalidArguments

SPELLINGS = [
    ["apply", "--unsafe-paths", "p.patch"],
    ["apply", "p.patch", "--unsafe-paths"],
    ["apply", "--unsafe-path", "p.patch"],
    ["apply", "--unsafe", "p.patch"],
    ["apply", "--unsaf", "p.patch"],
    ["apply", "-v", "--unsafe-paths", "p.patch"],
    ["apply", "--reject", "--unsafe-paths", "p.patch"],
    ["apply", "--unsafe-paths", "--whitespace=nowarn", "p.patch"],
    ["--no-pager", "apply", "--unsafe-paths", "p.patch"],
    ["apply", "--", "--unsafe-paths", "p.patch"],
]


def _patches(outside: Path) -> dict[str, str]:
    return {
        "climbing": "--- a/../outside/victim.txt\n+++ b/../outside/victim.txt\n@@ -1 +1 @@\n-keep\n+pwned\n",
        "absolute": f"--- {outside}/victim.txt\n+++ {outside}/victim.txt\n@@ -1 +1 @@\n-keep\n+pwned\n",
        "new-file": "--- /dev/null\n+++ b/../outside/new.txt\n@@ -0,0 +1 @@\n+pwned\n",
    }


@pytest.fixture
def outside(outside: Path, root: Path) -> Path:
    """conftest's folder with a `victim.txt` the patches aim at, and a repository in the root."""
    where = outside
    (where / "victim.txt").write_text("keep\n")
    make_repo(root)
    return where


@pytest.mark.parametrize("patch", ["climbing", "absolute", "new-file"])
@pytest.mark.parametrize("args", SPELLINGS, ids=[" ".join(a) for a in SPELLINGS])
async def test_unsafe_paths_is_refused_while_paths_are_confined(
    root: Path, tmp_path: Path, outside: Path, args: list[str], patch: str
) -> None:
    (root / "p.patch").write_text(_patches(outside)[patch])
    tool = RunCommand(ShellSettings(root=root, commands={"git": {}}))
    before = snapshot(tmp_path, root)
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "git", "args": args})
    assert "--unsaf" in str(refused.value) and "names written in it" in str(refused.value)
    assert snapshot(tmp_path, root) == before
    assert (outside / "victim.txt").read_text() == "keep\n"


@pytest.mark.parametrize("patch", ["climbing", "absolute", "new-file"])
async def test_without_it_git_refuses_the_patch_and_a_patch_inside_applies(
    root: Path, tmp_path: Path, outside: Path, patch: str
) -> None:
    (root / "p.patch").write_text(_patches(outside)[patch])
    tool = RunCommand(ShellSettings(root=root, commands={"git": {}}))
    before = snapshot(tmp_path, root)
    done = await tool.execute({"command": "git", "args": ["apply", "p.patch"]})
    assert done["exit_code"] != 0
    assert snapshot(tmp_path, root) == before
    (root / "ok.patch").write_text("--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-one\n+two\n")
    done = await tool.execute({"command": "git", "args": ["apply", "ok.patch"]})
    assert done["exit_code"] == 0, done["stderr"]
    assert (root / "notes.md").read_text() == "two\n"


async def test_unconfined_git_may_use_it(root: Path, outside: Path) -> None:
    """Control: with `confine_paths = false` the option runs, and the patch lands outside."""
    (root / "p.patch").write_text(_patches(outside)["climbing"])
    tool = RunCommand(ShellSettings(root=root, commands={"git": {"confine_paths": False}}))
    done = await tool.execute({"command": "git", "args": ["apply", "--unsafe-paths", "p.patch"]})
    assert done["exit_code"] == 0, done["stderr"]
    assert (outside / "victim.txt").read_text() == "pwned\n"
