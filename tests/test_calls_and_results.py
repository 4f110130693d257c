"""Decoding arguments, the tagged-text parser, and the one serialisation rule."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import json
import random
import re
import time
import uuid

import pytest
from pydantic import BaseModel

from reach_core import TaggedParser, ToolFailure, connector, to_jsonable
from reach_core.calls import decode_arguments, to_call
from reach_core.testing import make_reach


@pytest.mark.parametrize(("raw", "expected"), [
    ('{"a": 1}', {"a": 1}), ({"a": 1}, {"a": 1}), ("", {}), (None, {}), ("null", {}),
    (b'{"city": "\xe5\x8c\x97\xe4\xba\xac"}', {"city": "北京"}),
])
def test_decode_accepts(raw, expected):
    assert decode_arguments(raw) == expected


@pytest.mark.parametrize(("raw", "code"), [
    ("{not json", "invalid_json"), ('{"a": 1', "invalid_json"), ("[1]", "invalid_arguments"),
    ("42", "invalid_arguments"), ("x" * 2_000_001, "invalid_arguments"),
    ("[" * 40 + "]" * 40, "invalid_arguments"),
])
def test_decode_refuses(raw, code):
    with pytest.raises(ToolFailure) as info:
        decode_arguments(raw)
    assert info.value.code == code


def test_brackets_inside_strings_do_not_count_as_depth():
    assert decode_arguments('{"s": "' + "[" * 100 + '"}') == {"s": "[" * 100}


def test_call_shapes():
    assert to_call({"id": "1", "name": "f", "arguments": "{}"}).name == "f"
    assert to_call({"id": "1", "function": {"name": "g", "arguments": "{}"}}).name == "g"
    assert to_call("h", {"a": 1}).arguments == {"a": 1}
    with pytest.raises(TypeError):
        to_call(42)


def test_tagged_parser_several_calls_and_errors():
    text = (
        'Let me check.\n<tool_call>{"name": "get_weather", "arguments": {"city": "北京"}}</tool_call>\n'
        '<tool_call>{"name": "append_note", "arguments": {"content": "run 5k"}}</tool_call>'
        "<tool_call>{broken</tool_call>"
    )
    calls, errors = TaggedParser().parse(text)
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "北京"}), ("append_note", {"content": "run 5k"})]
    assert len(errors) == 1 and "not valid JSON" in errors[0]
    assert TaggedParser().strip(text).startswith("Let me check.")


def test_tagged_parser_custom_tags_and_unclosed():
    p = TaggedParser("[[call]]", "[[/call]]")
    calls, errors = p.parse('[[call]]```json\n{"name": "f", "arguments": {}}\n```[[/call]]')
    assert calls[0].name == "f" and not errors
    calls, errors = TaggedParser().parse('<tool_call>{"name": "f"}')
    assert not calls and "never closed" in errors[0]


def test_parser_is_a_named_strategy(tmp_path):
    reach = make_reach(data_dir=tmp_path)
    calls, _ = reach.parse_tagged('<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>')
    assert calls[0].arguments == {"x": 1}


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    when: dt.date


class Model(BaseModel):
    price: decimal.Decimal
    at: dt.datetime


def test_serialisation_rule():
    data = {
        1: Color.RED, "p": Point(1, dt.date(2024, 5, 1)), "m": Model(price=decimal.Decimal("9.99"),
        at=dt.datetime(2024, 5, 1, 9, 30)), "u": uuid.UUID(int=1), "d": decimal.Decimal("0.1"),
        "b": b"\x00\x01", "s": {3, 1, 2}, "t": (1, 2), "f": float("nan"), "td": dt.timedelta(minutes=1),
    }
    out = to_jsonable(data)
    json.dumps(out)
    assert out["1"] == "red"
    assert out["p"] == {"x": 1, "when": "2024-05-01"}
    assert out["m"] == {"price": "9.99", "at": "2024-05-01T09:30:00"}
    assert out["d"] == "0.1" and out["s"] == [1, 2, 3] and out["t"] == [1, 2] and out["f"] is None
    assert out["b"]["bytes"] == 2 and "sha256" in out["b"]
    assert out["td"] == 60.0


async def test_connector_returning_rich_types(tmp_path):
    @connector(risk="read")
    def get_invoice() -> Model:
        """Get the invoice. Use when asked about an invoice."""
        return Model(price=decimal.Decimal("12.50"), at=dt.datetime(2024, 1, 2))

    reach = make_reach(data_dir=tmp_path)
    reach.register(get_invoice)
    res = await reach.invoke("get_invoice", {})
    assert res.content == {"price": "12.50", "at": "2024-01-02T00:00:00"}
    assert reach.tool("get_invoice").output_schema["properties"]["price"]


# -- the tagged parser on hostile replies ------------------------------------------------------
def _regex_reference(open_tag: str, close_tag: str) -> re.Pattern[str]:
    """What TaggedParser matched with before it used str.find (kept verbatim)."""
    return re.compile(re.escape(open_tag) + r"(.*?)" + re.escape(close_tag), re.S)


@pytest.mark.parametrize("tags", [("<tool_call>", "</tool_call>"), ("[[call]]", "[[/call]]"), ("<x>", "</x>")])
def test_tagged_parser_finds_what_the_lazy_regex_found(tags: tuple[str, str]) -> None:
    """Bodies, order and stripped text equal the previous regex's on generated replies
    (tags nested, repeated, unclosed, split, next to JSON and prose)."""
    open_tag, close_tag = tags
    ref = _regex_reference(open_tag, close_tag)
    pieces = [open_tag, close_tag, open_tag[:3], close_tag[-3:], '{"name": "f", "arguments": {}}', "text ", "\n",
              "```json\n", "```", '{"name": 1}', "{", "}", " "]
    rng = random.Random(7)
    parser = TaggedParser(open_tag, close_tag)
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert [body for _, _, body in parser._calls(text)] == [m.group(1) for m in ref.finditer(text)], text
        assert parser.strip(text) == ref.sub("", text).strip(), text
        calls, errors = parser.parse(text)
        assert len(calls) + len(errors) >= len(ref.findall(text)) and len(calls) <= len(ref.findall(text))


@pytest.mark.parametrize("reply", [
    "<tool_call>" * 20_000,  # opened again and again, never closed
    "<tool_call>{" * 10_000 + "</tool_call",  # a close tag cut short
    ("<tool_call>x</tool_call>" * 5_000),  # many closed calls, each not JSON
])
def test_tagged_parser_takes_linear_time_on_hostile_replies(reply: str) -> None:
    """A reply the model was tricked into writing must not stall the loop: the lazy regex
    took 14 s of CPU on 88 kB of open tags."""
    parser = TaggedParser()
    t0 = time.process_time()
    calls, errors = parser.parse(reply)
    parser.strip(reply)
    assert time.process_time() - t0 < 2.0
    assert calls == []
    assert errors  # either "never closed" or one message per broken call


def test_tagged_parser_refuses_empty_tags() -> None:
    with pytest.raises(ValueError):
        TaggedParser("", "</x>")
