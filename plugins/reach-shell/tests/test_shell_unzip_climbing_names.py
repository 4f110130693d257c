"""Info-ZIP `unzip -:`: members land at the `../` names the archive holds.

Without `-:` unzip skips the `../` parts of a member's name (and strips a leading `/`);
with it `unzip -: evil.zip` wrote `../elsewhere/x` beside the root. The names are inside
the archive, so no argument shows them: while paths are confined the option is refused,
in any bundle (`-o:`, `-:q`) and anywhere on the line, as tar's `-P` is.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import snapshot

from reach_core import InvalidArguments

SPELLINGS = [
    ["-:", "evil.zip"], ["-o:", "evil.zip"], ["-:o", "evil.zip"], ["-qo:", "evil.zip"], ["-n:", "evil.zip"],
    ["-o", "-:", "evil.zip"], ["evil.zip", "-:"], ["-:", "-d", "sub", "evil.zip"], ["-:", "evil.zip", "-d", "sub"],
    ["-X:", "evil.zip"], ["-:", "-x", "nothing", "--", "evil.zip"],
]
MEMBERS = ["../outside/climb.txt", "sub/../../outside/climb.txt", "./../outside/climb.txt",
           "../../work/../outside/c.txt"]


@pytest.fixture
def outside(outside: Path, root: Path) -> Path:
    """conftest's folder, and `evil.zip` in the root with members climbing to it."""
    where = outside
    with zipfile.ZipFile(root / "evil.zip", "w") as archive:
        for member in MEMBERS:
            archive.writestr(member, "pwned\n")
        archive.writestr("inside.txt", "fine\n")
    return where


@pytest.mark.parametrize("args", SPELLINGS, ids=[" ".join(a) for a in SPELLINGS])
async def test_unzip_keeping_climbing_names_is_refused_while_paths_are_confined(
    root: Path, tmp_path: Path, outside: Path, args: list[str]
) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"unzip": {}}))
    before = snapshot(tmp_path, root)
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "unzip", "args": args})
    assert "`-:`" in str(refused.value)
    assert snapshot(tmp_path, root) == before  # `outside` (in tmp_path) got nothing


async def test_plain_unzip_keeps_every_member_inside(root: Path, tmp_path: Path, outside: Path) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"unzip": {}}))
    before = snapshot(tmp_path, root)
    done = await tool.execute({"command": "unzip", "args": ["-o", "evil.zip"]})
    assert done["exit_code"] in (0, 1), done["stderr"]  # 1: warnings about the skipped `../`
    assert snapshot(tmp_path, root) == before
    assert (root / "inside.txt").read_text() == "fine\n"


async def test_unconfined_unzip_may_use_it(root: Path, outside: Path) -> None:
    """Control: with `confine_paths = false` the option runs, and the members land outside."""
    tool = RunCommand(ShellSettings(root=root, commands={"unzip": {"confine_paths": False}}))
    done = await tool.execute({"command": "unzip", "args": ["-o:", "evil.zip"]})
    assert done["exit_code"] == 0, done["stderr"]
    assert (outside / "climb.txt").read_text() == "pwned\n"
