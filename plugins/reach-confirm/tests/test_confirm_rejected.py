"""A call a person rejected, asked again under a new call id (or run, or key order), is
denied for ``ttl_seconds``: not put to the person again and again until they give in.
A different call, another agent's, or the same call after the ttl, is asked as usual."""

from __future__ import annotations

import asyncio
import json

import pytest
import reach_confirm.plugin as confirm_plugin
from reach_confirm.plugin import queue_for
from test_confirm_summary import RAN, Tools

from reach_core import hookimpl
from reach_core.testing import make_reach

NOTES: list[dict] = []


class Watch:
    REACH_PLUGIN_NAME = "watch"

    @hookimpl
    def reach_confirmation(self, event, ctx, reach):
        NOTES.append(dict(event))


def _reach(tmp_path, ttl=60):
    RAN.clear()
    NOTES.clear()
    return make_reach(("reach-confirm", confirm_plugin), Tools(), Watch(),
                      config={"plugins": {"reach-confirm": {"ttl_seconds": ttl}},
                              "agents": {"a": {"approval": {"wire": "always"}}, "b": {"approval": {"wire": "always"}}}},
                      data_dir=tmp_path)


ARGS = {"to": "mallory", "amount": 9000}


async def _ask(reach, call_id="c1", args=None, agent=None, run_id=None):
    return await reach.invoke({"id": call_id, "name": "wire", "arguments": json.dumps(args or ARGS)},
                              agent=agent, run_id=run_id)


async def _reject(reach, agent=None, run_id=None):
    first = await _ask(reach, agent=agent, run_id=run_id)
    assert first.error.code == "needs_confirmation"
    await queue_for(reach).reject(first.meta["confirmation_id"], by="person:ann", reason="not this one")


RETRIES = [
    dict(call_id="c2"), dict(call_id="c1"), dict(call_id="call_999"), dict(call_id="c2", run_id="run-2"),
    dict(call_id="c3", run_id="run-1"), dict(call_id="c4", args={"amount": 9000, "to": "mallory"}),
    dict(call_id="c5", args={"amount": 9000.0, "to": "mallory"}),
]


@pytest.mark.parametrize("retry", RETRIES, ids=repr)
@pytest.mark.parametrize("agent", [None, "a"])
async def test_rejected_call_asked_again_is_denied(tmp_path, retry, agent):
    reach = _reach(tmp_path)
    await _reject(reach, agent=agent, run_id="run-1")
    asked = len([n for n in NOTES if n["kind"] == "requested"])
    for _ in range(3):  # asking again and again changes nothing
        res = await _ask(reach, agent=agent, **retry)
        assert res.error.code == "denied", res.error
        assert "rejected" in res.error.message and "not this one" in res.error.message
    assert await queue_for(reach).list() == []  # nobody is asked again
    assert len([n for n in NOTES if n["kind"] == "requested"]) == asked
    assert RAN == []


@pytest.mark.parametrize("other", [dict(args={"to": "mallory", "amount": 10}), dict(args={"to": "bob", "amount": 9000}),
                                   dict(agent="b")], ids=repr)
async def test_positive_control_a_different_call_is_asked(tmp_path, other):
    reach = _reach(tmp_path)
    await _reject(reach, agent="a")
    res = await _ask(reach, call_id="c2", **{"agent": "a", **other})
    assert res.error.code == "needs_confirmation"


async def test_positive_control_asked_again_after_the_ttl(tmp_path):
    reach = _reach(tmp_path, ttl=0.5)
    await _reject(reach)
    assert (await _ask(reach, call_id="c2")).error.code == "denied"
    await asyncio.sleep(0.6)
    assert (await _ask(reach, call_id="c3")).error.code == "needs_confirmation"


async def test_positive_control_approval_still_runs(tmp_path):
    reach = _reach(tmp_path)
    first = await _ask(reach)
    result = await queue_for(reach).approve(first.meta["confirmation_id"], by="person:ann")
    assert result.ok and RAN == [ARGS]
