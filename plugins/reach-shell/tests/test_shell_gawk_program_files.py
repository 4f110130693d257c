"""Red-team family: gawk program files whose text no check reads.

gawk runs with `--sandbox` (no `system()`, pipes, redirections, extensions, new ARGV names), and
its program text in the arguments is checked for `ARGV` and `@include`. But a program *file*
(`-f p.awk`, `-i lib`/`--include`, `-E p.awk`) is read by gawk only: with `@include
"/elsewhere/cfg"` in it, gawk 5.2 read that file and printed its lines in the syntax error
(`gawk: /elsewhere/cfg:1: api_key: … ^ syntax error`), and its debugger (`-D cmds -f p.awk`)
ran a `dump /elsewhere/x` command that wrote a file outside the root. So while paths are
confined these options are refused, in every spelling gawk's getopt_long reads.

The grammar is checked here directly (gawk is not on the test machines: installing it would
turn `/usr/bin/awk` into gawk); the calls were run against a real gawk 5.2.1 when written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reach_shell.argv import ArgvRefused, check_and_parse
from reach_shell.paths import check_escapes
from reach_shell.programs import AWK
from reach_shell.settings import CommandRule

_ATTACKS = [
    ["-f", "p.awk", "a.txt"],
    ["-fp.awk", "a.txt"],
    ["--file=p.awk", "a.txt"],
    ["--file", "p.awk", "a.txt"],
    ["--fi=p.awk", "a.txt"],
    ["-v", "x=1", "-f", "p.awk", "a.txt"],
    ["-F:", "-f", "p.awk", "a.txt"],
    ["-e", "BEGIN { }", "-f", "p.awk", "a.txt"],
    ["-i", "inc", "{ print }", "a.txt"],
    ["-iinc", "{ print }", "a.txt"],
    ["--include=inc", "{ print }", "a.txt"],
    ["--include", "inc.awk", "{ print }", "a.txt"],
    ["--incl=inc", "{ print }", "a.txt"],
    ["-E", "p.awk", "a.txt"],
    ["-Ep.awk", "a.txt"],
    ["-Dcmds", "{ print }", "a.txt"],
    ["--debug=cmds", "{ print }", "a.txt"],
    ["-bf", "p.awk", "a.txt"],
]


def _check(args: list[str]) -> None:
    rule = CommandRule()
    checked, parsed = check_and_parse("gawk", args, rule, max_arg_chars=4096, max_total_chars=32768, grammar=AWK)
    check_escapes("gawk", parsed, AWK)


@pytest.mark.parametrize("args", _ATTACKS)
def test_gawk_program_files_are_refused_while_confined(args: list[str]) -> None:
    with pytest.raises(ArgvRefused) as refused:
        _check(args)
    assert "inside the root" in refused.value.expected


@pytest.mark.parametrize(
    "args",
    [["-F:", "{ print $1 }", "a.txt"], ["-v", "n=1", "{ print n }", "a.txt"], ["-e", "BEGIN { print 1 }"],
     ["--field-separator=,", "{ print $2 }", "a.txt"], ["-b", "{ print }", "a.txt"]],
)
def test_gawk_programs_in_the_arguments_still_pass(args: list[str]) -> None:
    _check(args)


def test_the_grammar_is_the_one_gawk_gets(tmp_path: Path) -> None:
    """`gawk`, `awk` and `grammar = "awk"` all pick this grammar (a sandboxed awk)."""
    from reach_shell.programs import grammar_for

    assert grammar_for("gawk", "/usr/bin/gawk") is AWK
    assert grammar_for("x", "/opt/bin/x", "awk") is AWK
