"""A host framework's approval (``approved_call``) approves one call, once.

The mark ``(tool, call id)`` lives in a context variable for the duration of the
approved ``reach.invoke``, and everything started inside inherits it: a tool that
calls reach again, a ``delegate`` child run, whose call ids a model writes. Before,
every check inside the block answered "approved", so a nested or repeated call
spelt like the approved one ran without the person having seen it. Now the first
check spends the mark.
"""

from __future__ import annotations

import asyncio

import pytest

from reach_core import connector
from reach_core.approvals import approved_call, host_approval
from reach_core.testing import make_reach


def _reach(tmp_path, runs: list[str]):
    reach = make_reach(data_dir=tmp_path)

    @connector(risk="dangerous")
    def wipe(target: str) -> str:
        """Wipe a target."""
        runs.append(target)
        return "wiped"

    @connector(risk="dangerous")
    async def wipe_twice(target: str) -> str:
        """Approved once, then asks reach to run `wipe` under the approved call's own id."""
        runs.append(f"outer:{target}")
        nested = await reach.invoke({"id": "c1", "name": "wipe", "arguments": {"target": "everything"}})
        return "nested ran" if nested.ok else nested.error.code

    reach.register(wipe)
    reach.register(wipe_twice)
    return reach


async def test_the_approved_call_runs(tmp_path) -> None:
    runs: list[str] = []
    reach = _reach(tmp_path, runs)
    with approved_call("wipe", "c1", by="a test host"):
        r = await reach.invoke({"id": "c1", "name": "wipe", "arguments": {"target": "tmp"}})
    assert r.ok and runs == ["tmp"]


@pytest.mark.parametrize("times", [2, 3, 10])
async def test_one_approval_runs_one_call(tmp_path, times: int) -> None:
    runs: list[str] = []
    reach = _reach(tmp_path, runs)
    with approved_call("wipe", "c1", by="a test host"):
        results = [await reach.invoke({"id": "c1", "name": "wipe", "arguments": {"target": f"t{i}"}})
                   for i in range(times)]
    assert [r.ok for r in results] == [True] + [False] * (times - 1)
    assert {r.error.code for r in results[1:]} == {"denied"}
    assert runs == ["t0"]


@pytest.mark.parametrize("times", [2, 5, 20])
async def test_concurrent_calls_on_one_approval(tmp_path, times: int) -> None:
    runs: list[str] = []
    reach = _reach(tmp_path, runs)
    with approved_call("wipe", "c1", by="a test host"):
        results = await asyncio.gather(*(
            reach.invoke({"id": "c1", "name": "wipe", "arguments": {"target": f"t{i}"}}) for i in range(times)))
    assert sum(r.ok for r in results) == 1 and len(runs) == 1


async def test_a_nested_call_spelt_like_the_approved_one_is_not_approved(tmp_path) -> None:
    runs: list[str] = []
    reach = _reach(tmp_path, runs)
    with approved_call("wipe_twice", "c1", by="a test host"):
        r = await reach.invoke({"id": "c1", "name": "wipe_twice", "arguments": {"target": "tmp"}})
    assert r.ok and r.content == "denied"
    assert runs == ["outer:tmp"]


async def test_a_nested_call_in_a_child_task_is_not_approved(tmp_path) -> None:
    runs: list[str] = []
    reach = _reach(tmp_path, runs)
    with approved_call("wipe", "c1", by="a test host"):
        first = await reach.invoke({"id": "c1", "name": "wipe", "arguments": {"target": "a"}})
        child = await asyncio.create_task(
            reach.invoke({"id": "c1", "name": "wipe", "arguments": {"target": "b"}}))  # copies the context
    assert first.ok and not child.ok and runs == ["a"]


@pytest.mark.parametrize(("tool", "call_id"), [("wipe", "c2"), ("wipe", "C1"), ("wipe", "c1 "), ("wipe", ""),
                                                ("wipe_twice", "c1"), ("Wipe", "c1"), ("wipe\u200b", "c1")])
def test_other_calls_are_never_approved(tool: str, call_id: str) -> None:
    with approved_call("wipe", "c1", by="a test host"):
        assert host_approval(tool, call_id) is None
        assert host_approval("wipe", "c1") == "a test host"
        assert host_approval("wipe", "c1") is None


def test_outside_the_block_nothing_is_approved() -> None:
    with approved_call("wipe", "c1", by="a test host"):
        pass
    assert host_approval("wipe", "c1") is None
