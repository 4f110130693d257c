"""Checking an argument list against a command's rule before anything runs.

No argument is ever interpreted by a shell, so `;`, `$(…)`, backticks, globs and
newlines are harmless literal text here. What remains dangerous is what the
*program itself* does with its options (`sort --output=/etc/x`, `find -delete`),
and that is what this module bounds. The arguments are first read the way the
program reads them (grammar.py: tar's dash-less bundle, git's global options,
values attached or not, abbreviations); each option found is checked as that
option, in all its spellings. Options that run another program are refused
whatever the allow-list says. Where no grammar is known it errs on the side of
refusing:

* every argument that starts with `-` (except a lone `-`) is treated as an option,
  even after `--`, because not every program honours `--`;
* a single-dash argument is also read as a bundle of short options (`-bo/x` is
  `-b -o /x` to getopt), so a forbidden `-o` is caught inside it;
* a long option is also caught when abbreviated (`--out=/x` reaches `--output`
  through getopt_long's unique-prefix matching).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .grammar import Found, Grammar, Parsed, parse
from .programs import DEFAULT
from .settings import CommandRule

_GLOB_CHARS = "*?["
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class ArgvRefused(Exception):
    """The arguments break the command's rule; the fields feed `InvalidArguments`."""

    field: str
    expected: str
    example: str

    def __str__(self) -> str:
        return f"{self.field}: expected {self.expected} (e.g. {self.example})"


def check_argv(
    command: str,
    args: Sequence[object],
    rule: CommandRule,
    *,
    max_arg_chars: int,
    max_total_chars: int,
    grammar: Grammar = DEFAULT,
) -> list[str]:
    """Return `args` as a list of strings, or raise `ArgvRefused` saying what to change."""
    return check_and_parse(
        command, args, rule, max_arg_chars=max_arg_chars, max_total_chars=max_total_chars,
        grammar=grammar,
    )[0]


def check_and_parse(
    command: str,
    args: Sequence[object],
    rule: CommandRule,
    *,
    max_arg_chars: int,
    max_total_chars: int,
    grammar: Grammar = DEFAULT,
) -> tuple[list[str], Parsed]:
    """`check_argv`, also handing back how the program will read the arguments."""
    checked = _check_texts(command, args, rule, max_arg_chars, max_total_chars)
    parsed = parse(checked, grammar)
    for found in parsed.options:
        _check_found(command, found, rule)
    _check_operands(command, parsed, grammar, rule)
    plain = [f for f in parsed.found if f.plain]
    first = parsed.subcommand if grammar.after_subcommand is not None else None
    index = parsed.subcommand_index
    if grammar.after_subcommand is None and plain:
        first, index = plain[0].raw, plain[0].index
    if first is not None and first in grammar.program_subcommands:
        raise ArgvRefused(
            f"args[{index}]",
            f"a subcommand that does not run other programs; `{command} {first}` exists to "
            "run them, so reach-shell refuses it whatever the allow-list says",
            ", ".join(rule.subcommands or []) or "status",
        )
    if rule.subcommands is not None:
        if first is None:
            raise ArgvRefused("args", f"a subcommand of `{command}`", ", ".join(rule.subcommands))
        _check_subcommand(command, f"args[{index}]", first, rule)
    return checked, parsed


def _check_operands(command: str, parsed: Parsed, grammar: Grammar, rule: CommandRule) -> None:
    """What a grammar says about plain arguments: a program to run (launchers), a response
    file (`@file`), or a program text that may not run programs (awk)."""
    known = set(grammar.options)
    for found in parsed.found:
        field = f"args[{found.index}]"
        if found.plain and grammar.operands_run:
            if not (grammar.operand_assignments and _ASSIGNMENT.match(found.raw)):
                raise ArgvRefused(
                    field,
                    f"an argument that is not a program to run; `{command}` {grammar.operands_run}, "
                    f"so reach-shell refuses `{found.raw[:60]}` whatever the allow-list says "
                    "(there is no shell: call the program itself, if it is allowed)",
                    "NAME=value only" if grammar.operand_assignments else "no plain arguments",
                )
        if found.plain and grammar.response_files and len(found.raw) > 1 and found.raw.startswith("@"):
            raise ArgvRefused(
                field,
                f"an argument that is not a response file; `{command}` reads `{found.raw[:60]}` as a file "
                "of more arguments, whose options it cannot check, so reach-shell refuses it "
                "whatever the allow-list says",
                "the arguments themselves, each in `args`",
            )
        if grammar.text_check is not None and (found.plain or found.option not in known):
            why = grammar.text_check(found.raw)
            if why is not None:
                raise ArgvRefused(
                    field,
                    f"an argument that does not make `{command}` run a program or write a file; this one "
                    f"{why}, so reach-shell refuses it whatever the allow-list says",
                    "the same call without it",
                )


def _check_texts(
    command: str, args: Sequence[object], rule: CommandRule, max_arg_chars: int, max_total_chars: int
) -> list[str]:
    if len(args) > rule.max_args:
        raise ArgvRefused(
            "args",
            f"at most {rule.max_args} arguments for `{command}` (got {len(args)})",
            "fewer arguments, or several smaller calls",
        )
    checked: list[str] = []
    total = 0
    for index, arg in enumerate(args):
        field = f"args[{index}]"
        if not isinstance(arg, str):
            raise ArgvRefused(field, "a string", '"-l"')
        if "\x00" in arg:
            raise ArgvRefused(field, "text without NUL bytes", '"notes.txt"')
        if len(arg) > max_arg_chars:
            raise ArgvRefused(
                field,
                f"at most {max_arg_chars} characters (got {len(arg)})",
                "a shorter argument, or a file under the working directory",
            )
        total += len(arg)
        if total > max_total_chars:
            raise ArgvRefused(
                "args",
                f"at most {max_total_chars} characters in all arguments together",
                "fewer or shorter arguments",
            )
        checked.append(arg)
    return checked


def _check_found(command: str, found: Found, rule: CommandRule) -> None:
    """One option, as the program reads it, against the program-running list and the rule."""
    field = f"args[{found.index}]"
    option = found.option
    if option is not None and option.runs:
        said = f"`{found.display}`"
        if found.spelling and found.spelling != found.display:
            said = f"`{found.spelling}` (that is {said} to `{command}`)"
        raise ArgvRefused(
            field,
            f"an option that does not run other programs; {said} {option.runs}, so "
            "reach-shell refuses it whatever the allow-list says",
            _allowed_hint(rule),
        )
    if option is None:
        _check_option(command, field, found.raw, rule)
        return
    forms = [*found.forms, found.spelling]
    for pattern in rule.forbid_options:
        if any(_is_forbidden(form, pattern) for form in forms):
            raise ArgvRefused(
                field,
                f"an option `{command}` may take here; `{found.display}` (written "
                f"`{found.spelling}`) is forbidden by the allow-list (rule {pattern!r})",
                _allowed_hint(rule),
            )
    allowed = rule.allow_options
    if allowed is not None and not any(_matches(f, p) for f in found.forms for p in allowed):
        raise ArgvRefused(
            field,
            f"one of the options allowed for `{command}`; `{found.display}` (written "
            f"`{found.spelling}`) is not one",
            _allowed_hint(rule),
        )


def _option_name(arg: str) -> str:
    """`--output=/x` -> `--output`; short bundles keep their text."""
    return arg.split("=", 1)[0] if arg.startswith("--") else arg


def _short_flags(arg: str) -> list[str]:
    """`-bo/x` -> [`-b`, `-o`, `-/`, `-x`]: over-reads values on purpose (refuse, never miss)."""
    if arg.startswith("--"):
        return []
    return [f"-{char}" for char in arg[1:]]


def _literal_long_base(pattern: str) -> str | None:
    """The fixed `--name` a long pattern starts with (`--output=*` -> `--output`)."""
    if not pattern.startswith("--"):
        return None
    base = pattern
    for char in _GLOB_CHARS + "=":
        base = base.split(char, 1)[0]
    return base if len(base) > 2 else None


def _matches(arg: str, pattern: str) -> bool:
    return fnmatchcase(arg, pattern) or fnmatchcase(_option_name(arg), pattern)


def _is_forbidden(arg: str, pattern: str) -> bool:
    if _matches(arg, pattern):
        return True
    if any(fnmatchcase(flag, pattern) for flag in _short_flags(arg)):
        return True
    base = _literal_long_base(pattern)
    name = _option_name(arg)
    # getopt_long accepts any unique prefix of a long option: `--out` means `--output`.
    return base is not None and name.startswith("--") and len(name) > 2 and base.startswith(name)


def _is_allowed(arg: str, patterns: list[str]) -> bool:
    if arg == "--":
        return True
    if any(_matches(arg, pattern) for pattern in patterns):
        return True
    flags = _short_flags(arg)
    return bool(flags) and all(any(fnmatchcase(f, p) for p in patterns) for f in flags)


def _check_option(command: str, field: str, arg: str, rule: CommandRule) -> None:
    for pattern in rule.forbid_options:
        if _is_forbidden(arg, pattern):
            raise ArgvRefused(
                field,
                f"an option `{command}` may take here; `{_option_name(arg)}` is forbidden "
                f"by the allow-list (rule {pattern!r})",
                _allowed_hint(rule),
            )
    if rule.allow_options is not None and not _is_allowed(arg, rule.allow_options):
        raise ArgvRefused(
            field,
            f"one of the options allowed for `{command}`; `{_option_name(arg)}` is not one",
            _allowed_hint(rule),
        )


def _check_subcommand(command: str, field: str, arg: str, rule: CommandRule) -> None:
    if rule.subcommands is not None and arg not in rule.subcommands:
        raise ArgvRefused(
            field,
            f"one of the subcommands allowed for `{command}`; `{arg}` is not one",
            ", ".join(rule.subcommands) or "(none allowed)",
        )


def _allowed_hint(rule: CommandRule) -> str:
    if rule.allow_options is None:
        return "the same call without that option"
    if not rule.allow_options:
        return "no options at all: plain arguments only"
    return "allowed options: " + ", ".join(rule.allow_options)
