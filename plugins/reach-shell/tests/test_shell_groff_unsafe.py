"""Red-team family: groff's unsafe mode running the shell commands of a document.

groff (and nroff, troff) run in safer mode by default: a document's `.sy cmd`, `.pi`, `.open` are
refused. `-U` switches that off, and `.sy touch M` in a document of the root ran. Every spelling
below did before the fix (the controls run each without reach); now `-U` is refused in any bundle,
whatever the allow-list says, and documents still format. (A document's `.so ../elsewhere/x` is read
in safer mode too: a path inside a file, which no argument check sees; see the docs.)
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

_ATTACKS = [
    ("groff", ["-U", "-Tascii", "g.ms"]),
    ("groff", ["-Tascii", "-U", "g.ms"]),
    ("groff", ["-UTascii", "g.ms"]),
    ("groff", ["-tU", "-Tascii", "g.ms"]),
    ("groff", ["-Tascii", "g.ms", "-U"]),
    ("nroff", ["-U", "g.ms"]),
    ("troff", ["-U", "g.ms"]),
]


@pytest.fixture
def mark(root: Path) -> Path:
    for program in ("groff", "nroff", "troff"):
        if shutil.which(program, path=_SEARCH) is None:
            pytest.fail(f"{program} (groff-base) is not installed on this machine")
    (root / "g.ms").write_text(f".sy touch {root}/M\nhello\n")
    return root / "M"


@pytest.mark.parametrize(("command", "args"), _ATTACKS)
def test_control_unsafe_mode_runs_the_document_command(root: Path, mark: Path, command: str, args: list[str]) -> None:
    subprocess.run([command, *args], cwd=root, capture_output=True, timeout=20, check=False,
                   env={"PATH": _SEARCH, "HOME": str(root / "sub"), "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL)
    assert exists(mark), (command, args)


@pytest.mark.parametrize("confine", [True, False])
@pytest.mark.parametrize(("command", "args"), _ATTACKS)
async def test_groff_never_runs_unsafe(root: Path, mark: Path, command: str, args: list[str], confine: bool) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={command: {}}, timeout=10, confine_paths=confine))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": command, "args": args})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(mark)


@pytest.mark.parametrize(("command", "args"), [("groff", ["-Tascii", "g.ms"]), ("nroff", ["g.ms"]),
                                               ("groff", ["-Tascii", "-P-c", "g.ms"])])
async def test_documents_still_format_in_safer_mode(root: Path, mark: Path, command: str, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={command: {}}, timeout=10))
    result = await tool.execute({"command": command, "args": args})
    assert "hello" in result["stdout"]
    assert not exists(mark)
