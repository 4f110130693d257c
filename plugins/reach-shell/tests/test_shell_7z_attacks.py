"""Red-team family: 7-Zip reading or writing files no argument names.

7z's switches are case-insensitive words (`-i`, `-ai`, `-spf`), read by the default grammar as
plain text, and its list files (`@list`, `-i@list`, `-ir@list`, `-ai@list`) hold the names it
works on: `7z a o.7z @list` with `/elsewhere/secret` in `list` archived that file, and
`7z e -so -an -ai@alist` extracted an archive outside the root. `-spf` extracts members at the
absolute names they carry (`/elsewhere/x`), which 7z strips otherwise. Every call below did that
before the fix (the controls run each without reach); now each is refused while paths are
confined, and ordinary archiving and extracting still work.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import SECRET, exists

from reach_core import InvalidArguments

_SEARCH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def armed(root: Path, outside: Path) -> Path:
    """Lists in the root naming `outside/secret.txt` and an archive outside; a zip with a member named
    absolutely into `outside`. Returns the outside folder."""
    if shutil.which("7z", path=_SEARCH) is None:
        pytest.fail("7z (p7zip-full) is not installed on this machine")
    (root / "list").write_text(f"{outside}/secret.txt\n")
    (root / "rlist").write_text("../outside/secret.txt\n")
    subprocess.run(["7z", "a", str(outside / "other.7z"), str(outside / "secret.txt")], check=True,
                   capture_output=True)
    (root / "alist").write_text(f"{outside}/other.7z\n")
    (root / "ralist").write_text("../outside/other.7z\n")
    with zipfile.ZipFile(root / "abs.zip", "w") as archive:
        archive.writestr(zipfile.ZipInfo(f"{outside}/written.txt"), "x\n")
    return outside


_CREATES = [
    ["a", "o.7z", "@list"],
    ["a", "o.7z", "@rlist"],
    ["u", "o.7z", "@list"],
    ["a", "-tzip", "o.7z", "@list"],
    ["a", "o.7z", "a.txt", "-i@list"],
    ["a", "o.7z", "a.txt", "-I@list"],
    ["a", "o.7z", "a.txt", "-ir@list"],
    ["a", "o.7z", "a.txt", "-IR@rlist"],
    ["a", "o.7z", "a.txt", "-ir-@list"],
    ["a", "o.7z", "a.txt", "-ir0@list"],
]
_READS = [
    ["e", "-so", "-an", "-ai@alist"],
    ["e", "-so", "-AN", "-AI@alist"],
    ["x", "-so", "-an", "-air@ralist"],
    ["e", "-so", "-an", "-ai@ralist"],
]
_WRITES = [
    ["x", "abs.zip", "-spf", "-y"],
    ["x", "abs.zip", "-SPF", "-y"],
    ["x", "-spf", "-y", "abs.zip"],
    ["e", "abs.zip", "-Spf", "-y"],
]


def _7z(root: Path, args: list[str]) -> str:
    done = subprocess.run(["7z", *args], cwd=root, capture_output=True, text=True, timeout=30, check=False,
                          env={"PATH": _SEARCH, "HOME": str(root / "sub"), "LANG": "C.UTF-8"},
                          stdin=subprocess.DEVNULL)
    return done.stdout


def _stole(root: Path) -> bool:
    if not (root / "o.7z").exists():
        return False
    return SECRET in _7z(root, ["e", "-so", "o.7z"])


@pytest.mark.parametrize("args", _CREATES)
def test_control_each_create_archives_the_secret_without_reach(root: Path, armed: Path, args: list[str]) -> None:
    _7z(root, args)
    assert _stole(root), args


@pytest.mark.parametrize("args", _READS)
def test_control_each_read_prints_an_archive_outside_without_reach(root: Path, armed: Path, args: list[str]) -> None:
    assert SECRET in _7z(root, args), args


@pytest.mark.parametrize("args", _WRITES)
def test_control_each_extract_writes_outside_without_reach(root: Path, armed: Path, args: list[str]) -> None:
    _7z(root, args)
    assert exists(armed / "written.txt"), args


@pytest.mark.parametrize("args", _CREATES + _READS + _WRITES)
async def test_7z_reads_and_writes_no_file_outside(root: Path, armed: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"7z": {}}, timeout=20))
    with pytest.raises(InvalidArguments) as refused:
        result = await tool.execute({"command": "7z", "args": args})
        assert SECRET not in result["stdout"]  # shown when the call was not refused
    assert "inside the root" in refused.value.message
    assert not _stole(root)
    assert not exists(armed / "written.txt")


@pytest.mark.parametrize(
    "args",
    [["a", "o.7z", "a.txt", "sub"], ["l", "abs.zip"], ["x", "abs.zip", "-osub", "-y"], ["e", "-so", "abs.zip"],
     ["a", "o.7z", "a.txt", "-x!b.txt"], ["a", "o.7z", "-ir!*.txt"], ["a", "-pP@ss", "o.7z", "a.txt"]],
)
async def test_ordinary_7z_calls_still_run(root: Path, armed: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"7z": {}}, timeout=20))
    result = await tool.execute({"command": "7z", "args": args})
    assert result["exit_code"] == 0, result["stdout"] + result["stderr"]
    assert not exists(armed / "written.txt")
