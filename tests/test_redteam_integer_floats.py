"""Red team: a field declared an integer reaches the connector as an ``int``.

JSON Schema counts a whole float as an integer, so ``{"n": 1.0}`` (or ``1e0``,
``10e-1``, ``-0.0``) passed a ``{"type": "integer"}`` field and the connector got the
float: an ``int`` parameter then failed (``range(1.0)``) as an internal error, and the
run's guards, which tell calls apart by their JSON, counted ``1`` and ``1.0`` as two
different calls, so a write refused after three identical calls ran again under each
new spelling. A float beyond 2**53 no longer even holds the number written
(``9007199254740993.0`` is read as ...992). Now a whole float in an integer-only place
(a field, an optional field with bounds, array items, nested objects) becomes the
``int`` it stands for, and one too large to be exact is refused.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import Field

from reach_core import Connector, connector
from reach_core.testing import make_reach

SEEN: list[Any] = []

# whole numbers spelt as floats, and the integer each stands for
SPELLINGS = [("1.0", 1), ("1e0", 1), ("1E+0", 1), ("10e-1", 1), ("0.1e1", 1), ("1.000", 1), ("100e-2", 1),
             ("-0.0", 0), ("0.0", 0), ("-0e5", 0), ("2.5e1", 25), ("-7.0", -7), ("9007199254740991.0", 2**53 - 1)]
TOO_BIG = ["9007199254740993.0", "1e20", "-1e20", "1e300", "18446744073709551615.0"]


class Page(Connector):
    name = "get_page"
    description = "One page of results. Use when listing."
    risk = "read"
    input_schema = {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": -10**18},
        "maybe": {"anyOf": [{"type": "integer", "maximum": 10**17}, {"type": "null"}]},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "window": {"type": "object", "properties": {"size": {"type": ["integer", "null"]}}},
        "ratio": {"type": "number"},
    }}

    async def execute(self, params: Any) -> str:
        SEEN.append(params)
        return "ok"


@connector(risk="read")
async def take(n: int, maybe: Annotated[int | None, Field(ge=-10**18)] = None, ids: list[int] | None = None) -> int:
    """Take a number. Use when testing integers."""
    SEEN.append({"n": n, "maybe": maybe, "ids": ids})
    return len(range(n)) if n >= 0 else n  # range() refuses a float


class Charge(Connector):
    name = "charge_card"
    description = "Charge a card. Use when the user pays."
    risk = "write"
    input_schema = {"type": "object", "properties": {"cents": {"type": "integer"}}, "required": ["cents"]}

    async def execute(self, params: Any) -> str:
        SEEN.append(params)
        return "charged"


def _reach(tmp_path):
    reach = make_reach(data_dir=tmp_path)
    for tool in (Page(), take, Charge()):
        reach.register(tool)
    return reach


def _ints(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_ints(v) for v in value.values())
    if isinstance(value, list):
        return all(_ints(v) for v in value)
    return value is None or type(value) is int


@pytest.mark.parametrize("where", ["n", "maybe", "ids", "window"])
@pytest.mark.parametrize(("text", "number"), SPELLINGS, ids=[s for s, _ in SPELLINGS])
async def test_a_whole_float_reaches_a_class_connector_as_an_int(tmp_path, text, number, where):
    reach = _reach(tmp_path)
    SEEN.clear()
    body = {"n": 1, "ids": f"[3, {text}]", "window": f'{{"size": {text}}}'}.get(where, text)
    raw = '{"n": 1, "' + where + '": ' + body + "}" if where != "n" else '{"n": ' + text + "}"
    result = await reach.invoke("get_page", raw)
    assert result.ok, result
    assert _ints(SEEN[0]), SEEN[0]
    got = {"ids": lambda p: p["ids"][1], "window": lambda p: p["window"]["size"]}.get(where, lambda p: p[where])
    assert got(SEEN[0]) == number


@pytest.mark.parametrize("as_text", [True, False], ids=["json", "dict"])
@pytest.mark.parametrize(("text", "number"), SPELLINGS, ids=[s for s, _ in SPELLINGS])
async def test_an_int_parameter_gets_an_int(tmp_path, text, number, as_text):
    reach = _reach(tmp_path)
    SEEN.clear()
    args: Any = f'{{"n": {text}, "maybe": {text}, "ids": [{text}]}}'
    result = await reach.invoke("take", args if as_text else json.loads(args))
    assert result.ok, result  # range(1.0) was an internal error
    assert SEEN == [{"n": number, "maybe": number, "ids": [number]}] and _ints(SEEN[0])


@pytest.mark.parametrize(("text", "number"), SPELLINGS[:8], ids=[s for s, _ in SPELLINGS[:8]])
async def test_a_write_repeated_under_another_spelling_is_still_the_same_call(tmp_path, text, number):
    reach = _reach(tmp_path)
    for _ in range(3):  # identical_call_limit
        assert (await reach.invoke("charge_card", {"cents": number}, run_id="r1")).ok
    SEEN.clear()
    again = await reach.invoke("charge_card", f'{{"cents": {text}}}', run_id="r1")
    assert again.error is not None and again.error.code == "denied", again
    assert SEEN == []


@pytest.mark.parametrize("text", TOO_BIG)
@pytest.mark.parametrize("tool", ["get_page", "take", "charge_card"])
async def test_a_float_too_large_to_be_exact_is_refused(tmp_path, tool, text):
    reach = _reach(tmp_path)
    SEEN.clear()
    field = "cents" if tool == "charge_card" else "n"
    result = await reach.invoke(tool, f'{{"{field}": {text}}}')
    assert result.error is not None and result.error.code == "invalid_arguments", result
    assert SEEN == []


async def test_positive_control_numbers_stay_floats_and_fractions_are_refused(tmp_path):
    reach = _reach(tmp_path)
    SEEN.clear()
    assert (await reach.invoke("get_page", '{"n": 2, "ratio": 1.0}')).ok
    assert SEEN == [{"n": 2, "ratio": 1.0}] and type(SEEN[0]["ratio"]) is float
    refused = await reach.invoke("get_page", '{"n": 1.5}')
    assert refused.error is not None and refused.error.code == "invalid_arguments"
