"""Option patterns and subcommands that are almost right are refused when the settings load.

Arguments are compared exactly, so ``forbid_options = ["--output* "]`` (a space after
it), ``["--out\\u200bput*"]`` (a zero-width space pasted with it) or ``["-\\u2010o*"]``
(a Unicode hyphen after the ``-``) forbade nothing: ``sort --output=/etc/x`` ran.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from reach_shell.argv import ArgvRefused, check_argv
from reach_shell.settings import CommandRule, ShellSettings

LIMITS = {"max_arg_chars": 100, "max_total_chars": 250}

MUTATIONS = [
    ("trailing space", lambda p: p + " "),
    ("trailing tab", lambda p: p + "\t"),
    ("trailing newline", lambda p: p + "\n"),
    ("trailing CRLF", lambda p: p + "\r\n"),
    ("trailing NUL", lambda p: p + "\x00"),
    ("inner NUL", lambda p: p[:3] + "\x00" + p[3:]),
    ("trailing no-break space", lambda p: p + "\xa0"),
    ("ideographic space", lambda p: p + "\u3000"),
    ("line separator", lambda p: p + "\u2028"),
    ("zero-width space", lambda p: p[:3] + "\u200b" + p[3:]),
    ("zero-width joiner", lambda p: p[:3] + "\u200d" + p[3:]),
    ("word joiner", lambda p: p + "\u2060"),
    ("BOM inside", lambda p: p[:2] + "\ufeff" + p[2:]),
    ("soft hyphen", lambda p: p[:3] + "\xad" + p[3:]),
    ("right-to-left override", lambda p: p[:3] + "\u202e" + p[3:]),
    ("Unicode hyphen after the dash", lambda p: "-\u2010" + p[2:] if p.startswith("--") else p + "\u2010x"),
    ("non-breaking hyphen", lambda p: p[:1] + "\u2011" + p[2:] if p.startswith("--") else p + "\u2011x"),
    ("en dash", lambda p: p[:1] + "\u2013" + p[2:] if p.startswith("--") else p + "\u2013x"),
    ("full-width letter", lambda p: p.replace("o", "\uff4f", 1)),
    ("Cyrillic o", lambda p: p.replace("o", "\u043e", 1)),
    ("Greek omicron", lambda p: p.replace("o", "\u03bf", 1)),
]
IDS = [m[0] for m in MUTATIONS]
PATTERNS = ["--output*", "-o*", "--compress-program*"]


def _sort(**rule: Any) -> dict[str, Any]:
    return {"root": "/tmp", "commands": {"sort": rule}}


@pytest.mark.parametrize(("_id", "mutate"), MUTATIONS, ids=IDS)
@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("key", ["forbid_options", "allow_options"])
def test_an_option_pattern_that_matches_no_option_is_refused(key: str, pattern: str, _id: str, mutate: Any) -> None:
    value = mutate(pattern)
    with pytest.raises(ValidationError) as err:
        ShellSettings.model_validate(_sort(**{key: ["-r", value]}))
    text = str(err.value)
    assert "option pattern" in text and "matches no option" in text, text
    assert ascii(value)[1:-1] in text.replace("\\\\", "\\"), text


@pytest.mark.parametrize(("_id", "mutate"), MUTATIONS, ids=IDS)
@pytest.mark.parametrize("name", ["log", "show", "for-each-ref"])
def test_a_subcommand_no_argument_can_be_is_refused(name: str, _id: str, mutate: Any) -> None:
    value = mutate(name)
    with pytest.raises(ValidationError, match="subcommand"):
        ShellSettings.model_validate({"root": "/tmp", "commands": {"git": {"subcommands": ["diff", value]}}})


TYPOS = [("-o* ", "-o/etc/x"), ("-o*\xa0", "-o/etc/x"), ("-o*\u200b", "-o/etc/x"), ("-\u043e*", "-o/etc/x"),
         ("-\uff4f*", "-o/etc/x"), ("--out\u200bput*", "--output=/etc/x"), ("-\u2010output*", "--output=/etc/x"),
         ("--\u043eutput*", "--output=/etc/x"), ("-o\u2060*", "-o/etc/x")]


@pytest.mark.parametrize(("typo", "arg"), TYPOS, ids=[ascii(t) for t, _ in TYPOS])
def test_what_such_a_forbid_rule_did(typo: str, arg: str) -> None:
    """Built without validation (as the settings were before), the rule forbade nothing."""
    rule = CommandRule.model_construct(forbid_options=[typo], allow_options=None, subcommands=None, max_args=32,
                                       confine_paths=None, timeout=None, grammar=None, path=None, description=None)
    assert check_argv("sort", [arg, "a.txt"], rule, **LIMITS) == [arg, "a.txt"]
    with pytest.raises(ArgvRefused):
        check_argv("sort", [arg, "a.txt"], CommandRule(forbid_options=["-o*", "--output*"]), **LIMITS)
    with pytest.raises(ValidationError):
        CommandRule(forbid_options=[typo])


@pytest.mark.parametrize("patterns", [["--output*"], ["-o*", "--output=*"], ["--sort=*[!a]"], ["-[ab]"],
                                      ["--title=two words"], ["--label=日本語*"], ["-?"]])
def test_control_real_option_patterns_load_unchanged(patterns: list[str]) -> None:
    settings = ShellSettings.model_validate(_sort(forbid_options=patterns, allow_options=patterns))
    assert settings.commands["sort"].forbid_options == patterns
    assert settings.commands["sort"].allow_options == patterns


def test_control_subcommands_load_unchanged() -> None:
    git = ShellSettings.model_validate({"root": "/tmp", "commands": {"git": {"subcommands": ["log", "diff",
                                                                                             "rev-parse"]}}})
    assert git.commands["git"].subcommands == ["log", "diff", "rev-parse"]
