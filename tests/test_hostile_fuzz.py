"""Random argument shapes through the whole pipeline: whatever a model (or a client)
sends to a plain ``@connector`` function, the answer is a result with an error code
the model can act on (``invalid_arguments``, ``invalid_json``), never an exception out
of ``invoke`` and never "internal error". Seeded, so a failure replays."""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import random
import uuid
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from reach_core import connector
from reach_core.testing import make_reach


class Colour(enum.Enum):
    red = "red"
    blue = "blue"


class Point(BaseModel):
    x: int
    y: float = 0


@connector(risk="read")
def scalars(a: int, b: float = 1.0, c: bool = False, d: str | None = None) -> str:
    """Scalars.

    Args:
        a: a
        b: b
        c: c
        d: d
    """
    return "ok"


@connector(risk="read")
def containers(items: list[int], m: dict[str, int] | None = None, lit: Literal["x", "y"] = "x",
               t: tuple[int, str] | None = None) -> str:
    """Containers.

    Args:
        items: i
        m: m
        lit: l
        t: t
    """
    return "ok"


@connector(risk="read")
def typed(when: datetime.datetime, day: datetime.date | None = None, col: Colour = Colour.red,
          p: Point | None = None, u: uuid.UUID | None = None) -> str:
    """Typed values.

    Args:
        when: w
        day: d
        col: c
        p: p
        u: u
    """
    return "ok"


@connector(risk="read")
async def odd(data: bytes = b"", path: Path | None = None, dec: decimal.Decimal | None = None,
              s: set[str] | None = None, anything: Any = None, fs: frozenset[int] | None = None) -> str:
    """Odd types.

    Args:
        data: d
        path: p
        dec: d
        s: s
        anything: a
        fs: f
    """
    return "ok"


@connector(risk="read")
def nested(u: int | list[str], deep: list[list[dict[str, Point]]] | None = None,
           td: datetime.timedelta | None = None, n: int = 1) -> str:
    """Nested.

    Args:
        u: u
        deep: d
        td: t
        n: n
    """
    return "ok"


PARAMS = {"scalars": ["a", "b", "c", "d"], "containers": ["items", "m", "lit", "t"],
          "typed": ["when", "day", "col", "p", "u"], "odd": ["data", "path", "dec", "s", "anything", "fs"],
          "nested": ["u", "deep", "td", "n"]}
STRINGS = ["", "a", "\ud800", "x\udfffy", "\x00", "9" * 5000, "2020-13-45", "1e999", "nan", "-inf", "red", "RED",
           "\u202e", "é", "P1D", "00000000-0000-0000-0000-000000000000", "../../etc", "true", "a\x00b", "\ufeff"]


def _value(rnd: random.Random, depth: int = 0) -> Any:
    kind = rnd.randrange(6 if depth > 4 else 12)
    if kind == 0:
        return rnd.choice(STRINGS)
    if kind == 1:
        return rnd.choice([0, -1, 2**64, -(2**100), 10**400, 1, True, False])
    if kind == 2:
        return rnd.choice([1.5, float("nan"), float("inf"), -0.0, 1e308, 1e-320])
    if kind == 3:
        return None
    if kind == 4:
        return rnd.choice([b"\xff", bytearray(b"a")])
    if kind == 5:
        return rnd.choice([set(), {1}, frozenset("ab"), (1, "a"), (), object(), Ellipsis, 1j])
    if kind in (6, 7, 8):
        return [_value(rnd, depth + 1) for _ in range(rnd.randrange(4))]
    keys = ["x", "y", "", "\ud800", 1, None, "a" * 300, "__class__"]
    return {rnd.choice(keys): _value(rnd, depth + 1) for _ in range(rnd.randrange(4))}


def _arguments(rnd: random.Random, tool: str) -> Any:
    if rnd.random() < 0.05:
        return rnd.choice([[], "x", 1, None, "{", "[1]", '{"a": 1', json.dumps({"a": 1}), b"{}", "\ud800"])
    args: dict[Any, Any] = {name: _value(rnd) for name in PARAMS[tool] if rnd.random() < 0.7}
    if rnd.random() < 0.1:
        args[rnd.choice(["extra", "\ud800", "A", "ctx", "self"])] = _value(rnd)
    return args


@pytest.mark.parametrize("seed", range(8))
async def test_random_argument_shapes_never_reach_an_internal_error(tmp_path, seed: int) -> None:
    reach = make_reach(data_dir=tmp_path / "data")
    for tool in (scalars, containers, typed, odd, nested):
        reach.register(tool)
    rnd = random.Random(seed)
    seen: set[str] = set()
    for _ in range(400):
        tool = rnd.choice(list(PARAMS))
        args = _arguments(rnd, tool)
        res = await reach.invoke(tool, args)
        if res.error is None:
            seen.add("ok")
            continue
        seen.add(res.error.code)
        assert res.error.code in ("invalid_arguments", "invalid_json"), (tool, repr(args)[:300], res.error)
        assert "internal" not in (res.error.message or "").lower(), (tool, repr(args)[:300], res.error)
        assert res.error.message, (tool, repr(args)[:300])
    assert "invalid_arguments" in seen
