"""``decode_arguments`` reads most texts with orjson and the rest with the standard
library's scanner: the two must never disagree on what a model sent.

A reference decoder built only from the standard library (strict: duplicate keys,
``NaN``/``Infinity``, overflowing floats and lone surrogates refused; big integers
exact) is run side by side with ``decode_arguments`` on families of hostile texts:
integers around the 64-bit edges (exact, then refused beyond 64 bits: never
a float standing in for one) in every spelling, floats at the edges of double
range, escapes and surrogates, whitespace and control characters, duplicate keys
spelled with escapes, truncations, and random mutations of valid documents. They must
accept the same texts and return the same values, of the same types.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from reach_core.calls import MAX_INT, MIN_INT, check_values, decode_arguments
from reach_core.errors import ToolFailure

REFUSED = object()


class _Dup(Exception):
    pass


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in items:
        if k in out:
            raise _Dup(k)
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(text)
    return value


_REF = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_no_constant, parse_float=_finite)


def _not_carried(value: Any) -> bool:
    """A lone surrogate, or an integer beyond 64 bits (which reach refuses, see ``MIN_INT``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return not MIN_INT <= value <= MAX_INT
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return any(_not_carried(k) or _not_carried(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_not_carried(v) for v in value)
    return False


def reference(raw: str) -> Any:
    """What the standard library alone makes of ``raw`` under reach's rules."""
    if not raw:
        return {}
    try:
        raw.encode("utf-8")
        value = _REF.decode(raw)
    except (ValueError, RecursionError, _Dup, UnicodeEncodeError):
        return REFUSED
    if _not_carried(value):
        return REFUSED
    if value is None:
        return {}
    return value if isinstance(value, dict) else REFUSED


def reach(raw: str) -> Any:
    """``decode_arguments``, then the walk every argument dict gets before a connector
    sees it (``check_values``, in ``CompiledSchema.prepare``): integers beyond 64 bits
    are refused there when the text is flat."""
    try:
        value = decode_arguments(raw, max_bytes=10_000_000, max_depth=200)
        check_values(value)
        return value
    except ToolFailure:
        return REFUSED


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (1 is not 1.0, and -0.0 keeps its sign)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a is b if a is REFUSED or b is REFUSED else a == b


def check(raw: str) -> None:
    ref, got = reference(raw), reach(raw)
    assert same(ref, got), f"{raw[:200]!r}: reference {ref!r:.200} vs reach {got!r:.200}"


# ---------------------------------------------------------------- integers at the 64-bit edges

EDGES = [2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**64 + 1, 10**18, 10**19 - 1, 10**19, 10**20, 2**70, 10**30,
         -(2**63), -(2**63) - 1, -(2**64), -(10**18), -(10**19), 0, 1, 123456789012345678]


@pytest.mark.parametrize("n", EDGES + [e + d for e in EDGES for d in (-2, -1, 1, 2)])
@pytest.mark.parametrize("form", ['{{"a": {n}}}', '{{"a": [{n}]}}', '{{"a": {{"b": {n}}}}}', '{{"a":{n},"b":1}}',
                                  '{{"a": "{n}"}}', '{{"a": {n}.0}}', '{{"a": {n}e0}}', '{{"a": {n}E-2}}'])
def test_integers_at_the_64_bit_edges_keep_their_exact_value(n: int, form: str) -> None:
    raw = form.format(n=n)
    check(raw)
    if form == '{{"a": {n}}}':
        expected = {"a": n} if MIN_INT <= n <= MAX_INT else REFUSED
        assert same(reach(raw), expected)  # exact, or refused: never a float standing in for it


@pytest.mark.parametrize("digits", range(15, 26))
def test_digit_runs_of_every_length(digits: int) -> None:
    rng = random.Random(digits)
    for _ in range(30):
        body = str(rng.randint(1, 9)) + "".join(rng.choice("0123456789") for _ in range(digits - 1))
        for raw in (f'{{"n": {body}}}', f'{{"n": -{body}}}', f'{{"n": {body}.5}}', f'{{"s": "{body}", "n": 1}}',
                    f'{{"n": 0.{body}}}', f'{{"n": {body}e-30}}', f'{{"n": [1, {body}, 2]}}'):
            check(raw)


# ---------------------------------------------------------------- floats, constants, numbers JSON does not have

FLOATS = ["1e308", "1.7976931348623157e308", "1.7976931348623159e308", "1e309", "-1e309", "1e999", "1E400",
          "4.9e-324", "1e-400", "-0.0", "-0", "0e0", "0.1", "2.5e-5", "NaN", "-NaN", "Infinity", "-Infinity",
          "inf", "nan", "01", "00", "-01", "1.", ".5", "+1", "1e", "1e+", "--1", "0x10", "1_000", "1 000", "١",
          "１", "1.0e+0", "9007199254740993", "9007199254740993.0", "123456789012345678.9"]


@pytest.mark.parametrize("num", FLOATS)
@pytest.mark.parametrize("form", ['{{"x": {v}}}', '{{"x": [{v}]}}', '{{"x": {{"y": {v}}}}}', '{{"x": 1, "y": {v}}}'])
def test_numbers_at_the_edges(num: str, form: str) -> None:
    check(form.format(v=num))


# ---------------------------------------------------------------- strings: escapes, surrogates, controls

STRINGS = ["\\ud800", "\\udfff", "\\ud83d\\ude00", "\\ud83d", "\\ude00\\ud83d", "\\ud83d\\u0041", "\\u0000", "\\u00e9",
           "\\x41", "\\'", "\\/", "\\a", "\\", "\\u12", "\\u12G4", "\\U0001F600", "é", "😀", "中文",
           "\x00", "\x1f", "\x7f",
           "\n", "\t", "\u2028", "\u2029", "\ufeff", "\u00a0", "a\\\"b", "\\\\u0041", "\\\\\\u0041"]


@pytest.mark.parametrize("text", STRINGS)
@pytest.mark.parametrize("form", ['{{"s": "{t}"}}', '{{"{t}": 1}}', '{{"s": ["{t}"]}}', '{{"s": "x{t}y", "n": 1}}'])
def test_strings_escapes_and_surrogates(text: str, form: str) -> None:
    check(form.format(t=text))


# ---------------------------------------------------------------- whitespace, framing, duplicates

WRAPS = [("", ""), (" ", " "), ("\n", "\r\n"), ("\t", ""), ("\ufeff", ""), ("\x0c", ""), ("", "\x0c"), ("\u00a0", ""),
         ("", "\u00a0"), ("", "x"), ("", "{}"), ("", ","), ("", "\x00"), ("[", "]"), ("", " // c"), ("\v", "")]


@pytest.mark.parametrize(("head", "tail"), WRAPS)
@pytest.mark.parametrize("doc", ['{"a":1}', "{}", "null", "[]", '"s"', "1", "true", '{"a":{"b":[1,{"c":null}]}}'])
def test_whitespace_and_framing(head: str, tail: str, doc: str) -> None:
    check(head + doc + tail)


DUPLICATES = ['{"a":1,"a":2}', '{"a":1,"\\u0061":2}', '{"\\u0061":1,"a":2}', '{"a":{"b":1,"b":2}}',
              '{"a":[{"k":1,"k":1}]}', '{"a:":1,"a":2}', '{"a":"x:y","a":1}', '{"a":1,"b":"::","a":3}',
              '{"ab":1,"a\\u0062":2}', '{"a":1, "A":2}', '{"é":1,"\\u00e9":2}', '{"e\\u0301":1,"\\u00e9":2}']


@pytest.mark.parametrize("raw", DUPLICATES)
def test_duplicate_keys_in_every_spelling(raw: str) -> None:
    check(raw)


# ---------------------------------------------------------------- random documents and mutations

def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([0, 1, -1, 2**63, 2**64, -(2**63) - 1, rng.randint(-(10**25), 10**25)])
    if kind == 1:
        return rng.choice([0.5, -0.0, 1e308, 5e-324, rng.uniform(-1e6, 1e6)])
    if kind == 2:
        alphabet = "ab:\"\\/\n\té中😀 {}[],"
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
    if kind == 3:
        return rng.choice([True, False, None])
    if kind in (4, 5):
        return rng.choice(["x", "", "12345678901234567890"])
    if kind in (6, 7):
        return {rng.choice(["a", "b", "c:d", "é"]): _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


TOKENS = ["NaN", "Infinity", "1e999", "\\ud800", "18446744073709551616", "-9223372036854775809", ",", ":", "}", "]",
          '"', "\\", "\x00", "\ufeff", " ", "01", "1.", '"a":1,"a":2', "\\u0061", "null", "tru", "\u2028"]


@pytest.mark.parametrize("seed", range(8))
def test_random_documents_and_their_mutations(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(1500):
        doc = {"k": _random_value(rng)} if rng.random() < 0.8 else _random_value(rng)
        raw = json.dumps(doc, ensure_ascii=rng.random() < 0.5, separators=rng.choice([(",", ":"), (", ", ": ")]))
        check(raw)
        for _ in range(3):
            mutated = list(raw)
            for _ in range(rng.randrange(1, 4)):
                op = rng.randrange(3)
                pos = rng.randrange(len(mutated) + 1)
                if op == 0 and mutated:
                    del mutated[min(pos, len(mutated) - 1)]
                elif op == 1:
                    mutated.insert(pos, rng.choice(TOKENS))
                else:
                    mutated = mutated[:pos]
            check("".join(mutated))
