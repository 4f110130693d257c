"""Arguments are read as the program reads them; each option is checked in every spelling."""

from __future__ import annotations

import pytest
from reach_shell.argv import ArgvRefused, check_argv
from reach_shell.grammar import parse
from reach_shell.programs import DEFAULT, GIT, TAR, grammar_for
from reach_shell.settings import CommandRule

LIMITS = {"max_arg_chars": 200, "max_total_chars": 2000}
LIST_ONLY = CommandRule(allow_options=["-t", "-v", "-f", "-z"])


def check(rule: CommandRule, grammar, *args: str) -> list[str]:  # type: ignore[no-untyped-def]
    return check_argv("cmd", list(args), rule, grammar=grammar, **LIMITS)


def names(args: list[str], grammar) -> list[tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    return [(f.display, f.value) for f in parse(args, grammar).options]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["tvf", "a.tar"], [("--list", None), ("--verbose", None), ("--file", "a.tar")]),
        (["cIf", "x", "y"], [("--create", None), ("--use-compress-program", "x"), ("--file", "y")]),
        (["-tvzf", "a.tgz"], [("--list", None), ("--verbose", None), ("--gzip", None), ("--file", "a.tgz")]),
        (["-tfa.tar"], [("--list", None), ("--file", "a.tar")]),
        (["-tvfz"], [("--list", None), ("--verbose", None), ("--file", "z")]),
        (["--use-compress-prog=sh"], [("--use-compress-program", "sh")]),
        (["--to", "x"], [("--to-command", "x")]),
        (["--file", "a", "--list"], [("--file", "a"), ("--list", None)]),
        (["--gunzip"], [("--gzip", None)]),
        (["--lis"], [("--lis", None)]),  # ambiguous to tar (--list, --listed-incremental): unknown
    ],
)
def test_tar_is_read_as_tar_reads_it(args: list[str], expected: list[tuple[str, str | None]]) -> None:
    assert names(args, TAR) == expected


@pytest.mark.parametrize(
    ("args", "subcommand", "expected"),
    [
        (["-c", "k=v", "status"], "status", [("-c", "k=v")]),
        (["-C", "dir", "log", "-n5"], "log", [("-C", "dir"), ("-n5", None)]),
        (["--git-dir=x", "--work-tree", "y", "diff"], "diff", [("--git-dir", "x"), ("--work-tree", "y")]),
        (["--exec-path=/x", "status"], "status", [("--exec-path", "/x")]),
        (["-p", "log"], "log", [("--paginate", None)]),
        (["diff", "--ext"], "diff", [("--ext-diff", None)]),
        (["grep", "-iO", "x"], "grep", [("-iO", None), ("--open-files-in-pager", None)]),
        (["status", "-c"], "status", [("-c", None)]),  # after the subcommand -c is status's own
    ],
)
def test_git_global_options_come_before_the_subcommand(
    args: list[str], subcommand: str, expected: list[tuple[str, str | None]]
) -> None:
    parsed = parse(args, GIT)
    assert parsed.subcommand == subcommand
    assert [(f.display, f.value) for f in parsed.options] == expected


@pytest.mark.parametrize(
    "args",
    [
        ["cf", "x.tar", "a"], ["xf", "a.tar"], ["xPf", "a.tar"], ["cIf", "sh", "x", "a"], ["rf", "a.tar"],
        ["tvPf", "a.tar"], ["tkf", "a.tar"], ["-tPf", "a.tar"], ["-xf", "a.tar"], ["-tvfa.tar", "-P"],
        ["--absolute-names", "-tf", "a"], ["--abs", "-tf", "a"], ["--extract", "-f", "a"], ["--ex", "-f", "a"],
        ["--create", "--file=x"], ["-t", "--directory=/", "-f", "a"], ["-tC/", "-f", "a"],
        ["-tf", "a", "--", "-P"], ["-tf", "a", "--", "--absolute-names"], ["-t", "-f", "-P"],
        ["tf", "-P"], ["t", "--file=a", "--overwrite"], ["-tvz", "--delete"], ["-T", "list"],
        ["--xform=s/a/b/", "-tf", "a"], ["-t", "--index-file=/tmp/i", "-f", "a"],
    ],
)
def test_list_only_tar_refuses_other_options_in_every_spelling(args: list[str]) -> None:
    with pytest.raises(ArgvRefused):
        check(LIST_ONLY, TAR, *args)


@pytest.mark.parametrize(
    "args",
    [
        ["tvf", "a.tar"], ["tf", "a.tar"], ["tzf", "a.tgz"], ["-tvzf", "a.tgz"], ["-tvf", "a.tar"],
        ["--list", "--file=a.tar"], ["--list", "--gzip", "--verbose", "-f", "a"], ["-t", "-f", "-"],
        ["-tf", "a.tar", "--", "a.txt"], ["--gunzip", "-tf", "a"], ["--ungzip", "-tf", "a"],
    ],
)
def test_list_only_tar_accepts_its_options_in_every_spelling(args: list[str]) -> None:
    assert check(LIST_ONLY, TAR, *args) == args


@pytest.mark.parametrize(
    "arg",
    ["-ofoo", "-o", "-rofoo", "--output=foo", "--out=foo", "--o=foo", "--", "-o=x"],
)
def test_default_grammar_over_reads_attached_values(arg: str) -> None:
    rule = CommandRule(forbid_options=["-o*", "--output*"])
    if arg == "--":
        assert check(rule, DEFAULT, arg, "file") == [arg, "file"]
        return
    with pytest.raises(ArgvRefused):
        check(rule, DEFAULT, arg, "file")


@pytest.mark.parametrize("arg", ["--output=x", "-ox", "-o"])
def test_default_grammar_checks_options_after_double_dash(arg: str) -> None:
    with pytest.raises(ArgvRefused):
        check(CommandRule(forbid_options=["-o*", "--output*"]), DEFAULT, "--", arg)


@pytest.mark.parametrize(
    "spelling",
    ["-I", "--use-compress-program", "--use-compress-prog", "--use", "-Ifoo", "--use-compress-program=x"],
)
def test_a_forbid_pattern_catches_the_option_in_all_its_spellings(spelling: str) -> None:
    rule = CommandRule(forbid_options=["-T*"])
    with pytest.raises(ArgvRefused) as refused:
        check(rule, TAR, "-tf", "a", spelling, "x")
    assert "whatever the allow-list says" in refused.value.expected


@pytest.mark.parametrize("spelling", ["-T", "--files-from=x", "--files-f=x", "-Tx", "tTf", "-tvT"])
def test_forbidding_the_short_name_forbids_the_long_one(spelling: str) -> None:
    with pytest.raises(ArgvRefused, match="forbidden"):
        check(CommandRule(forbid_options=["-T"]), TAR, spelling, "x", "y")


@pytest.mark.parametrize("spelling", ["--files-from=x", "-Tx", "-T", "--files-f"])
def test_allowing_the_long_name_allows_the_short_one(spelling: str) -> None:
    rule = CommandRule(allow_options=["--files-from*", "-t", "-f"])
    assert check(rule, TAR, "-tf", "a.tar", spelling, "x")


def test_value_restricting_patterns_see_the_value() -> None:
    rule = CommandRule(allow_options=["-t", "-f", "--format=gnu"])
    assert check(rule, TAR, "-tf", "a", "--format=gnu")
    assert check(rule, TAR, "-tf", "a", "-Hgnu")  # same option, short spelling, same value
    for bad in ("--format=posix", "-Hposix", "--form=pax"):
        with pytest.raises(ArgvRefused):
            check(rule, TAR, "-tf", "a", bad)


def test_grammar_is_chosen_by_binary_name_or_config() -> None:
    assert grammar_for("git", "/usr/bin/git") is GIT
    assert grammar_for("archive", "/usr/bin/tar") is TAR
    assert grammar_for("head", "/usr/bin/head") is DEFAULT
    assert grammar_for("mygit", "/opt/git-2.39/bin/mygit", "git") is GIT
    assert grammar_for("tar", "/usr/bin/tar", "default") is DEFAULT


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "x=y", "status"], ["--config-env=x=Y", "status"], ["--exec-path", "status"],
        ["status", "--ext-diff"], ["log", "--textconv"], ["grep", "-O", "x"], ["rebase", "-x", "c"],
        ["bisect", "run", "x"], ["submodule", "foreach", "x"], ["filter-branch"], ["difftool"],
    ],
)
def test_git_program_running_spellings_are_refused_even_with_everything_allowed(args: list[str]) -> None:
    rule = CommandRule(allow_options=["-*", "--*"])
    with pytest.raises(ArgvRefused, match="whatever the allow-list says"):
        check(rule, GIT, *args)


@pytest.mark.parametrize(
    "args",
    [
        ["--compress-program=sh", "a"], ["--compress-prog=sh", "a"], ["--comp=sh", "a"],
        ["--compress-program", "sh", "a"], ["-r", "--compress-p=x", "a"],
    ],
)
def test_sort_compress_program_is_refused_in_every_spelling(args: list[str]) -> None:
    from reach_shell.programs import SORT

    with pytest.raises(ArgvRefused, match="whatever the allow-list says"):
        check(CommandRule(), SORT, *args)


@pytest.mark.parametrize("word", ["-exec", "-execdir", "-ok", "-okdir"])
def test_find_running_primaries_are_refused(word: str) -> None:
    from reach_shell.programs import FIND

    with pytest.raises(ArgvRefused, match="whatever the allow-list says"):
        check(CommandRule(), FIND, ".", "-name", "x", word, "touch", "{}", ";")
    assert check(CommandRule(), FIND, ".", "-name", "*.py", "-type", "f")


@pytest.mark.parametrize(
    "arg",
    ["--to-command=x", "--to-comm=x", "--rsh=ssh x", "-e", "--rsync-path=x", "--compress-prog=x",
     "--exec=x", "--exe", "-exec", "-execdir", "-okdir", "--upload-pack=x", "--use-compress=x"],
)
def test_unknown_programs_still_refuse_common_program_running_options(arg: str) -> None:
    if arg == "-e":  # a letter means nothing without a grammar: the allow-list decides
        assert check(CommandRule(), DEFAULT, arg, "x")
        return
    with pytest.raises(ArgvRefused, match="whatever the allow-list says"):
        check(CommandRule(), DEFAULT, arg, "x")
