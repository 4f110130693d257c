"""reach-confirm is a guest in its host's process: each Reach's queue lives and dies with it.

The queues used to sit in a module-level dict keyed by ``id(reach)`` that held each
Reach strongly: a host that makes a Reach per request or per test (a web worker, a
pytest suite) kept every one of them, with their stores, for the life of the process.
"""

from __future__ import annotations

import asyncio
import gc
import weakref

import reach_confirm.plugin as confirm_plugin
from reach_confirm.plugin import queue_for

from reach_core import Connector
from reach_core.testing import make_reach


class Wipe(Connector):
    name = "wipe"
    description = "Wipe a disk."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {"disk": {"type": "string"}}, "required": ["disk"]}

    async def execute(self, params):
        return "wiped"


async def _one_reach_asks(tmp_path, i: int) -> weakref.ref:
    reach = make_reach(confirm_plugin, data_dir=tmp_path / str(i))
    reach.register(Wipe())
    async with reach:
        res = await reach.invoke("wipe", {"disk": f"sd{i}"})
        assert res.error is not None and res.error.code == "needs_confirmation"
        assert [c.summary for c in await queue_for(reach).list()]
    return weakref.ref(reach)


async def test_a_dropped_reach_and_its_queue_are_freed(tmp_path):
    refs = [await _one_reach_asks(tmp_path, i) for i in range(5)]
    await asyncio.sleep(0)
    gc.collect()
    assert [r() for r in refs] == [None] * 5
    assert len(confirm_plugin._QUEUES) == 0


async def test_positive_control_a_live_reach_keeps_one_queue(tmp_path):
    reach = make_reach(confirm_plugin, data_dir=tmp_path)
    reach.register(Wipe())
    async with reach:
        first = queue_for(reach)
        gc.collect()
        assert queue_for(reach) is first and first.reach is reach
        other = make_reach(confirm_plugin, data_dir=tmp_path / "other")
        assert queue_for(other) is not first
