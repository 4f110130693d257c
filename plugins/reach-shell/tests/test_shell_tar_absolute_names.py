"""GNU tar's `-P` / `--absolute-names`: members land at the names the archive holds.

Without it tar strips a leading `/` from member names and skips members that climb
with `..`; with it `tar -xPf evil.tar` wrote `/anywhere/x` and `../../x`. No argument
names those paths (they are inside the archive), so the path check could not see
them: with `confine_paths` (the default) the option itself is refused now, in every
spelling tar accepts, whatever the allow-list says. A command with
`confine_paths = false` may still use it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import TAR, make_archive, snapshot, tar_archive

from reach_core import InvalidArguments

SPELLINGS = [
    ["-xPf", "evil.tar"], ["xPf", "evil.tar"], ["Pxf", "evil.tar"], ["-Pxf", "evil.tar"], ["-xvPf", "evil.tar"],
    ["-x", "-P", "-f", "evil.tar"], ["-xf", "evil.tar", "-P"], ["-x", "--absolute-names", "-f", "evil.tar"],
    ["-x", "--absolute-name", "--file=evil.tar"], ["-x", "--abs", "-f", "evil.tar"], ["--extract", "--absol",
    "--file", "evil.tar"], ["--get", "-Pf", "evil.tar"], ["-xf", "evil.tar", "--", "-P"],
    ["-x", "-f", "evil.tar", "--absolute-names", "--verbose"], ["-tPf", "evil.tar"],
]


def _evil(root: Path, outside: Path) -> None:
    """An archive whose members name paths outside: absolute, and climbing from the root."""
    tar_archive(root / "evil.tar", [(name, None, b"pwned\n")
                                    for name in (f"{outside}/absolute.txt", f"../{outside.name}/climbing.txt")])


@pytest.fixture
def outside(outside: Path, root: Path) -> Path:
    """conftest's folder, and `evil.tar` in the root naming it (absolute and climbing)."""
    where = outside
    _evil(root, where)
    return where


@pytest.mark.parametrize("allow", [None, ["-x", "-t", "-f", "-P", "-v"]])
@pytest.mark.parametrize("args", SPELLINGS)
async def test_absolute_names_are_refused_while_paths_are_confined(
    root: Path, tmp_path: Path, outside: Path, args: list[str], allow: list[str] | None
) -> None:
    rule: dict[str, object] = {} if allow is None else {"allow_options": allow}
    tool = RunCommand(ShellSettings(root=root, commands={"tar": rule}))
    before = snapshot(tmp_path, root)
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "tar", "args": args})
    assert "inside the root" in str(refused.value)
    assert snapshot(tmp_path, root) == before
    assert not (outside / "absolute.txt").exists()


def test_control_tar_writes_outside_with_absolute_names(root: Path, outside: Path) -> None:
    subprocess.run([TAR, "-xPf", "evil.tar"], cwd=root, check=True, capture_output=True)
    assert (outside / "absolute.txt").read_text() == "pwned\n"
    assert (outside / "climbing.txt").read_text() == "pwned\n"


async def test_without_the_option_the_same_archive_stays_inside(root: Path, tmp_path: Path, outside: Path) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"tar": {}}))
    before = snapshot(tmp_path, root)
    out = await tool.execute({"command": "tar", "args": ["-xf", "evil.tar"]})
    assert "Removing leading" in out["stderr"]
    assert snapshot(tmp_path, root) == before
    assert (root / str(outside).lstrip("/") / "absolute.txt").read_text() == "pwned\n"  # landed in the root


async def test_a_command_without_confined_paths_may_use_it(root: Path, outside: Path) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"tar": {"confine_paths": False}}))
    out = await tool.execute({"command": "tar", "args": ["-xPf", "evil.tar"]})
    assert out["exit_code"] == 0, out["stderr"]
    assert (outside / "absolute.txt").read_text() == "pwned\n"


async def test_ordinary_extraction_still_works(root: Path) -> None:
    make_archive(root)
    (root / "dest").mkdir()
    tool = RunCommand(ShellSettings(root=root, commands={"tar": {}}))
    out = await tool.execute({"command": "tar", "args": ["-xpf", "a.tar", "-C", "dest"]})
    assert out["exit_code"] == 0, out["stderr"]
    assert (root / "dest" / "a.txt").read_text() == "alpha\n"
