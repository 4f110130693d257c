"""Red-team family: man-db formatting pages and reading config the agent wrote.

`man` had no grammar. Its pager does not run when the output is no terminal, but:

* `-C`/`--config-file` reads a man_db.conf whose `DEFINE nroff …` names the formatter man runs
  through a shell: `man -C mdb.conf -l y.1` ran `sh -c 'touch M'` (refused whatever the
  allow-list says, with `-P`/`--pager`, `-H`/`--html` and `-X`/`--gxditview`, which name programs);
* a page the agent wrote (`-l x.1`, `./x.1`, or one found through `-M`/`--manpath` in the root)
  is formatted with its `.so ../outside/cfg` request, which printed a file outside the root:
  refused while paths are confined.

The controls run each call without reach and see the marker or the secret; system pages still
format.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import SECRET, exists

from reach_core import InvalidArguments

_SEARCH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def pages(root: Path, outside: Path) -> Path:
    if shutil.which("man", path=_SEARCH) is None:
        pytest.fail("man (man-db) is not installed on this machine")
    for folder in (root.parent, root, outside):
        folder.chmod(0o755)  # man-db may read as its own user
    (outside / "secret.txt").chmod(0o644)
    (root / "x.1").write_text(".TH X 1\n.SH NAME\n.so ../outside/secret.txt\n")
    (root / "sub" / "x.1").write_text(".TH X 1\n.SH NAME\n.so ../outside/secret.txt\n")  # from the cwd
    (root / "y.1").write_text(".TH Y 1\n.SH NAME\ny \\- a page\n")
    (root / "mp" / "man1").mkdir(parents=True)
    (root / "mp" / "man1" / "z.1").write_text(".TH Z 1\n.SH NAME\n.so ../../outside/secret.txt\n")
    (root / "mdb.conf").write_text("DEFINE nroff sh -c 'touch M; cat'\nDEFINE pager sh -c 'touch M; cat'\n")
    return root


_RUNS = [
    ["-C", "mdb.conf", "-l", "y.1"],
    ["--config-file=mdb.conf", "./y.1"],
    ["--config-file", "mdb.conf", "-l", "y.1"],
    ["--config-f=mdb.conf", "-l", "y.1"],
    ["-Cmdb.conf", "-l", "y.1"],
    ["-lCmdb.conf", "y.1"],
]
_READS = [
    ["-l", "x.1"],
    ["--local-file", "x.1"],
    ["--local-f", "x.1"],
    ["./x.1"],
    ["sub/x.1"],
    ["-M", "mp", "z"],
    ["-Mmp", "z"],
    ["--manpath=mp", "z"],
    ["--manp", "mp", "z"],
    ["-aM", "mp", "z"],
]


def _man(root: Path, args: list[str]) -> str:
    done = subprocess.run(["man", *args], cwd=root, capture_output=True, text=True, timeout=30, check=False,
                          env={"PATH": _SEARCH, "HOME": str(root / "sub"), "LANG": "C.UTF-8"},
                          stdin=subprocess.DEVNULL)
    return done.stdout


@pytest.mark.parametrize("args", _RUNS)
def test_control_each_config_runs_its_formatter_without_reach(pages: Path, args: list[str]) -> None:
    _man(pages, args)
    assert exists(pages / "M"), args


@pytest.mark.parametrize("args", _READS)
def test_control_each_page_prints_the_file_outside_without_reach(pages: Path, args: list[str]) -> None:
    assert SECRET in _man(pages, args), args


@pytest.mark.parametrize("confine", [True, False])
@pytest.mark.parametrize("args", _RUNS)
async def test_man_reads_no_config_naming_programs(pages: Path, args: list[str], confine: bool) -> None:
    tool = RunCommand(ShellSettings(root=pages, commands={"man": {}}, timeout=20, confine_paths=confine))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "man", "args": args})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(pages / "M")


@pytest.mark.parametrize("args", _READS)
async def test_man_formats_no_page_of_the_root(pages: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=pages, commands={"man": {}}, timeout=20))
    with pytest.raises(InvalidArguments) as refused:
        result = await tool.execute({"command": "man", "args": args})
        assert SECRET not in result["stdout"]  # shown when the call was not refused
    assert "inside the root" in refused.value.message


@pytest.mark.parametrize("args", [["ls"], ["1", "ls"], ["-f", "ls"], ["-w", "ls"], ["-k", "^ls$"], ["-a", "ls"]])
async def test_system_pages_still_format(pages: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=pages, commands={"man": {}}, timeout=20))
    result = await tool.execute({"command": "man", "args": args})
    assert result["exit_code"] == 0, result["stderr"]
    assert not exists(pages / "M")
