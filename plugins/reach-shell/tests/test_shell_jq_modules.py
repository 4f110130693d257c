"""Red-team family: jq reading files outside the root through its module system.

A jq program names modules and data files in its own text, where no path check looks:
`import "../outside/s" as $s;` reads `../outside/s.json` (printed whole by `$s`),
`include "../outside/m";` and `import "../outside/m" as m;` load `../outside/m.jq`, a
`{search: "/elsewhere"}` metadata object adds any folder to the search path, and
`modulemeta` loads a module whose name the program computes. A program file (`-f p.jq`,
`--from-file`) or a test file (`--run-tests`) in the root holds the same lines. Every call
below printed the file outside before the fix (the controls run each without reach and see
it); now each is refused while paths are confined, and ordinary jq programs still run.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings

from reach_core import InvalidArguments

_SEARCH = "/usr/local/bin:/usr/bin:/bin"
_LEAK = "LEAKED-jq-5d1c"


@pytest.fixture
def outside(outside: Path, root: Path) -> Path:
    """Beside the root: a JSON file and a jq module (with its metadata) holding the secret; in the
    root, a program file and a test file that read them."""
    if shutil.which("jq", path=_SEARCH) is None:
        pytest.fail("jq is not installed on this machine")
    (outside / "s.json").write_text(f'{{"secret": "{_LEAK}"}}\n')
    (outside / "m.jq").write_text(f'module {{meta: "{_LEAK}"}};\ndef leak: "{_LEAK}";\n')
    (root / "p.jq").write_text('include "../outside/m"; leak\n')
    (root / "t.txt").write_text(f'include "../outside/m"; leak\nnull\n"{_LEAK}"\n\n')
    (root / "lib.jq").write_text("def x: 1;\n")
    return outside


def _attacks(outside: str) -> list[list[str]]:
    return [
        ["-n", 'import "../outside/s" as $s; $s'],
        ["-n", 'include "../outside/m"; leak'],
        ["-n", 'import "../outside/m" as m; m::leak'],
        ["-n", f'import "s" as $s {{search: "{outside}"}}; $s'],
        ["-n", 'import "s" as $s {search: "../outside"}; $s'],
        ["-n", 'include "m" {search: "../outside"}; leak'],
        ["-n", 'import "m" as m {search: "../outside"}; m::leak'],
        ["-n", '# a comment\ninclude\n"../outside/m";leak'],
        ["-n", 'module {a: 1};\tinclude "../outside/m" ;leak'],
        ["-n", 'include@text "../outside/m"; leak'],
        ["-n", 'import"../outside/s"as$s;$s'],
        ["-n", '\n\n  import "../outside/s" as $s;\n$s'],
        ["-nr", 'include "../outside/m"; leak'],
        ["-n", "--arg", "a", "b", 'include "../outside/m"; leak'],
        ["-n", "-L", ".", '"../outside/m" | modulemeta'],
        ["-n", "-L", ".", '"../out" + "side/m" | modulemeta'],
        ["-n", "-f", "p.jq"],
        ["-nf", "p.jq"],
        ["-rnf", "p.jq"],
        ["--from-file", "p.jq", "-n"],
        ["-n", "p.jq", "--from-file"],
        ["--run-tests", "t.txt"],
    ]


_COUNT = len(_attacks("/x"))


@pytest.mark.parametrize("index", range(_COUNT))
def test_control_each_program_reads_outside_without_reach(root: Path, outside: Path, index: int) -> None:
    args = _attacks(str(outside))[index]
    done = subprocess.run(["jq", *args], cwd=root, capture_output=True, text=True, timeout=20, check=False,
                          env={"PATH": _SEARCH, "HOME": str(root / "sub"), "LANG": "C.UTF-8"},
                          stdin=subprocess.DEVNULL)
    assert _LEAK in done.stdout or "1 of 1 tests passed" in done.stdout, (args, done.stdout, done.stderr)


@pytest.mark.parametrize("index", range(_COUNT))
async def test_jq_reads_no_module_outside_the_root(root: Path, outside: Path, index: int) -> None:
    args = _attacks(str(outside))[index]
    tool = RunCommand(ShellSettings(root=root, commands={"jq": {}}, timeout=10))
    with pytest.raises(InvalidArguments) as refused:
        result = await tool.execute({"command": "jq", "args": args})
        assert _LEAK not in result["stdout"] + result["stderr"]  # shown when the call was not refused
    assert "inside the root" in refused.value.message


@pytest.mark.parametrize(
    "args",
    [
        ["-n", '{"import": 1, "include": 2} | .import + .include'],
        ["-n", '"import" | ascii_upcase'],
        ["-n", "--arg", "kind", "important", '$kind | .[0:6] + "_modules"'],
        ["-r", '.[] | select(.type == "include") | .name', "items.json"],
        ["-n", "[1, 2] | map(. * 2)"],
        ["-n", "-L", ".", "1"],
        ["--rawfile", "t", "lib.jq", "-n", "$t"],
        [".", "items.json"],
    ],
)
async def test_ordinary_jq_programs_still_run(root: Path, outside: Path, args: list[str]) -> None:
    (root / "items.json").write_text('[{"type": "include", "name": "n1"}, {"type": "x", "name": "n2"}]\n')
    tool = RunCommand(ShellSettings(root=root, commands={"jq": {}}, timeout=10))
    result = await tool.execute({"command": "jq", "args": args})
    assert result["exit_code"] == 0, result["stderr"]


async def test_unconfined_jq_may_import_modules(root: Path, outside: Path) -> None:
    """With `confine_paths = false` the arguments may name any file, and so may the program."""
    tool = RunCommand(ShellSettings(root=root, commands={"jq": {}}, timeout=10, confine_paths=False))
    result = await tool.execute({"command": "jq", "args": ["-n", 'include "../outside/m"; leak']})
    assert _LEAK in result["stdout"]
