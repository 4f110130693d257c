"""A refused call's explanation takes linear time and says what is wrong.

The model (or a prompt-injected document it read) writes every argument, and tool
schemas come from developers, OpenAPI documents and MCP servers, which are full of
``pattern`` and ``uniqueItems``. jsonschema-rs decides in linear time; the message the
model reads used to come from python-jsonschema, which re-ran each ``pattern`` with
Python's backtracking ``re`` and compared a unique array's items pairwise. Before the
fix: 24 characters against ``^([a-zA-Z0-9]+)*@example\\.com$`` took 1.3 s and each
two more characters 4× as long; an array of 4,000 objects under ``uniqueItems`` took
39 s. Each case below must be explained within a CPU budget far below that, through
the real pipeline (``Reach.invoke``), and the message must still name the field.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from reach_core import Connector, Reach

BUDGET_S = 2.0  # CPU seconds for one refused call; the explanation needs milliseconds

# Patterns with nested or overlapping quantifiers (the classic catastrophic shapes), and
# an input that almost matches, then fails at its last character.
PATTERNS = [
    (r"^([a-zA-Z0-9]+)*@example\.com$", "a" * 40 + "!"),
    (r"^(a+)+$", "a" * 40 + "!"),
    (r"^(a|a)*$", "a" * 40 + "!"),
    (r"^(a|aa)+$", "a" * 60 + "!"),
    (r"^([a-z]+\s?)*$", "word " * 20 + "!"),
    (r"^(\w+\.?)*\w+@\w+\.\w+$", "a." * 30 + "!"),
    (r"^(\d+)*[a-z]$", "1" * 40 + "!"),
    (r"^((ab)*)+$", "ab" * 30 + "!"),
    (r"^([^@\s]+)+@x$", "b" * 40 + " "),
    (r"^(.*a){20}$", "a" * 40 + "!"),
    (r"(x+x+)+y", "x" * 40),
    (r"^(([a-z])+.)+[A-Z]([a-z])+$", "a" * 40 + "!"),
]


class Echo(Connector):
    """Returns its arguments; the tests only look at refused calls."""

    risk = "read"

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.name = name
        self.description = f"Echo for {name}. Use in tests."
        self.input_schema = schema

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        return params


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def _reach(tmp_path, schema: dict[str, Any]) -> Reach:
    reach = Reach({"reach": {"data_dir": str(tmp_path / "data")}}, plugins=[])
    reach.register(Echo("probe", schema))
    return reach


async def _refused(reach: Reach, args: dict[str, Any]) -> tuple[str, float]:
    t0 = time.process_time()
    result = await reach.invoke("probe", json.dumps(args))
    spent = time.process_time() - t0
    assert not result.ok and result.error is not None
    assert result.error.code == "invalid_arguments"
    return result.error.message, spent


@pytest.mark.parametrize(("pattern", "text"), PATTERNS, ids=[p for p, _ in PATTERNS])
@pytest.mark.parametrize("where", ["property", "array item", "nested object", "property name"])
async def test_a_backtracking_pattern_is_explained_in_linear_time(tmp_path, pattern, text, where):
    if where == "property":
        schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}, "required": ["v"]}
        args: dict[str, Any] = {"v": text}
    elif where == "array item":
        schema = _obj(v={"type": "array", "items": {"type": "string", "pattern": pattern}})
        args = {"v": ["fine" if i else text for i in range(3)]}
    elif where == "nested object":
        schema = {"type": "object", "properties": {"v": {"type": "object", "properties": {
            "inner": {"type": "string", "pattern": pattern}}}}}
        args = {"v": {"inner": text}}
    else:  # a key the model chose, checked against propertyNames
        schema = {"type": "object", "properties": {"v": {"type": "object", "propertyNames": {"pattern": pattern}}}}
        args = {"v": {text: 1}}
    message, spent = await _refused(_reach(tmp_path, schema), args)
    assert spent < BUDGET_S, f"{spent:.1f} s of CPU to explain one refused call"
    assert "`v" in message


@pytest.mark.parametrize("n", [2_000, 20_000])
@pytest.mark.parametrize("item", ["object", "array", "string", "number", "mixed"])
async def test_a_repeated_item_in_a_unique_array_is_explained_in_linear_time(tmp_path, n, item):
    make = {
        "object": lambda i: {"k": i, "tags": [i, str(i)]},
        "array": lambda i: [i, [i]],
        "string": lambda i: f"s{i}",
        "number": lambda i: i * 1.5,
        "mixed": lambda i: [{"k": i}, f"s{i}", i, [i]][i % 4],
    }[item]
    items = [make(i) for i in range(n)]
    items.append(items[n // 2])  # one repeat, far from its first copy
    schema = {"type": "object", "properties": {"xs": {"type": "array", "uniqueItems": True}}, "required": ["xs"]}
    message, spent = await _refused(_reach(tmp_path, schema), {"xs": items})
    assert spent < BUDGET_S, f"{spent:.1f} s of CPU to explain one refused call"
    assert "`xs` must not repeat an item" in message
    assert len(message) < 400  # the array is not echoed back


async def test_many_bad_items_give_three_short_sentences(tmp_path):
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}}
    message, spent = await _refused(_reach(tmp_path, schema), {"xs": ["x" * 50] * 50_000})
    assert spent < BUDGET_S
    assert message.count("must be an integer") <= 3 and len(message) < 1_000


@pytest.mark.parametrize(("schema", "args", "expected"), [
    ({"type": "object", "properties": {"city": {"type": "string", "description": "the city"}}, "required": ["city"]},
     {}, "missing required field: `city` (the city)"),
    ({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]},
     {}, "missing required fields: `a`, `b`"),
    ({"type": "object", "properties": {"o": {"type": "object", "properties": {"w": {}}, "required": ["w"]}}},
     {"o": {}}, "missing required field in `o`: `w`"),
    ({"type": "object", "properties": {"a": {}}, "additionalProperties": False},
     {"a": 1, "zz": 2, "yy": 3}, "unexpected field(s) `yy`, `zz`; allowed fields: a"),
    (_obj(u={"enum": ["c", "f"]}), {"u": "k"}, '`u` must be one of c, f; you sent "k"'),
    (_obj(n={"type": "integer"}), {"n": "5"}, '`n` must be an integer, e.g. 5; you sent "5"'),
    (_obj(n={"type": ["integer", "null"]}), {"n": "x"}, "`n` must be an integer or null"),
    (_obj(n={"type": "integer", "minimum": 1}), {"n": 0}, "`n` must be at least 1; you sent 0"),
    (_obj(s={"type": "string", "maxLength": 2}), {"s": "abc"}, "`s` must have at most 2 characters"),
    (_obj(xs={"type": "array", "minItems": 2}), {"xs": [1]}, "`xs` must have at least 2 items"),
    (_obj(d={"type": "string", "format": "date"}), {"d": "tomorrow"}, "`d` must be"),
    (_obj(p={"type": "string", "pattern": "^[A-Z]{3}$"}), {"p": "usd"},
     '`p` must match the pattern ^[A-Z]{3}$; you sent "usd"'),
    (_obj(c={"const": 5}), {"c": 4}, "`c` must be 5; you sent 4"),
])
async def test_messages_name_the_field_and_the_fix(tmp_path, schema, args, expected):
    message, _ = await _refused(_reach(tmp_path, schema), args)
    assert expected in message
    assert message.endswith("Send the call again with corrected arguments.")
