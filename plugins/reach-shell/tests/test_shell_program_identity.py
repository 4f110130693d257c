"""Red-team family: a program installed under another program's name gets the real one's grammar.

The grammar was chosen by the binary's *name* before its link was followed, and copies and hard
links were not looked at: a `tar` that is a link to bsdtar (or a link to a link, a copy, a hard
link of a copy, `gtar`), or GNU tar copied as `sort` or `wc`, was read with the wrong option
grammar, so bsdtar's `@spec` (an mtree archive taking an entry's data from any path) and
`-W use-compress-program=cmd`, and GNU tar's `--use-compress-program` and `-I cmd` in a `sort`
or `wc`, went through. Each call below did that before the fix (the controls run it without
reach); now the binary is identified by its links and by being the same file, or a copy, of a
known program, and each call is refused.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from reach_shell.programs import BSDTAR, TAR, grammar_for
from shell_attack import SECRET, exists, make_archive

from reach_core import InvalidArguments

_BSDTAR = shutil.which("bsdtar", path="/usr/bin:/bin") or "/usr/bin/bsdtar"
_GNUTAR = shutil.which("tar", path="/usr/bin:/bin") or "/usr/bin/tar"


def _link(bin_dir: Path, name: str, target: str) -> Path:
    (bin_dir / name).symlink_to(target)
    return bin_dir / name


def _chain(bin_dir: Path, name: str, target: str) -> Path:
    (bin_dir / "hop").symlink_to(target)
    (bin_dir / name).symlink_to("hop")
    return bin_dir / name


def _copy(bin_dir: Path, name: str, target: str) -> Path:
    shutil.copy2(target, bin_dir / name)
    return bin_dir / name


def _hard_link_of_copy(bin_dir: Path, name: str, target: str) -> Path:
    spare = bin_dir.parent / "spare"  # a copy off the search path, then a hard link to it on it
    spare.mkdir(exist_ok=True)
    shutil.copy2(target, spare / "prog")
    os.link(spare / "prog", bin_dir / name)
    return bin_dir / name


_Make = Callable[[Path, str, str], Path]

# (how it is installed, its name, the real program, the arguments, what proves the attack worked)
_CASES: list[tuple[_Make, str, str, list[str], str]] = [
    *[(make, name, _BSDTAR, args, proof)
      for make in (_link, _chain, _copy, _hard_link_of_copy)
      for name in ("tar", "gtar")
      for args, proof in ((["-cf", "o.tar", "@spec"], "stole"),
                          (["-cf", "o.tar", "-W", "use-compress-program=touch MARK", "a.txt"], "ran"))],
    (_copy, "mytar", _BSDTAR, ["-cf", "o.tar", "@spec"], "stole"),
    (_link, "mytar", _BSDTAR, ["cf", "o.tar", "@spec"], "stole"),
    (_copy, "sort", _GNUTAR, ["-cf", "o.tar", "a.txt", "--use-compress-program=touch MARK"], "ran"),
    (_link, "sort", _GNUTAR, ["-cf", "o.tar", "--use-compress-prog", "touch MARK", "a.txt"], "ran"),
    (_copy, "wc", _GNUTAR, ["-cf", "o.tar", "-I", "touch MARK", "a.txt"], "ran"),
    (_link, "wc", _GNUTAR, ["-cf", "o.tar", "-Itouch MARK", "a.txt"], "ran"),
]
_IDS = [f"{make.__name__[1:]}-{name}-{Path(real).name}-{i}" for i, (make, name, real, _, _) in enumerate(_CASES)]


@pytest.fixture
def armed(root: Path, outside: Path) -> Path:
    """An mtree spec in the root naming `outside/secret.txt`; a folder for the installed programs."""
    for needed in (_BSDTAR, _GNUTAR):
        if not os.path.isfile(needed):
            pytest.fail(f"{needed} is not installed on this machine")
    (root / "spec").write_text(f"#mtree\n./stolen type=file contents={outside / 'secret.txt'}\n")
    make_archive(root)
    bin_dir = root.parent / "bin"
    bin_dir.mkdir()
    return bin_dir


def _worked(root: Path, proof: str) -> bool:
    if proof == "ran":
        return exists(root / "MARK")
    archive = root / "o.tar"
    if not exists(archive):
        return False
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            if handle is not None and SECRET.encode() in handle.read():
                return True
    return False


@pytest.mark.parametrize(("make", "name", "real", "args", "proof"), _CASES, ids=_IDS)
def test_control_each_call_works_without_reach(root: Path, armed: Path, make: _Make, name: str, real: str,
                                               args: list[str], proof: str) -> None:
    binary = make(armed, name, real)
    subprocess.run([str(binary), *args], cwd=root, capture_output=True, timeout=20, check=False,
                   env={"PATH": "/usr/bin:/bin", "HOME": str(root / "sub")}, stdin=subprocess.DEVNULL)
    assert _worked(root, proof), args


@pytest.mark.parametrize(("make", "name", "real", "args", "proof"), _CASES, ids=_IDS)
async def test_a_program_under_another_name_is_checked_as_itself(
    root: Path, armed: Path, make: _Make, name: str, real: str, args: list[str], proof: str
) -> None:
    make(armed, name, real)
    search = f"{armed}:/usr/bin:/bin"
    tool = RunCommand(ShellSettings(root=root, commands={name: {}}, timeout=10, search_path=search))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": name, "args": args})
    assert "reach-shell" in refused.value.message
    assert not _worked(root, proof)


def test_the_real_programs_keep_their_own_grammars(armed: Path) -> None:
    """GNU tar and bsdtar found by their own names, and a link named like the program it leads to."""
    assert grammar_for("tar", _GNUTAR) is TAR
    assert grammar_for("bsdtar", _BSDTAR) is BSDTAR
    assert grammar_for("archive", str(_link(armed, "bsdtar", _GNUTAR))) is TAR


async def test_ordinary_calls_of_a_renamed_bsdtar_still_run(root: Path, armed: Path) -> None:
    _link(armed, "tar", _BSDTAR)
    tool = RunCommand(ShellSettings(root=root, commands={"tar": {}}, timeout=10,
                                    search_path=f"{armed}:/usr/bin:/bin"))
    for args in (["-cf", "o.tar", "a.txt"], ["tvf", "o.tar"], ["-xf", "a.tar", "-C", "sub"]):
        result = await tool.execute({"command": "tar", "args": args})
        assert result["exit_code"] == 0, (args, result["stderr"])


async def test_a_copy_planted_on_the_search_path_does_not_decide_what_a_program_is(root: Path, armed: Path) -> None:
    """Only the system's own programs are compared with: a copy of bsdtar the agent put on a
    writable search path as `sort` leaves the real bsdtar bsdtar, so its `@spec` is still refused."""
    _copy(armed, "sort", _BSDTAR)
    tool = RunCommand(ShellSettings(root=root, commands={"bsdtar": {}}, timeout=10,
                                    search_path=f"{armed}:/usr/bin:/bin"))
    assert tool.grammars["bsdtar"] is BSDTAR
    with pytest.raises(InvalidArguments):
        await tool.execute({"command": "bsdtar", "args": ["-cf", "o.tar", "@spec"]})
    assert not _worked(root, "stole")
    assert grammar_for("tar", str(_link(armed, "tar", _GNUTAR))) is TAR
