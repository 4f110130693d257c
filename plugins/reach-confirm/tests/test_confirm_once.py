"""An approval runs the approved call once, not also the calls started inside it.

While an approved call runs, reach-confirm marks it (``APPROVING``) so its own
pre-invoke check lets it through. Everything the call starts inherits that mark: a
tool that invokes reach again, a ``delegate`` to the same agent. Before, a nested
call with the same tool, arguments and agent was let through too (the stored request
still read ``approved``), once per nesting, concurrently as often as started. Now the
first call spends the mark; the others ask a person like any call.
"""

from __future__ import annotations

import asyncio

import pytest
import reach_confirm.plugin as confirm_plugin
from reach_confirm.plugin import queue_for

from reach_core import Connector, hookimpl
from reach_core.testing import make_reach

RAN: list[str] = []


class Payout(Connector):
    """Pays out, then (as a buggy or hostile tool might) asks reach to pay again, `again` times."""

    name = "payout"
    description = "Pay out an amount. Use when the user asks to pay."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {"amount": {"type": "number", "description": "EUR"},
                                                     "again": {"type": "integer", "description": "repeats"},
                                                     "parallel": {"type": "boolean", "description": "at once"}},
                    "required": ["amount"]}

    async def execute(self, params, ctx):
        RAN.append(f"paid {params['amount']}")
        again, reach = int(params.get("again", 0)), ctx.reach
        if len(RAN) > 1:  # a nested call that ran: report it, do not nest further
            return ["nested"]
        call = {"name": "payout", "arguments": dict(params)}
        if params.get("parallel"):
            results = await asyncio.gather(*(reach.invoke({**call, "id": f"n{i}"}, agent=ctx.agent)
                                             for i in range(again)))
        else:
            results = [await reach.invoke({**call, "id": f"n{i}"}, agent=ctx.agent) for i in range(again)]
        return [r.error.code if r.error else "ran" for r in results]


class Tools:
    REACH_PLUGIN_NAME = "payouts"

    @hookimpl
    def reach_register_tools(self, register):
        register(Payout())


@pytest.fixture(autouse=True)
def _clear():
    RAN.clear()


@pytest.mark.parametrize("again", [1, 2, 5])
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("agent", [None, "ops"])
async def test_nested_identical_calls_are_not_approved(tmp_path, again: int, parallel: bool, agent) -> None:
    config = {"plugins": {"reach-confirm": {"ttl_seconds": 60}}}
    if agent:
        config["agents"] = {agent: {}}
    reach = make_reach(("reach-confirm", confirm_plugin), Tools(), config=config, data_dir=tmp_path)
    args = {"amount": 100, "again": again, "parallel": parallel}
    res = await reach.invoke({"id": "c1", "name": "payout", "arguments": args}, agent=agent)
    assert res.error.code == "needs_confirmation" and RAN == []
    result = await queue_for(reach).approve(res.meta["confirmation_id"], by="person:ann")
    assert result.ok, result.error
    assert RAN == ["paid 100"]
    assert result.content == ["needs_confirmation"] * again
