"""Red team: a tier raised at run time is the tier the guard rails apply.

``reach.refresh()`` is the documented way to apply a changed tool risk (reach-mcp
calls it when a server marks a tool destructive while reach runs). It reset the
policy's decisions, but the guard rails kept the plan they had made for the tool
while it was a read: a call of the tool, now a write, was answered from the run's
read cache or given an earlier result back instead of running or being refused, and
a call with an idempotency key ran again instead of being answered from the ledger.
Now the plans are made again after ``refresh`` (``Runtime.invalidate``).
"""

from __future__ import annotations

from typing import Any

import pytest

from reach_core import Connector
from reach_core.testing import make_reach

RAN: list[dict[str, Any]] = []


class Archive(Connector):
    name = "archive_mail"
    description = "Archive mail in a folder. Use when asked to tidy up."
    risk = "read"  # what the server said at start
    input_schema = {"type": "object", "properties": {"folder": {"type": "string"}}}

    async def execute(self, params: Any) -> str:
        RAN.append(params)
        return f"archived {len(RAN)}"


RAISED = ["write", "dangerous"]


def _reach(tmp_path, **reach_cfg: Any):
    config = {"agents": {"default": {"auto_tier": "dangerous"}}, "reach": reach_cfg}  # nobody to ask here
    reach = make_reach(config=config, data_dir=tmp_path)
    reach.register(Archive())
    return reach


def _raise(reach: Any, risk: str) -> None:
    """What reach-mcp does when a server now marks the tool destructive (link._raise_tier)."""
    tool = reach.tool("archive_mail")
    tool.risk = risk
    tool.idempotent = False
    reach.refresh()


@pytest.mark.parametrize("risk", RAISED)
async def test_a_raised_tool_is_not_answered_from_the_read_cache(tmp_path, risk):
    reach = _reach(tmp_path, read_cache=True)
    await reach.invoke("archive_mail", {"folder": "old"}, run_id="r1")
    _raise(reach, risk)
    RAN.clear()
    result = await reach.invoke("archive_mail", {"folder": "old"}, run_id="r1")
    assert result.ok and "cached" not in result.meta, result
    assert RAN == [{"folder": "old"}]  # it ran: a write is never served from the cache


@pytest.mark.parametrize("risk", RAISED)
async def test_a_raised_tool_repeated_is_refused_not_replayed(tmp_path, risk):
    reach = _reach(tmp_path)
    for _ in range(3):
        await reach.invoke("archive_mail", {"folder": "old"}, run_id="r1")
    _raise(reach, risk)
    RAN.clear()
    result = await reach.invoke("archive_mail", {"folder": "old"}, run_id="r1")
    assert result.error is not None and result.error.code == "denied", result  # a write is refused, not replayed
    assert RAN == []


@pytest.mark.parametrize("risk", RAISED)
async def test_a_raised_tool_goes_through_the_ledger(tmp_path, risk):
    reach = _reach(tmp_path)
    await reach.invoke("archive_mail", {"folder": "warm-up"})
    _raise(reach, risk)
    RAN.clear()
    first = await reach.invoke("archive_mail", {"folder": "old"}, idempotency_key="tidy-1")
    again = await reach.invoke("archive_mail", {"folder": "old"}, idempotency_key="tidy-1")
    assert first.ok and again.ok and again.meta.get("receipt") is True, again
    assert RAN == [{"folder": "old"}]  # once


async def test_positive_control_a_read_keeps_its_cache(tmp_path):
    reach = _reach(tmp_path, read_cache=True)
    await reach.invoke("archive_mail", {"folder": "old"}, run_id="r1")
    reach.refresh()
    RAN.clear()
    assert (await reach.invoke("archive_mail", {"folder": "old"}, run_id="r1")).meta.get("cached")
    assert RAN == []
