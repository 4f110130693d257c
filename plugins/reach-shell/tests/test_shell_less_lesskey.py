"""Red-team family: less reading a lesskey file the agent wrote, whose `#env` section runs a program.

`less` with its output not a terminal copies its files like `cat`, so a viewer looks harmless.
But `--lesskey-src=FILE` (and `-k FILE`/`--lesskey-file`, the compiled form) reads a lesskey
file, and its `#env` section sets `LESSOPEN=|cmd %s`: the input preprocessor less runs for every
file it opens, terminal or not. less takes long options in any case (`--LESSKEY-SRC`) and by
unique prefix (`--lesskey-s`), short ones bundled (`-Sklk.bin`). Every call below ran the
command before the fix (the controls run each without reach and see the marker); now each is
refused whatever the allow-list says, and `less a.txt` still prints the file.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import exists

from reach_core import InvalidArguments

_SEARCH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def mark(root: Path, tmp_path: Path) -> Path:
    """The root holds `lk` (lesskey source) and `lk.bin` (compiled) whose LESSOPEN touches the marker."""
    for program in ("less", "lesskey"):
        if shutil.which(program, path=_SEARCH) is None:
            pytest.fail(f"{program} is not installed on this machine")
    marker = tmp_path / "MARK"
    (root / "lk").write_text(f"#env\nLESSOPEN=|touch {marker}; cat %s\n")
    subprocess.run(["lesskey", "-o", str(root / "lk.bin"), str(root / "lk")], check=True, capture_output=True)
    return marker


_ATTACKS = [
    ["--lesskey-src=lk", "a.txt"],
    ["--lesskey-src", "lk", "a.txt"],
    ["--lesskey-s=lk", "a.txt"],
    ["--lesskey-sr", "lk", "a.txt"],
    ["--LESSKEY-SRC=lk", "a.txt"],
    ["--Lesskey-Src=lk", "a.txt"],
    ["--lesskey-file=lk.bin", "a.txt"],
    ["--lesskey-f=lk.bin", "a.txt"],
    ["--LESSKEY-FILE", "lk.bin", "a.txt"],
    ["-k", "lk.bin", "a.txt"],
    ["-klk.bin", "a.txt"],
    ["-Sklk.bin", "a.txt"],
    ["-S", "-k", "lk.bin", "a.txt"],
    ["-iNk", "lk.bin", "a.txt"],
]


@pytest.mark.parametrize("args", _ATTACKS)
def test_control_each_call_runs_lessopen_without_reach(root: Path, mark: Path, args: list[str]) -> None:
    subprocess.run(["less", *args], cwd=root, capture_output=True, timeout=20, check=False,
                   env={"PATH": _SEARCH, "HOME": str(root / "sub"), "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL)
    assert exists(mark), args


@pytest.mark.parametrize("confine", [True, False])
@pytest.mark.parametrize("args", _ATTACKS)
async def test_less_reads_no_lesskey_file(root: Path, mark: Path, args: list[str], confine: bool) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"less": {}}, timeout=10, confine_paths=confine))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "less", "args": args})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(mark)


@pytest.mark.parametrize("args", [["a.txt"], ["-N", "a.txt"], ["-S", "b.txt", "a.txt"], ["--line-numbers", "a.txt"],
                                  ["-K", "a.txt"], ["--LINE-NUMBERS", "a.txt"]])
async def test_less_still_prints_files(root: Path, mark: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"less": {}}, timeout=10))
    result = await tool.execute({"command": "less", "args": args})
    assert result["exit_code"] == 0, result["stderr"]
    assert "alpha" in result["stdout"]
