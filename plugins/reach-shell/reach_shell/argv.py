"""Checking an argument list against a command's rule before anything runs.

No argument is ever interpreted by a shell, so `;`, `$(…)`, backticks, globs and
newlines are harmless literal text here. What remains dangerous is what the
*program itself* does with its options (`sort --output=/etc/x`, `find -delete`),
and that is what this module bounds. It errs on the side of refusing:

* every argument that starts with `-` (except a lone `-`) is treated as an option,
  even after `--`, because not every program honours `--`;
* a single-dash argument is also read as a bundle of short options (`-bo/x` is
  `-b -o /x` to getopt), so a forbidden `-o` is caught inside it;
* a long option is also caught when abbreviated (`--out=/x` reaches `--output`
  through getopt_long's unique-prefix matching).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .settings import CommandRule

_GLOB_CHARS = "*?["


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
) -> list[str]:
    """Return `args` as a list of strings, or raise `ArgvRefused` saying what to change."""
    if len(args) > rule.max_args:
        raise ArgvRefused(
            "args",
            f"at most {rule.max_args} arguments for `{command}` (got {len(args)})",
            "fewer arguments, or several smaller calls",
        )
    checked: list[str] = []
    total = 0
    seen_plain = False
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
        if _is_option(arg):
            _check_option(command, field, arg, rule)
        elif not seen_plain:
            seen_plain = True
            _check_subcommand(command, field, arg, rule)
        checked.append(arg)
    if not seen_plain and rule.subcommands:
        raise ArgvRefused("args", f"a subcommand of `{command}`", ", ".join(rule.subcommands))
    return checked


def _is_option(arg: str) -> bool:
    return arg.startswith("-") and arg != "-"


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
