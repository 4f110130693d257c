"""``redact._escaped``: the escape hint asked only of text holding a character a match starts with.

The shortcut skips ``_ESCAPE_HINT.search`` for text without ``%``, ``\\`` or ``&``. It is
exact only while every alternative of the pattern starts with one of them, so the first
test derives those characters from the pattern itself (a new alternative starting with
anything else fails it); the others hold the shortcut equal to the search, and the
redaction that depends on it (``text``, ``texts``, ``scan``) equal to masking, over
escaped secrets in every spelling.
"""

from __future__ import annotations

import random
import re
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

import orjson
import pytest

from reach_core import redact as R
from reach_core.redact import MASK, Redactor


def _starts(items: Any) -> set[str]:
    """The characters a match of the parsed pattern ``items`` can start with."""
    op, arg = items[0]
    if op is C.LITERAL:
        return {chr(arg)}
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT) and arg[0] >= 1:
        return _starts(arg[2])
    if op is C.SUBPATTERN:
        return _starts(arg[-1])
    if op is C.BRANCH:
        return set().union(*(_starts(alt) for alt in arg[1]))
    raise AssertionError(f"an alternative of _ESCAPE_HINT starts with {op} {arg}: teach _escaped about it")


def test_every_alternative_of_the_escape_hint_starts_with_a_character_escaped_tests_for() -> None:
    assert _starts(_parser.parse(R._ESCAPE_HINT.pattern)) == {"%", "\\", "&"}


ESCAPES = [
    "%5F", "%5f", "%3D", "%3d", "%22", "%2", "%G1", "%", "%%41",
    "\\u0022", "\\U0022", "\\u00", "\\\\u005f", "\\x5f", "\\x5", "\\\"", "\\", "\\\\", "\\n",
    "&#95;", "&#x5f;", "&#X5F;", "&#95", "&amp;", "&", "&#;", "&#xZZ;",
]
CONTEXTS = ["{}", "a{}b", "{} ", " {}", "api{}key=abc123", "{}\n{}", "日本{}語", "ｐａｓｓ{}", "{}" * 3,
            "x" * 5000 + "{}", "{}" + "y" * 5000]


@pytest.mark.parametrize("esc", ESCAPES)
@pytest.mark.parametrize("ctx", CONTEXTS)
def test_escaped_equals_the_search(esc: str, ctx: str) -> None:
    text = ctx.replace("{}", esc)
    assert R._escaped(text) == (R._ESCAPE_HINT.search(text) is not None)


def test_escaped_equals_the_search_over_generated_text() -> None:
    rng = random.Random(22)
    alphabet = "%\\&#;xXuU0123456789abcdefABCDEFG\"' =:_-\n\tpé日"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert R._escaped(text) == (R._ESCAPE_HINT.search(text) is not None), text


# secrets whose key or separator only shows once an escape is undone: each must be masked
HIDDEN = [
    "api%5Fkey=sk9Hd82kdLs0", "api%5fkey%3Dsk9Hd82kdLs0", "pass%77ord=hunter2hunter2", "q=api_key%3Dsk9Hd82kdLs0",
    "api&#95;key=sk9Hd82kdLs0", "api&#x5f;key=sk9Hd82kdLs0", "api&#X5F;key=sk9Hd82kdLs0",
    "api\\u005fkey=sk9Hd82kdLs0", "api\\x5fkey=sk9Hd82kdLs0", "{\\\"password\\\": \\\"hunter2hunter2\\\"}",
    "token%253Dsk9Hd82kdLs0", "PASS%57ORD=hunter2hunter2",
]


@pytest.mark.parametrize("text", HIDDEN)
def test_secrets_behind_escapes_are_masked_by_text_and_texts(text: str) -> None:
    r = Redactor()
    one = r.text(text)
    assert "sk9Hd82kdLs0" not in one and "hunter2hunter2" not in one, one
    assert MASK in one
    assert r.texts(["c1", text, "call_Ab3dE5fG7hI9jK1lM3nO5pQ"]) == ["c1", one, "call_Ab3dE5fG7hI9jK1lM3nO5pQ"]


@pytest.mark.parametrize("text", HIDDEN)
def test_secrets_behind_escapes_in_arguments_are_not_passed_by_scan(text: str) -> None:
    r = Redactor()
    value = {"q": text, "n": 1}
    assert r.scan(value) is None
    assert r.scan_many([{"a": 1}, value, [text]]) == [orjson.dumps({"a": 1}), None, None]
    masked = orjson.dumps(r.value(value)).decode()
    assert "sk9Hd82kdLs0" not in masked and "hunter2hunter2" not in masked


def test_plain_text_without_escape_characters_is_left_as_is() -> None:
    r = Redactor()
    plain = ["c1", "call_Ab3dE5fG7hI9jK1lM3nO5pQ", "toolu_01A09q90qw90lq917835lq9", "Paris", "a b c"]
    assert r.texts(plain) == plain
    assert r.scan_many([{"city": p} for p in plain]) == [orjson.dumps({"city": p}) for p in plain]
    assert re.search(r"[%\\&]", "".join(plain)) is None
