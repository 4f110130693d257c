"""Hostile arguments: every malformed shape is an ``invalid_arguments`` (or
``invalid_json``) that names the problem, never "internal error" and never an
exception out of ``invoke``; the size and depth caps hold for dict arguments as
they do for JSON text.

Each family is parametrised with many variants; the tools are real ``@connector``
functions and ``Connector`` classes run through the whole pipeline.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from reach_core import Connector, ToolFailure, connector
from reach_core.calls import check_values, decode_arguments
from reach_core.testing import make_reach

ran: list[Any] = []


@connector(risk="read")
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first
        b: second
    """
    ran.append(("add", a, b))
    return a + b


@connector(risk="read")
async def echo(text: str, times: int = 1) -> str:
    """Echo text.

    Args:
        text: the text
        times: how often
    """
    ran.append(("echo", text))
    return text * times


@connector(risk="read")
def tag(name: str, ctx=None) -> str:
    """Tag something (takes the call context).

    Args:
        name: the name
    """
    ran.append(("tag", name))
    return name


@connector(risk="read")
def loose(name: str, **extra: Any) -> dict:
    """Takes any extra field.

    Args:
        name: the name
    """
    ran.append(("loose", name, extra))
    return {"name": name, **extra}


class Free(Connector):
    """A class connector with an open schema: anything JSON goes."""

    name = "free"
    description = "Store anything."
    risk = "read"
    input_schema = {"type": "object"}

    async def execute(self, params: Any, ctx: Any = None) -> Any:
        ran.append(("free", params))
        return {"stored": json.dumps(params, ensure_ascii=False)[:100]}


class Nested(Connector):
    name = "nested"
    description = "Nested items."
    risk = "read"
    input_schema = {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "meta": {"type": "object"}}}

    async def execute(self, params: Any, ctx: Any = None) -> Any:
        ran.append(("nested", params))
        return len(params.get("items", []))


class Order(BaseModel):
    qty: int
    note: str = ""

    @field_validator("qty")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("qty must be positive")
        return v


class Place(Connector):
    name = "place"
    description = "Place an order."
    risk = "read"
    Args = Order

    async def execute(self, params: Order, ctx: Any = None) -> Any:
        ran.append(("place", params.qty))
        return params.qty


TOOLS = [add, echo, tag, loose, Free(), Nested(), Place()]


@pytest.fixture
def reach(tmp_path):
    ran.clear()
    r = make_reach(config={"reach": {"max_argument_bytes": 100_000, "max_argument_depth": 16}},
                   data_dir=tmp_path / "data")
    for t in TOOLS:
        r.register(t)
    return r


def assert_refused(res: Any, *words: str, codes: tuple[str, ...] = ("invalid_arguments",)) -> None:
    assert not res.ok, res
    assert res.error.code in codes, res.error
    msg = res.error.message
    assert "internal error" not in msg
    for w in words:
        assert w.lower() in msg.lower(), (w, msg)
    assert ran == [], f"the tool ran: {ran}"
    res.to_json()  # the result itself is always serialisable


def both(args: dict[str, Any]) -> list[Any]:
    """The same arguments as a dict and, where JSON can say it, as JSON text."""
    out: list[Any] = [args]
    try:
        out.append(json.dumps(args, ensure_ascii=False, allow_nan=False))
    except (ValueError, TypeError):
        pass
    return out


# ------------------------------------------------------------------ extra fields to @connector functions

EXTRA = [
    ("add", {"a": 1, "b": 2, "c": 3}, "c"),
    ("add", {"a": 1, "b": 2, "A": 3}, "A"),
    ("add", {"a": 1, "b": 2, "ctx": 3}, "ctx"),
    ("add", {"a": 1, "b": 2, "__class__": 3}, "__class__"),
    ("add", {"a": 1, "b": 2, "": 3}, "``"),
    ("add", {"a": 1, "b": 2, "a ": 3}, "a "),
    ("add", {"a": 1, "b": 2, "self": None}, "self"),
    ("add", {"a": 1, "b": 2, "**kw": {}}, "**kw"),
    ("add", {"a": 1, "b": 2, "ｂ": 2}, "ｂ"),
    ("echo", {"text": "hi", "extra": "x"}, "extra"),
    ("echo", {"text": "hi", "times": 1, "Text": "x"}, "Text"),
    ("tag", {"name": "n", "ctx": {"agent": "admin"}}, "ctx"),
    ("tag", {"name": "n", "context": 1}, "context"),
]


@pytest.mark.parametrize(("tool", "args", "field"), EXTRA)
async def test_an_extra_field_to_a_connector_function_is_named(reach, tool, args, field):
    for sent in both(args):
        res = await reach.invoke(tool, sent)
        assert_refused(res, field.strip("`") or "unexpected", "allowed fields")


async def test_a_function_with_kwargs_still_takes_extra_fields(reach):
    res = await reach.invoke("loose", {"name": "n", "colour": "red"})
    assert res.ok and res.content == {"name": "n", "colour": "red"}


async def test_the_declared_schema_of_a_function_is_unchanged(reach):
    schema = reach.tool("add").schema
    assert "additionalProperties" not in schema  # pins and declarations stay as they were


# ------------------------------------------------------------------ lone surrogates

SURROGATES = ["\ud800", "\udfff", "\udc00", "a\ud83d", "\ude00b", "北京\ud800", "\ud800\ud800", "x" * 50 + "\udbff"]


@pytest.mark.parametrize("text", SURROGATES)
@pytest.mark.parametrize("tool", ["echo", "free", "nested", "place"])
async def test_a_lone_surrogate_in_a_value_is_refused(reach, tool, text):
    args = {"echo": {"text": text}, "free": {"x": [text]}, "nested": {"meta": {"k": text}},
            "place": {"qty": 1, "note": text}}[tool]
    for sent in (args, json.dumps(args), json.dumps(args, ensure_ascii=False)):
        ran.clear()
        res = await reach.invoke(tool, sent)
        assert_refused(res, "surrogate")


@pytest.mark.parametrize("text", SURROGATES)
async def test_a_lone_surrogate_in_a_key_is_refused(reach, text):
    for sent in ({text: 1}, json.dumps({text: 1}), {"outer": {text: 1}}, json.dumps({"outer": [{text: 1}]})):
        res = await reach.invoke("free", sent)
        assert_refused(res, "surrogate")


@pytest.mark.parametrize("text", ["\U0001f600", "\ud83d\ude00", "北京", "é", "\u2028"])
async def test_proper_pairs_and_other_text_pass(reach, text):
    pair = json.dumps({"text": text})  # escaped surrogate pairs decode to one character
    res = await reach.invoke("echo", pair)
    assert res.ok and res.content == json.loads(pair)["text"]


# ------------------------------------------------------------------ NaN, Infinity, huge numbers

NON_FINITE_TEXT = ['{"a": NaN, "b": 1}', '{"a": 1, "b": Infinity}', '{"a": -Infinity, "b": 1}',
                   '{"x": [1, NaN]}', '{"x": {"y": Infinity}}', '{"a": 1e999, "b": 1}', '{"x": -1E400}',
                   '{"x": [1.5e309]}']


@pytest.mark.parametrize("raw", NON_FINITE_TEXT)
@pytest.mark.parametrize("tool", ["add", "free"])
async def test_nan_and_infinity_in_json_text_are_refused(reach, raw, tool):
    res = await reach.invoke(tool, raw)
    assert_refused(res, codes=("invalid_json", "invalid_arguments"))
    assert any(w in res.error.message for w in ("NaN", "Infinity", "finite", "too large"))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), -float("nan")])
@pytest.mark.parametrize("where", ["top", "list", "nested"])
async def test_nan_and_infinity_in_dict_arguments_are_refused(reach, value, where):
    args = {"top": {"x": value}, "list": {"x": [1, value]}, "nested": {"x": {"y": {"z": value}}}}[where]
    res = await reach.invoke("free", args)
    assert_refused(res, "finite")
    res = await reach.invoke("add", {"a": value, "b": 1})
    assert_refused(res)


HUGE = [2**64, -(2**63) - 1, 10**30, -(10**30), 10**400, 10**5000, -(10**5000), 2**100000]


@pytest.mark.parametrize("value", HUGE, ids=lambda v: f"{'-' if v < 0 else ''}2**{abs(v).bit_length()}")
async def test_huge_integers_in_dict_arguments_are_refused(reach, value):
    for tool, args in (("add", {"a": value, "b": 1}), ("free", {"x": value}), ("free", {"x": [[value]]}),
                       ("nested", {"items": [{"n": value}]}), ("place", {"qty": value})):
        ran.clear()
        res = await reach.invoke(tool, args)
        assert_refused(res, "64 bits")


@pytest.mark.parametrize("digits", [20, 21, 40, 400, 4300, 4301, 5000, 100_000])
async def test_huge_integers_in_json_text_are_refused(reach, digits):
    number = "9" * digits
    for tool, raw in (("add", f'{{"a": {number}, "b": 1}}'), ("free", f'{{"x": {number}}}'),
                      ("free", f'{{"x": [-{number}]}}'), ("nested", f'{{"items": [{{"n": {number}}}]}}')):
        ran.clear()
        res = await reach.invoke(tool, raw)
        assert_refused(res, codes=("invalid_json", "invalid_arguments"))
        assert any(w in res.error.message for w in ("digits", "64 bits", "the limit is"))


@pytest.mark.parametrize("value", [0, 1, -1, 2**63 - 1, -(2**63), 2**64 - 1, 1.5, -0.0, 1e308])
async def test_numbers_json_carries_pass(reach, value):
    res = await reach.invoke("free", {"x": value})
    assert res.ok
    res = await reach.invoke("free", json.dumps({"x": value}))
    assert res.ok


# ------------------------------------------------------------------ duplicate keys

DUPLICATES = [
    ('{"a": 1, "a": 2, "b": 3}', "a"),
    ('{"a": 1, "b": 2, "b": 2}', "b"),
    ('{"text": "x", "text": "y"}', "text"),
    ('{"x": {"k": 1, "k": 2}}', "k"),
    ('{"x": [{"k": 1}, {"k": 2, "k": 3}]}', "k"),
    ('{"t:1": 1, "t:1": 2}', "t:1"),
    ('{"u": "http://a:b@c", "u": "x"}', "u"),
    ('{"\\u0061": 1, "a": 2, "b": 3}', "a"),
    ('{"a\\u003a": 1, "a:": 2}', "a:"),
    ('{ "a" : 1 , "a" : 1 , "b" : 1 }', "a"),
    ('{"北京": 1, "北京": 2}', "北京"),
]


@pytest.mark.parametrize(("raw", "key"), DUPLICATES)
@pytest.mark.parametrize("tool", ["add", "free", "echo"])
async def test_a_key_given_twice_is_refused_and_named(reach, raw, key, tool):
    res = await reach.invoke(tool, raw)
    assert_refused(res, f"`{key}`", "more than once")


@pytest.mark.parametrize("raw", [
    '{"u": "http://x:1/a:b", "t": "10:30"}', '{"x": {"a": 1}, "y": {"a": 1}}', '{"a:b": "c:d"}',
    '{"x": [{"k": 1}, {"k": 2}]}', '{"s": "\\u003a"}', '{"k\\u003a": 1, "k": 2}', '{"x": ":::"}',
])
async def test_colons_and_repeated_names_in_different_objects_are_fine(reach, raw):
    res = await reach.invoke("free", raw)
    assert res.ok, res.error


# ------------------------------------------------------------------ keys that are not strings, values that are not JSON

BAD_KEYS = [1, 1.5, None, True, ("t",), b"k", frozenset({1})]


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
@pytest.mark.parametrize("where", ["top", "nested", "in_list"])
async def test_keys_that_are_not_strings_are_refused(reach, key, where):
    inner = {key: 1}
    args = {"top": inner, "nested": {"x": inner}, "in_list": {"x": [inner]}}[where]
    for tool in ("free", "add", "echo"):
        ran.clear()
        if where != "top" and tool != "free":
            continue
        res = await reach.invoke(tool, args)
        assert_refused(res, "field name", "strings")


NOT_JSON = [b"bytes", bytearray(b"x"), memoryview(b"x"), {1, 2}, frozenset(), object(), complex(1, 2),
            __import__("decimal").Decimal("1.5"), __import__("datetime").date(2024, 5, 1), type, len,
            Exception("x"), ...]


@pytest.mark.parametrize("value", NOT_JSON, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("where", ["top", "list", "nested"])
async def test_values_that_are_not_json_are_refused(reach, value, where):
    args = {"top": {"x": value}, "list": {"x": ["a", value]}, "nested": {"x": {"y": [{"z": value}]}}}[where]
    res = await reach.invoke("free", args)
    assert_refused(res, "not a JSON value", type(value).__name__)


@pytest.mark.parametrize("value", [b"bytes", {1}, object(), float("nan")], ids=["bytes", "set", "object", "nan"])
async def test_function_and_model_tools_refuse_non_json_too(reach, value):
    for tool, args in (("echo", {"text": value}), ("add", {"a": value, "b": 1}), ("place", {"qty": value})):
        ran.clear()
        assert_refused(await reach.invoke(tool, args))


# ------------------------------------------------------------------ shapes that are not an object

NOT_OBJECTS = ["[1, 2]", '"text"', "1", "true", "false", "1.5", "[]", '[{"a": 1}]', [1, 2], (1, 2), 5, 1.5,
               True, "x", {1, 2}, ["a"]]


@pytest.mark.parametrize("raw", NOT_OBJECTS, ids=repr)
async def test_top_level_values_that_are_not_objects_are_refused(reach, raw):
    res = await reach.invoke("free", raw)
    assert_refused(res, codes=("invalid_arguments", "invalid_json"))
    assert "object" in res.error.message or "JSON" in res.error.message


@pytest.mark.parametrize("raw", [b'{"x": 1}', bytearray(b'{"x": "\xe5\x8c\x97"}'), memoryview(b"{}")])
async def test_utf8_json_bytes_are_accepted(reach, raw):
    assert (await reach.invoke("free", raw)).ok


@pytest.mark.parametrize("raw", [b"\xff\xfe{}", b'{"x": "\xc3"}', b'{"x": "\xed\xa0\x80"}', b"\x80"])
async def test_bytes_that_are_not_utf8_are_refused(reach, raw):
    res = await reach.invoke("free", raw)
    assert_refused(res, "UTF-8", codes=("invalid_json",))


BROKEN = ['{"a": 1', '{"a": }', "{a: 1}", "{'a': 1}", '{"a": 1,}', '{"a": 1} {"b": 2}', '{"a": tru}',
          '{"a": 01}', '{"a": "\\x"}', '{"a": "\n"}', "\x00", "{" * 5, '{"a": 1}}', "nul"]


@pytest.mark.parametrize("raw", BROKEN)
async def test_broken_json_text_is_invalid_json_with_what_to_send(reach, raw):
    res = await reach.invoke("free", raw)
    assert_refused(res, codes=("invalid_json", "invalid_arguments"))
    assert "JSON" in res.error.message


# ------------------------------------------------------------------ caps: bytes and depth, dict or text

@pytest.mark.parametrize("build", [
    lambda n: {"x": "a" * n},
    lambda n: {"x": "北" * (n // 3 + 1)},
    lambda n: {"x": ["a" * 100] * (n // 100 + 1)},
    lambda n: {"k" * n: 1},
    lambda n: {f"k{i}": i for i in range(n // 8 + 1)},
    lambda n: {"x": [[1]] * (n // 4 + 1)},
    lambda n: {"x": {"y": [{"z": "a" * (n // 10)}] * 11}},
    lambda n: {"x": [None] * (n // 5 + 1)},
    lambda n: {"x": "\U0001f600" * (n // 4 + 1)},
], ids=["str", "cjk", "list", "key", "many-keys", "nested-lists", "deep-str", "nulls", "emoji"])
async def test_the_byte_cap_holds_for_dicts_as_for_text(reach, build):
    args = build(100_000)
    for sent in (args, json.dumps(args, ensure_ascii=False)):
        res = await reach.invoke("free", sent)
        assert_refused(res, "100000")


async def test_ten_megabytes_as_a_dict_is_refused_quickly(tmp_path):
    r = make_reach(data_dir=tmp_path / "d")  # default cap: 1 MB
    r.register(Free())
    ran.clear()
    big = {"x": "a" * 10_000_000, "y": list(range(2_000_000))}
    res = await r.invoke("free", big)
    assert_refused(res, "1000000")


async def test_arguments_under_the_cap_pass(reach):
    args = {"x": "a" * 80_000, "y": ["北京"] * 1000}
    assert (await reach.invoke("free", args)).ok
    assert (await reach.invoke("free", json.dumps(args, ensure_ascii=False))).ok


@pytest.mark.parametrize("depth", [17, 18, 40, 1000, 100_000])
@pytest.mark.parametrize("kind", ["list", "dict", "mixed"])
async def test_the_depth_cap_holds_for_dicts_as_for_text(reach, depth, kind):
    value: Any = 1
    for i in range(depth - 1):
        value = [value] if kind == "list" or (kind == "mixed" and i % 2) else {"k": value}
    args = {"x": value}
    res = await reach.invoke("free", args)
    assert_refused(res, "deeper than 16")
    if depth < 1000:
        ran.clear()
        res = await reach.invoke("free", json.dumps(args))
        assert_refused(res, "deeper than 16")


async def test_deep_json_text_is_refused_without_recursion(reach):
    for raw in ("[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000, "[" * 200_000):
        res = await reach.invoke("free", raw)
        assert_refused(res, codes=("invalid_arguments", "invalid_json"))


async def test_a_cycle_is_refused_not_looped(reach):
    a: dict[str, Any] = {}
    a["self"] = a
    b: list[Any] = []
    b.append(b)
    for args in (a, {"x": b}):
        assert_refused(await reach.invoke("free", args), "deeper")


async def test_a_dict_within_the_depth_cap_passes(reach):
    value: Any = 1
    for i in range(14):
        value = {"k": value} if i % 2 else [value]
    assert (await reach.invoke("free", {"x": value})).ok


# ------------------------------------------------------------------ validators of an Args model

@pytest.mark.parametrize("qty", [0, -1, -100])
async def test_a_model_validator_refusal_is_invalid_arguments(reach, qty):
    for sent in ({"qty": qty}, json.dumps({"qty": qty})):
        res = await reach.invoke("place", sent)
        assert_refused(res, "qty", "positive")


# ------------------------------------------------------------------ invoke never raises, through every way in

WAYS = [
    lambda t, a: {"id": "1", "name": t, "arguments": a},
    lambda t, a: {"id": "1", "function": {"name": t, "arguments": a}},
    lambda t, a: {"id": "1", "name": t, "args": a},
]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("args", [{"x": b"b"}, {"x": float("nan")}, {1: 1}, {"x": "\ud800"}, {"x": 10**5000},
                                  '{"x": NaN}', '{"a": 1, "a": 2}', b"\xff"],
                         ids=["bytes", "nan", "int-key", "surrogate", "huge-int", "nan-text", "dup", "not-utf8"])
async def test_every_call_shape_gets_the_same_refusal(reach, way, args):
    res = await reach.invoke(way("free", args))
    assert_refused(res, codes=("invalid_arguments", "invalid_json"))


async def test_refusals_log_no_internal_error(reach, caplog):
    with caplog.at_level(logging.ERROR):
        for args in ({"x": b"b"}, {"a": 1, "b": 2, "c": 3}, {1: 2}, {"x": 10**5000}, {"x": "\ud800"}):
            await reach.invoke("add" if "a" in args else "free", args)
    assert not [r for r in caplog.records if "internal" in r.getMessage() or "exception" in r.getMessage()]


# ------------------------------------------------------------------ the checks, directly

def test_check_values_counts_keys_and_colons():
    assert check_values({"a": {"b:c": "d:e:f"}, "l": [{"x": 1}]}) == (4, 3)


@pytest.mark.parametrize("raw", ['{"a": 1}', '{"u": "a:b"}', '{"x": {"y": 1}}', "{}", ' {"a": 1} ', '{"a": [1, 2.5]}'])
def test_decode_keeps_what_is_fine(raw):
    assert decode_arguments(raw) == json.loads(raw)


def test_decode_refuses_each_family_directly():
    for raw in ('{"a": NaN}', '{"a": 1, "a": 1}', '{"a": "\\ud800"}', {"a": b""}, {2: 1}, {"a": 2**70}):
        with pytest.raises(ToolFailure) as info:
            decode_arguments(raw)
            check_values(decode_arguments(raw))
        assert info.value.code in ("invalid_json", "invalid_arguments")


# ------------------------------------------------------------------ tool names a model should not send

@pytest.mark.parametrize("name", ["x" * 100_000, "add" + "\u200b" * 50_000, "a" * 65, "\ud800", "add\udc00",
                                  "add\x00", " add", "ADD", "", "../add", "add;rm -rf /", "北京" * 1000])
async def test_an_unknown_tool_name_is_refused_short_and_without_crashing(reach, name):
    res = await reach.invoke({"id": "1", "name": name, "arguments": "{}"})
    assert res.error.code == "unknown_tool"
    assert len(res.error.message) < 600
    res.to_json()
    assert ran == []
