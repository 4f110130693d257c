"""Red-team family: libarchive's bsdtar reading or writing files no argument names.

bsdtar had no grammar, so the default one read its options: a long `--files-from` was refused,
but not the letters of its dash-less first argument (`cTf list o.tar`), nor `-I` (its synonym
for `-T`), nor `-P` (`--absolute-paths`). And bsdtar reads `@archive` operands as more
entries, where an *mtree* archive (a text file the agent writes) takes each entry's data from
any path (`./x type=file contents=/elsewhere/secret`). So `bsdtar -cf o.tar -T list` and
`bsdtar -cf o.tar @spec` archived a file outside the root, and `bsdtar -xPf a.tar` wrote members
named `/elsewhere/x`. Every call below did that before the fix (the controls run each without
reach); now each is refused while paths are confined, and ordinary archiving still works.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import SECRET, exists, make_archive, tar_archive

from reach_core import InvalidArguments

_SEARCH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def armed(root: Path, outside: Path) -> Path:
    """Name lists and mtree specs in the root naming `outside/secret.txt`; an archive whose members are
    named absolutely and by `..` into `outside`. Returns where the extraction escapes would write."""
    if shutil.which("bsdtar", path=_SEARCH) is None:
        pytest.fail("bsdtar (libarchive-tools) is not installed on this machine")
    secret = outside / "secret.txt"
    (root / "list").write_text(f"{secret}\n")
    (root / "rlist").write_text("../outside/secret.txt\n")
    (root / "spec").write_text(f"#mtree\n./stolen type=file contents={secret}\n")
    (root / "rspec").write_text("#mtree\n./stolen type=file contents=../outside/secret.txt\n")
    make_archive(root)
    tar_archive(root / "abs.tar", [(f"{outside}/written.txt", None, b"x\n"), ("../outside/climbed.txt", None, b"y\n")])
    return outside


def _stole(root: Path) -> bool:
    """Whether `o.tar` in the root holds the secret."""
    archive = root / "o.tar"
    if not archive.exists():
        return False
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            if handle is not None and SECRET.encode() in handle.read():
                return True
    return False


_CREATES = [
    ["-cf", "o.tar", "-T", "list"],
    ["-cf", "o.tar", "-Tlist"],
    ["cTf", "list", "o.tar"],
    ["-cvT", "list", "-f", "o.tar"],
    ["--files-from=list", "-cf", "o.tar"],
    ["--files-from", "rlist", "-cf", "o.tar"],
    ["-cf", "o.tar", "-I", "list"],
    ["-cf", "o.tar", "-Ilist"],
    ["cIf", "list", "o.tar"],
    ["-cvf", "o.tar", "-I", "rlist"],
    ["-cf", "o.tar", "@spec"],
    ["-cf", "o.tar", "@rspec"],
    ["cf", "o.tar", "@spec"],
    ["-c", "-f", "o.tar", "a.txt", "@rspec"],
    ["--create", "--file=o.tar", "@spec"],
    ["-cf", "o.tar", "-W", "files-from=list"],
    ["-cf", "o.tar", "-Wfiles-from=rlist"],
    ["-cf", "o.tar", "-W", "files-f=list"],
]
_EXTRACTS = [
    ["-xPf", "abs.tar"],
    ["xPf", "abs.tar"],
    ["-Pxf", "abs.tar"],
    ["-x", "-P", "-f", "abs.tar"],
    ["-xf", "abs.tar", "--absolute-paths"],
    ["-xf", "abs.tar", "--absolute-p"],
]


def _escaped(outside: Path) -> bool:
    return exists(outside / "written.txt") or exists(outside / "climbed.txt")


def _bsdtar(root: Path, args: list[str]) -> None:
    subprocess.run(["bsdtar", *args], cwd=root, capture_output=True, timeout=20, check=False,
                   env={"PATH": _SEARCH, "HOME": str(root / "sub"), "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args", _CREATES)
def test_control_each_create_archives_the_secret_without_reach(root: Path, armed: Path, args: list[str]) -> None:
    _bsdtar(root, args)
    assert _stole(root), args


@pytest.mark.parametrize("args", _EXTRACTS)
def test_control_each_extract_writes_outside_without_reach(root: Path, armed: Path, args: list[str]) -> None:
    _bsdtar(root, args)
    assert _escaped(armed), args


@pytest.mark.parametrize("args", _CREATES + _EXTRACTS)
async def test_bsdtar_reads_and_writes_no_file_outside(root: Path, armed: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"bsdtar": {}}, timeout=10))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "bsdtar", "args": args})
    assert "reach-shell" in refused.value.message
    assert not _stole(root)
    assert not _escaped(armed)


_RUNS = [
    ["-cf", "o.tar", "-W", "use-compress-program=touch MARK", "a.txt"],
    ["-cf", "o.tar", "-Wuse-compress-program=touch MARK", "a.txt"],
    ["-cf", "o.tar", "-W", "use-compress=touch MARK", "a.txt"],
    ["-c", "-W", "use-compress-prog=touch MARK", "-f", "o.tar", "a.txt"],
    ["-cf", "o.tar", "--use-compress-program=touch MARK", "a.txt"],
    ["-cf", "o.tar", "--use-compress", "touch MARK", "a.txt"],
]


@pytest.mark.parametrize("args", _RUNS)
def test_control_each_compressor_runs_without_reach(root: Path, armed: Path, args: list[str]) -> None:
    _bsdtar(root, args)
    assert exists(root / "MARK"), args


@pytest.mark.parametrize("confine", [True, False])
@pytest.mark.parametrize("args", _RUNS)
async def test_bsdtar_runs_no_compressor_the_agent_names(root: Path, armed: Path, args: list[str],
                                                        confine: bool) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"bsdtar": {}}, timeout=10, confine_paths=confine))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "bsdtar", "args": args})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(root / "MARK")


@pytest.mark.parametrize(
    "args",
    [["-cf", "o.tar", "a.txt", "sub"], ["czf", "o.tgz", "a.txt"], ["-tvf", "abs.tar"], ["-xf", "a.tar"],
     ["xvf", "a.tar", "-C", "sub"],
     ["-cf", "o.tar", "--exclude", "b.txt", "."], ["-xOf", "abs.tar"]],
)
async def test_ordinary_bsdtar_calls_still_run(root: Path, armed: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"bsdtar": {}}, timeout=10))
    result = await tool.execute({"command": "bsdtar", "args": args})
    assert result["exit_code"] == 0, result["stderr"]
    assert not _escaped(armed)
