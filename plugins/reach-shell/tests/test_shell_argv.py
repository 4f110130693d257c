"""The allow-list's option rules, checked before anything runs."""

from __future__ import annotations

import pytest
from reach_shell.argv import ArgvRefused, check_argv
from reach_shell.settings import CommandRule

LIMITS = {"max_arg_chars": 100, "max_total_chars": 250}
SORT = CommandRule(forbid_options=["--output*", "-o*", "--compress-program*"])
LS = CommandRule(allow_options=["-l", "-a", "-h", "-n*"], max_args=5)


def check(rule: CommandRule, *args: object) -> list[str]:
    return check_argv("cmd", list(args), rule, **LIMITS)


@pytest.mark.parametrize(
    "arg",
    [
        "--output=/etc/x",
        "--output",
        "--out=/etc/x",  # getopt_long takes unique prefixes
        "--outp",
        "-o/etc/x",
        "-o",
        "-ro/etc/x",  # -r -o /etc/x bundled
        "--compress-program=sh",
    ],
)
def test_forbidden_options_are_refused_in_every_spelling(arg: str) -> None:
    with pytest.raises(ArgvRefused) as refused:
        check(SORT, "-r", arg, "a.txt")
    assert refused.value.field == "args[1]"
    # --compress-program runs a program: refused always, before the forbid list is read
    assert "forbidden" in refused.value.expected or "whatever the allow-list" in refused.value.expected


def test_options_not_forbidden_pass_unchanged() -> None:
    assert check(SORT, "-r", "-n", "--reverse", "a.txt", "-") == [
        "-r",
        "-n",
        "--reverse",
        "a.txt",
        "-",
    ]


def test_options_are_checked_even_after_double_dash() -> None:
    # Not every program honours `--`; refusing costs nothing.
    with pytest.raises(ArgvRefused):
        check(SORT, "--", "--output=/etc/x")


def test_allow_list_mode_accepts_listed_options_and_bundles_of_them() -> None:
    assert check(LS, "-l", "-la", "-ahl", "-n5", "sub") == ["-l", "-la", "-ahl", "-n5", "sub"]


@pytest.mark.parametrize("arg", ["--color=always", "-R", "-lR", "--l"])
def test_allow_list_mode_refuses_everything_else(arg: str) -> None:
    with pytest.raises(ArgvRefused) as refused:
        check(LS, arg)
    assert "allowed options: -l, -a, -h, -n*" in refused.value.example


def test_empty_allow_list_means_plain_arguments_only() -> None:
    rule = CommandRule(allow_options=[])
    assert check(rule, "a.txt", "-") == ["a.txt", "-"]
    with pytest.raises(ArgvRefused, match="no options at all"):
        check(rule, "-n")


def test_too_many_arguments() -> None:
    with pytest.raises(ArgvRefused) as refused:
        check(LS, *["x"] * 6)
    assert refused.value.field == "args"
    assert "at most 5" in refused.value.expected


def test_huge_argument_and_huge_total_are_refused() -> None:
    with pytest.raises(ArgvRefused, match="at most 100 characters"):
        check(SORT, "x" * 101)
    with pytest.raises(ArgvRefused, match="all arguments together"):
        check(SORT, "x" * 90, "y" * 90, "z" * 90)


@pytest.mark.parametrize("arg", ["a\x00b", 7, None])
def test_nul_bytes_and_non_strings_are_refused(arg: object) -> None:
    with pytest.raises(ArgvRefused):
        check(SORT, arg)


def test_subcommands_limit_the_first_plain_argument() -> None:
    git = CommandRule(subcommands=["log", "diff"], allow_options=["--oneline", "-n*"])
    assert check(git, "log", "--oneline", "-n5") == ["log", "--oneline", "-n5"]
    assert check(git, "--oneline", "diff", "HEAD") == ["--oneline", "diff", "HEAD"]
    for args in (["push", "origin"], ["-n1", "commit"], []):
        with pytest.raises(ArgvRefused) as refused:
            check(git, *args)
        assert "log, diff" in refused.value.example
