"""reach_core.schema.json_reader: the one-step reader of the usual call's arguments never
accepts what ``decode_arguments`` + ``CompiledSchema.prepare`` refuse, and when it accepts
it gives exactly their dict (same values, same key order, defaults filled the same way).

Attack texts in families (duplicate keys, escapes, numbers past 64 bits, non-finite
numbers, look-alike and non-ASCII keys, nesting, sizes, trailing data, non-objects) are
read by both, for schemas of every scalar kind, open and closed, with and without
defaults."""

from __future__ import annotations

import itertools

import pytest

from reach_core.calls import decode_arguments
from reach_core.errors import ToolFailure
from reach_core.schema import CompiledSchema, json_reader, normalize_schema

MAX_BYTES = 200

FIELD_TYPES = [{"type": "integer"}, {"type": "number"}, {"type": "string"}, {"type": "boolean"},
               {"type": ["string", "null"]}, {"anyOf": [{"type": "integer"}, {"type": "null"}]}]
DEFAULTS = [None, 7, 2.5, "d", True]


def schemas():
    for ta, tb in itertools.product(FIELD_TYPES, repeat=2):
        for required, closed, default in itertools.product((["a"], ["a", "b"], []), (None, False),
                                                           (None, *DEFAULTS)):
            b = dict(tb)
            if default is not None and "b" not in required:
                b["default"] = default
            schema = {"type": "object", "properties": {"a": dict(ta), "b": b}, "required": required}
            if closed is not None:
                schema["additionalProperties"] = closed
            yield schema


VALUES = ["1", "-7", "0", "2.5", "-0.0", "1.0", "1e3", "1e999", "-1e999", "NaN", "Infinity", "-Infinity",
          "9223372036854775807", "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
          "18446744073709551616", "123456789012345678901234567890", "0.1234567890123456789012",
          "true", "false", "null", '"x"', '""', '"a:b"', '"\\u003a"', '"\\ud800"', '"\\ud83d\\ude00"',
          '"\\u0041"', '"\\n"', '"é"', '"\u0430"', "[]", "[1]", "{}", '{"k": 1}', '[[[[[[1]]]]]]']
ATTACKS = [
    "", " ", "null", "1", '"x"', "[]", "{}", "{ }", " {} ", "{}x", "{} {}", "{}\n", '{"a": 1}}', '{"a": 1,}',
    '{"a": 1, "a": 2}', '{"a": 1,"a":1}', '{"a": 1, "\\u0061": 2}', '{"a": "x:y", "a": 2}',
    '{"a": 1, "b": "https://x", "b": "https\\u003a//evil"}', '{"a": 1, "A": 2}', '{"\u0430": 1}',
    '{"a": 1, "\u0430": 2}', '{"a" : 1}', '{"a":\t1}', '{\n"a": 1\n}', "{'a': 1}", '{a: 1}',
    '{"a": 01}', '{"a": +1}', '{"a": .5}', '{"a": 1.}', '{"a": 0x10}', '{"a": "\x01"}', '{"a": "\\x41"}',
    '{"a": 1, "b": 1, "c": 1}', '{"c": 1}', '{"b": 1}', '{"b": null}', '{"a": null, "b": null}',
    '{"a": 1, "b": ' + "9" * 400 + "}", '{"a": "' + "x" * (MAX_BYTES - 8) + '"}',
    '{"a": "' + "x" * (MAX_BYTES - 9) + '"}', '{"a": "' + "x" * (MAX_BYTES + 50) + '"}',
    '{"a": ' + "[" * 40 + "]" * 40 + "}",
    # fewer characters than the limit, more UTF-8 bytes; a lone surrogate written raw, not escaped
    '{"a": "' + "é" * (MAX_BYTES - 20) + '"}', '{"a": "' + "😀" * (MAX_BYTES // 3) + '"}', '{"a": "\ud800"}',
    '{"a": "x\udfff"}', '{"\ud800": 1}', '{"a": 1, "b": [' + "1," * 30 + "1]}",
]


def texts():
    yield from ATTACKS
    for va in VALUES:
        yield f'{{"a": {va}}}'
        yield f'{{"b": 1, "a": {va}}}'
        yield f'{{"a": 1, "b": {va}}}'
        yield f'{{"a":{va},"b":{va}}}'


def slow(compiled: CompiledSchema, raw: object) -> dict | None:
    """What the pipeline does without the reader: decode, then prepare (None: refused)."""
    try:
        return compiled.prepare(decode_arguments(raw, MAX_BYTES, 32))
    except ToolFailure:
        return None


def test_the_reader_never_differs_from_decode_and_prepare() -> None:
    checked = accepted = readers = 0
    for schema in schemas():
        compiled = CompiledSchema(normalize_schema(schema))
        reader = json_reader(compiled.schema, MAX_BYTES)
        if reader is None:  # only a default its own field refuses (the test below) leaves a schema without
            assert slow(compiled, '{"a": 1}') is None or compiled.prepare({"a": 1}) != {"a": 1}, schema
            continue
        readers += 1
        for raw in texts():
            checked += 1
            got = reader(raw)
            if got is None:
                continue
            accepted += 1
            want = slow(compiled, raw)
            assert want is not None, (schema, raw, got)  # never accepts what the full path refuses
            assert list(got.items()) == list(want.items()), (schema, raw)  # same dict, same order
            assert [type(v) for v in got.values()] == [type(v) for v in want.values()], (schema, raw)
    assert readers > 400 and accepted > checked // 20  # and it does take the ordinary calls it exists for


def test_ordinary_calls_are_read_in_one_step_with_defaults_filled() -> None:
    schema = normalize_schema({"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer", "default": 3},
        "metric": {"type": "boolean", "default": True}}, "required": ["city"], "additionalProperties": False})
    reader = json_reader(schema, 1000)
    assert reader is not None
    assert reader('{"city": "Paris"}') == {"city": "Paris", "days": 3, "metric": True}
    assert list(reader('{"metric": false, "city": "Oslo"}')) == ["metric", "city", "days"]
    first, second = reader('{"city": "a"}'), reader('{"city": "b"}')
    assert first is not second  # a fresh dict per call: a hook that changes one changes no other


@pytest.mark.parametrize("raw", [{"a": 1}, b'{"a": 1}', None, 5])
def test_arguments_that_are_not_text_are_left_to_the_full_path(raw) -> None:
    reader = json_reader({"type": "object", "properties": {"a": {"type": "integer"}}}, 1000)
    assert reader is not None and reader(raw) is None


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}},
    {"type": "object", "properties": {"a": {"type": "array"}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
    # defaults prepare would copy, or refuse: those schemas get no reader
    {"type": "object", "properties": {"a": {"type": "string", "default": ["x"]}}},
    {"type": "object", "properties": {"a": {"type": "integer", "default": "seven"}}},
    {"type": "object", "properties": {"a": {"type": "integer", "default": None}}},
])
def test_schemas_the_reader_cannot_mirror_get_none(schema) -> None:
    assert json_reader(schema, 1000) is None
