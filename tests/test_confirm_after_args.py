"""A person is never asked to approve a call that the tool's own ``Args`` would refuse.

A connector's ``Args`` model (validators beyond what JSON Schema says: a date in the
future, an account that matches a pattern, a cross-field rule) used to run after the
confirmation step: a person read and approved a refund of ``-500`` or a transfer to
the same account, and only then did the call fail as ``invalid_arguments``. An
approval is a person's attention and, under ``once``, a remembered decision; it is
spent on calls that can run. Now ``Args`` is checked before anyone is asked.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import pytest
from pydantic import AfterValidator, BaseModel, model_validator

from reach_core import Connector, connector, hookimpl
from reach_core.testing import make_reach

RAN: list[Any] = []


class Person:
    """A confirmer that counts the people it asks, and approves."""

    REACH_PLUGIN_NAME = "test-person"

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Any, ctx: Any) -> None:
        if ctx.needs_confirmation and not ctx.approved:
            self.asked.append(dict(call.arguments))
            ctx.approved = True


def _positive(v: int) -> int:
    if v <= 0:
        raise ValueError("must be above zero")
    return v


class Transfer(Connector):
    name = "transfer"
    description = "Move money between two accounts."
    risk = "dangerous"

    class Args(BaseModel):
        source: str
        target: str
        cents: Annotated[int, AfterValidator(_positive)]

        @model_validator(mode="after")
        def _different(self) -> Transfer.Args:
            if self.source.strip().lower() == self.target.strip().lower():
                raise ValueError("source and target must differ")
            return self

    async def execute(self, params: Any) -> str:
        RAN.append(params)
        return "moved"


def _future(day: dt.date) -> dt.date:
    if day <= dt.date(2000, 1, 1):
        raise ValueError("must be after 2000-01-01")
    return day


@connector(risk="dangerous", name="schedule_wipe")
def schedule_wipe(day: Annotated[dt.date, AfterValidator(_future)], disk: str) -> str:
    """Schedule a disk wipe."""
    RAN.append((day, disk))
    return "scheduled"


REFUSED = [
    ("transfer", {"source": "a", "target": "b", "cents": 0}),
    ("transfer", {"source": "a", "target": "b", "cents": -500}),
    ("transfer", {"source": "acct-1", "target": "acct-1", "cents": 10}),
    ("transfer", {"source": "ACCT-1", "target": " acct-1 ", "cents": 10}),
    ("schedule_wipe", {"day": "1999-12-31", "disk": "sda"}),
    ("schedule_wipe", {"day": "not a date", "disk": "sda"}),
    ("schedule_wipe", {"day": "2000-02-30", "disk": "sda"}),
]
ACCEPTED = [
    ("transfer", {"source": "a", "target": "b", "cents": 1}),
    ("schedule_wipe", {"day": "2031-05-01", "disk": "sda"}),
]


def _reach(tmp_path: Any, person: Person, agents: dict[str, Any] | None = None):
    reach = make_reach(person, config={"agents": agents or {}}, data_dir=tmp_path)
    reach.register(Transfer())
    reach.register(schedule_wipe)
    return reach


@pytest.mark.parametrize("agents", [None, {"default": {"approval": {"*": "always"}}},
                                    {"default": {"auto_tier": "read", "approval": {"risk:dangerous": "once"}}}],
                         ids=["tier", "always", "once"])
@pytest.mark.parametrize(("tool", "args"), REFUSED)
async def test_no_person_is_asked_about_a_call_its_args_refuse(tmp_path, tool, args, agents):
    person = Person()
    reach = _reach(tmp_path, person, agents)
    RAN.clear()
    res = await reach.invoke(tool, args)
    assert not res.ok and res.error.code == "invalid_arguments", res
    assert person.asked == [] and RAN == []


@pytest.mark.parametrize(("tool", "args"), ACCEPTED)
async def test_positive_control_a_valid_call_is_asked_once_and_runs(tmp_path, tool, args):
    person = Person()
    reach = _reach(tmp_path, person)
    RAN.clear()
    res = await reach.invoke(tool, args)
    assert res.ok, res
    assert person.asked == [args] and len(RAN) == 1


async def test_positive_control_without_a_confirmer_a_refused_call_says_its_arguments(tmp_path):
    reach = make_reach(data_dir=tmp_path)
    reach.register(Transfer())
    res = await reach.invoke("transfer", {"source": "a", "target": "a", "cents": 5})
    assert not res.ok and res.error.code == "invalid_arguments" and "must differ" in res.error.message


class Counted(Connector):
    """A dangerous tool whose ``Args`` count how often they are validated."""

    name = "wire"
    description = "Wire money to an account."
    risk = "dangerous"
    validations = 0

    class Args(BaseModel):
        target: str
        cents: int

        @model_validator(mode="after")
        def _count(self) -> Counted.Args:
            Counted.validations += 1
            if self.cents <= 0:
                raise ValueError("cents must be above zero")
            return self

    async def execute(self, params: Any) -> str:
        RAN.append(params)
        return "wired"


@pytest.mark.parametrize("agents", [None, {"default": {"approval": {"*": "always"}}},
                                    {"default": {"auto_tier": "read", "approval": {"risk:dangerous": "once"}}}],
                         ids=["tier", "always", "once"])
@pytest.mark.parametrize("how", ["bare", "run", "key", "run+key"])
async def test_a_call_a_person_approves_is_validated_once(tmp_path, agents, how):
    """Its ``Args`` are checked before the person is asked and that result is what runs:
    not checked a second time (a validator with a cost or a side effect ran twice)."""
    person = Person()
    reach = make_reach(person, config={"agents": agents or {}}, data_dir=tmp_path)
    reach.register(Counted())
    RAN.clear()
    Counted.validations = 0
    kwargs: dict[str, Any] = {"run_id": "r-1"} if "run" in how else {}
    if "key" in how:
        kwargs["idempotency_key"] = "k-1"
    res = await reach.invoke({"id": "c1", "name": "wire", "arguments": {"target": "acct-9", "cents": 5}}, **kwargs)
    assert res.ok, res
    assert person.asked == [{"target": "acct-9", "cents": 5}]
    assert Counted.validations == 1
    assert len(RAN) == 1 and isinstance(RAN[0], Counted.Args) and RAN[0].cents == 5


class Rewriter:
    """A hook that changes the arguments in place after they were checked (a plugin that
    normalises an account, say): what runs is what the arguments are then, checked again."""

    REACH_PLUGIN_NAME = "test-rewriter"

    def __init__(self, change: Any) -> None:
        self.change = change

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Any, ctx: Any) -> None:
        self.change(call.arguments)


REWRITES = [
    (lambda a: a.update(target="acct-1"), {"target": "acct-1", "cents": 5}),
    (lambda a: a.update(cents=7), {"target": "acct-9", "cents": 7}),
    (lambda a: a.update(cents="8"), {"target": "acct-9", "cents": 8}),
    (lambda a: a.update(cents=0), None),  # now refused by Args
    (lambda a: a.pop("cents"), None),
    (lambda a: a.update(target=["acct-1"]), None),
]


@pytest.mark.parametrize(("change", "runs"), REWRITES, ids=[str(i) for i in range(len(REWRITES))])
async def test_arguments_a_hook_changed_after_the_check_are_checked_again(tmp_path, change, runs):
    person = Person()
    reach = make_reach(person, Rewriter(change), data_dir=tmp_path)
    reach.register(Counted())
    RAN.clear()
    res = await reach.invoke("wire", {"target": "acct-9", "cents": 5})
    if runs is None:
        assert not res.ok and res.error.code == "invalid_arguments" and RAN == []
    else:
        assert res.ok and [p.model_dump() for p in RAN] == [runs]
