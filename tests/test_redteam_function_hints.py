"""Red team: an ``@connector`` function gets what its type hints promise, checked.

The hints of a typed function were used only to write its JSON Schema; the function
was then called with the raw JSON values. So whatever pydantic enforces that a JSON
Schema does not state was silently skipped: an ``AfterValidator`` guarding a path or an
amount, a nested model's ``field_validator``/``model_validator``, an ``Enum``, a ``date``
(the function got a ``str``), an alias (the call crashed). An attacker who controls the
arguments walked straight past the author's own check.

Each check here is a guard the author wrote, and each attack variant ran the function
before the fix. The positive controls show that plain JSON hints still skip pydantic
(the fast path) and that what the hints allow still runs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
import json
import uuid
from decimal import Decimal
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

import pytest
from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, field_validator, model_validator

from reach_core import CallContext, connector
from reach_core.testing import make_reach

RAN: list[tuple[str, Any]] = []


def _no_parent(value: str) -> str:
    if ".." in value.split("/") or value.startswith("/"):
        raise ValueError("must stay inside the notes folder")
    return value


def _small(value: int) -> int:
    if value > 100:
        raise ValueError("at most 100 per call")
    return value


def _strip_then_check(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("root", "admin"):
        raise ValueError("reserved user")
    return value


SafePath = Annotated[str, AfterValidator(_no_parent)]


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Transfer(BaseModel):
    to: str
    amount: int

    @field_validator("to")
    @classmethod
    def _known(cls, value: str) -> str:
        if not value.endswith("@example.com"):
            raise ValueError("only example.com accounts")
        return value

    @model_validator(mode="after")
    def _limit(self) -> Transfer:
        if self.amount > 1000:
            raise ValueError("over the limit")
        return self


@connector(risk="read")
async def read_note(path: SafePath) -> str:
    """Read a note by its path. Use when testing hints."""
    RAN.append(("read_note", path))
    return path


@connector(risk="read")
async def read_note_ctx(path: SafePath, ctx: CallContext) -> str:
    """Read a note by its path, with the context. Use when testing hints."""
    RAN.append(("read_note_ctx", path))
    return path


@connector(risk="read")
def read_note_sync(path: SafePath) -> str:
    """Read a note by its path, in a thread. Use when testing hints."""
    RAN.append(("read_note_sync", path))
    return path


@connector(risk="read")
async def read_note_stream(path: SafePath):  # type: ignore[no-untyped-def]
    """Read a note by its path, streamed. Use when testing hints."""
    RAN.append(("read_note_stream", path))
    yield path


@connector(risk="read")
async def give(amount: Annotated[int, AfterValidator(_small)]) -> int:
    """Give an amount. Use when testing hints."""
    RAN.append(("give", amount))
    return amount


@connector(risk="read")
async def login(user: Annotated[str, BeforeValidator(_strip_then_check)]) -> str:
    """Log in as a user. Use when testing hints."""
    RAN.append(("login", user))
    return user


@connector(risk="read")
async def pay(transfer: Transfer) -> str:
    """Pay someone. Use when testing hints."""
    RAN.append(("pay", transfer))
    return f"{type(transfer).__name__}:{transfer.to}"  # an attribute: a dict has none


@connector(risk="read")
async def paint(color: Color) -> str:
    """Paint in a color. Use when testing hints."""
    RAN.append(("paint", color))
    return color.name  # an Enum member has a name, its value string has not


ATTACKS: list[tuple[str, dict[str, Any]]] = [
    *[(tool, {"path": p}) for tool in ("read_note", "read_note_ctx", "read_note_sync", "read_note_stream")
      for p in ("../secret", "a/../../etc/passwd", "/etc/passwd", "notes/../..")],
    ("give", {"amount": 101}),
    ("give", {"amount": 10**12}),
    ("login", {"user": "root"}),
    ("login", {"user": " ADMIN "}),
    ("pay", {"transfer": {"to": "mallory@evil.test", "amount": 5}}),
    ("pay", {"transfer": {"to": "bob@example.com", "amount": 5000}}),
    ("pay", {"transfer": {"to": "bob@example.com\u200b.evil.test", "amount": 5}}),
]


def _reach(tmp_path):
    reach = make_reach(data_dir=tmp_path)
    for fn in (read_note, read_note_ctx, read_note_sync, read_note_stream, give, login, pay, paint):
        reach.register(fn)
    return reach


@pytest.mark.parametrize("as_text", [False, True], ids=["dict", "json"])
@pytest.mark.parametrize(("tool", "args"), ATTACKS, ids=[f"{t}-{json.dumps(a)}" for t, a in ATTACKS])
def test_a_validator_in_the_hints_refuses_before_the_function_runs(tmp_path, tool, args, as_text):
    reach = _reach(tmp_path)
    RAN.clear()
    result = asyncio.run(reach.invoke(tool, json.dumps(args) if as_text else args))
    assert not result.ok and result.error.code == "invalid_arguments", result
    assert RAN == []  # the function never saw the value its own hints refuse


GOOD: list[tuple[str, dict[str, Any], Any]] = [
    ("read_note", {"path": "todo/today.md"}, "todo/today.md"),
    ("read_note_ctx", {"path": "a..b"}, "a..b"),
    ("read_note_sync", {"path": "x"}, "x"),
    ("read_note_stream", {"path": "y"}, ["y"]),
    ("give", {"amount": 100}, 100),
    ("login", {"user": "ann"}, "ann"),
    ("pay", {"transfer": {"to": "bob@example.com", "amount": 1000}}, "Transfer:bob@example.com"),
    ("paint", {"color": "green"}, "GREEN"),
]


@pytest.mark.parametrize(("tool", "args", "content"), GOOD, ids=[g[0] for g in GOOD])
def test_positive_control_what_the_hints_allow_runs_with_the_hinted_types(tmp_path, tool, args, content):
    reach = _reach(tmp_path)
    RAN.clear()
    result = asyncio.run(reach.invoke(tool, args))
    assert result.ok, result
    assert result.content == content
    assert len(RAN) == 1


# each hint with the type the function receives, and a JSON value that converts to it
TYPED: list[tuple[Any, Any, type]] = [
    (dt.date, "2024-05-01", dt.date),
    (dt.datetime, "2024-05-01T09:30:00Z", dt.datetime),
    (uuid.UUID, "123e4567-e89b-12d3-a456-426614174000", uuid.UUID),
    (Decimal, "12.50", Decimal),
    (PurePosixPath, "a/b.txt", PurePosixPath),
    (Color, "red", Color),
    (tuple[int, int], [1, 2], tuple),
    (frozenset[str], ["a", "b"], frozenset),
    (Transfer, {"to": "bob@example.com", "amount": 1}, Transfer),
    (dt.date | None, "2024-05-01", dt.date),
    (list[dt.date], ["2024-05-01"], list),
]


@pytest.mark.parametrize(("hint", "value", "kind"), TYPED, ids=[repr(t[0]) for t in TYPED])
def test_the_function_receives_the_type_it_declares(tmp_path, hint, value, kind):
    seen: list[Any] = []

    async def typed(value):  # type: ignore[no-untyped-def]
        seen.append(value)
        return "ok"

    typed.__annotations__ = {"value": hint, "return": str}
    typed.__doc__ = "Take one typed value. Use when testing hints."
    reach = make_reach(data_dir=tmp_path)
    reach.register(connector(risk="read")(typed))
    result = asyncio.run(reach.invoke("typed", {"value": value}))
    assert result.ok, result
    assert isinstance(seen[0], kind), seen  # a str, list or dict before the fix
    if kind is list:
        assert all(isinstance(v, dt.date) for v in seen[0])


def test_an_aliased_parameter_runs_under_its_own_name(tmp_path):
    """The schema names the alias (``from``, a Python keyword), the function its parameter:
    the raw JSON key crashed the call with an internal error."""
    seen: list[str] = []

    @connector(risk="read")
    async def mail(sender: Annotated[str, Field(alias="from")]) -> str:
        """Send from an address. Use when testing hints."""
        seen.append(sender)
        return sender

    reach = make_reach(data_dir=tmp_path)
    reach.register(mail)
    assert list(next(t for t in reach.all_tools() if t.name == "mail").schema["properties"]) == ["from"]
    result = asyncio.run(reach.invoke("mail", {"from": "ann@example.com"}))
    assert result.ok and result.content == "ann@example.com", result
    assert seen == ["ann@example.com"]


def test_undeclared_fields_still_reach_a_function_with_kwargs(tmp_path):
    seen: list[dict[str, Any]] = []

    @connector(risk="read")
    async def flexible(path: SafePath, **rest: Any) -> str:
        """Take a path and anything else. Use when testing hints."""
        seen.append({"path": path, **rest})
        return "ok"

    reach = make_reach(data_dir=tmp_path)
    reach.register(flexible)
    assert asyncio.run(reach.invoke("flexible", {"path": "x", "mode": "fast"})).ok
    assert seen == [{"path": "x", "mode": "fast"}]
    refused = asyncio.run(reach.invoke("flexible", {"path": "../x", "mode": "fast"}))
    assert not refused.ok and refused.error.code == "invalid_arguments"
    assert len(seen) == 1


# hints JSON gives as they are: no pydantic model on the call path (the plain, fast route)
PLAIN_HINTS: list[Any] = [
    str, int, float, bool, Any, list, dict, list[int], dict[str, float], str | None, int | str,
    Literal["a", "b"], list[dict[str, Any]], Annotated[int, Field(ge=0, le=9)],
    Annotated[str, Field(min_length=1, max_length=5, description="a word")],
]


@pytest.mark.parametrize("hint", PLAIN_HINTS, ids=repr)
def test_positive_control_plain_hints_take_no_model(tmp_path, hint):
    async def plain(value):  # type: ignore[no-untyped-def]
        return "ok"

    plain.__annotations__ = {"value": hint, "return": str}
    plain.__doc__ = "Take one plain value. Use when testing hints."
    reach = make_reach(data_dir=tmp_path)
    reach.register(connector(risk="read")(plain))
    tool = next(t for t in reach.all_tools() if t.name == "plain")
    assert tool.args_model is None
