"""awk programs that pick their own input files, past the path check.

An awk program chooses what it reads: `ARGV[1] = "/elsewhere/x"` makes awk read that
file next (the name may be spelt in pieces, computed with `sprintf`, added with
`ARGV[ARGC++]`, filled by `split` or through a function's array parameter), and an awk
without gawk's `--sandbox` (mawk here) also reads `getline line < "/elsewhere/x"`. The
program text is not a path (`/start/,/end/`), so the path check never read it: all of
these printed a file outside the root through the real mawk. While paths are confined a
program naming `ARGV`, gawk's `@include`, or (without `--sandbox`) a `<` after `getline` is
refused; with `confine_paths = false` they run, and ordinary programs run either way.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from reach_shell.argv import ArgvRefused
from reach_shell.grammar import parse
from reach_shell.paths import check_escapes
from reach_shell.programs import AWK
from shell_attack import SECRET

from reach_core import InvalidArguments


@pytest.fixture
def secret(outside: Path) -> Path:
    return outside / "secret.txt"


def _programs(secret: Path) -> list[str]:
    head, tail = str(secret)[:6], str(secret)[6:]
    folder, name = str(secret.parent), secret.name
    return [
        f'BEGIN {{ ARGV[1] = "{secret}" }} {{ print }}',
        f'BEGIN{{ARGV[1]="{head}" "{tail}"}}{{print}}',
        f'BEGIN {{ ARGV [1] = "{head}" "{tail}" }} {{ print }}',
        f'BEGIN {{ ARGV[1] = sprintf("%s/%s", "{folder}", "{name}") }} {{ print }}',
        f'BEGIN {{ ARGV[ARGC++] = "{head}" "{tail}" }} {{ print }}',
        f'BEGIN {{ split("{secret}", ARGV) }} {{ print }}',
        f'function put(a) {{ a[1] = "{head}" "{tail}" }} BEGIN {{ put(ARGV) }} {{ print }}',
        f'BEGIN {{ getline < "{secret}"; print }}',
        f'BEGIN{{getline<("{head}" "{tail}");print}}',
        f'BEGIN {{ f = "{head}" "{tail}"; while ((getline line < f) > 0) print line }}',
        f'BEGIN {{ getline line \\\n < "{secret}"; print line }}',
        f'NR == 1 {{ getline x < ("{head}" "{tail}"); print x }}',
    ]


@pytest.mark.parametrize("index", range(12))
async def test_awk_programs_cannot_read_files_outside_the_root(
    root: Path, secret: Path, index: int
) -> None:
    program = _programs(secret)[index]
    tool = RunCommand(ShellSettings(root=root, commands={"awk": {}}))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "awk", "args": [program, "a.txt"]})
    assert refused.value.field == "args[0]"
    assert "root" in str(refused.value)
    with pytest.raises(InvalidArguments):  # after `--`, and with -F / -v before it
        await tool.execute({"command": "awk", "args": ["-F:", "-v", "x=1", "--", program, "a.txt"]})


@pytest.mark.parametrize("index", range(12))
async def test_unconfined_the_same_programs_print_the_file(root: Path, secret: Path, index: int) -> None:
    """Control: the programs above are real reads (mawk prints the secret without the check)."""
    tool = RunCommand(ShellSettings(root=root, commands={"awk": {"confine_paths": False}}))
    content = await tool.execute({"command": "awk", "args": [_programs(secret)[index], "a.txt"]})
    assert SECRET in content["stdout"], content


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["{ print $1 }", "a.txt", "b.txt"], "alpha\nbeta\n"),
        (["{ getline; print }", "a.txt", "b.txt"], "beta\n"),
        (["FNR == 1 { print FILENAME }", "a.txt", "b.txt"], "a.txt\nb.txt\n"),
        (["-v", "n=1", "NR < n + 1 { print }", "a.txt"], "alpha\n"),
    ],
)
async def test_ordinary_programs_still_read_the_files_named(root: Path, args: list[str], expected: str) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"awk": {}}))
    content = await tool.execute({"command": "awk", "args": args})
    assert (content["exit_code"], content["stdout"]) == (0, expected), content


@pytest.mark.parametrize(
    "program",
    ['BEGIN { ARGV[1] = "/etc/passwd" } { print }', '@include "/etc/passwd"', '@ include "../x"',
     '@nsinclude "x"', 'BEGIN { ARGV[ARGC++] = "/x" }'],
)
def test_gawk_with_sandbox_is_checked_too(program: str) -> None:
    """gawk's `--sandbox` stops names *added* to ARGV, not an element changed; `@include` reads a file."""
    with pytest.raises(ArgvRefused):
        check_escapes("gawk", parse([program, "a.txt"], AWK), AWK)
