"""Red team: a call that begins after its run's deadline does not run at all.

A run's deadline caps each call's own. A call that got its turn only after that
deadline had passed (queued behind the turn's other calls, or given a deadline
already past) was still started: the connector ran its first step, where a send or
a write often happens, and the deadline then cut it off as ``outcome_unknown`` ("the
action may or may not have happened"). The guard-rail rule is that a call that
never started is a plain ``timeout`` that did not run; now it is, for every kind of
connector, and it gives back its daily budget and its idempotency key.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reach_core import CallContext, Connector, connector
from reach_core.testing import make_reach

SENT: list[str] = []


@connector(risk="write", name="send_direct")
async def _send_direct(to: str) -> str:
    """Send a message. Use when testing deadlines."""
    SENT.append(to)  # the side effect, before the first wait
    await asyncio.sleep(0)
    return "sent"


@connector(risk="write", name="send_ctx")
async def _send_ctx(to: str, ctx: CallContext) -> str:
    """Send a message, with the context. Use when testing deadlines."""
    SENT.append(to)
    await asyncio.sleep(0)
    return "sent"


@connector(risk="write", name="send_sync")
def _send_sync(to: str) -> str:
    """Send a message from a thread. Use when testing deadlines."""
    SENT.append(to)
    return "sent"


@connector(risk="write", name="send_stream")
async def _send_stream(to: str):  # type: ignore[no-untyped-def]
    """Send a message, streamed. Use when testing deadlines."""
    SENT.append(to)
    yield "sent"


@connector(risk="write", name="send_capped", max_concurrency=1)
async def _send_capped(to: str) -> str:
    """Send a message, one at a time. Use when testing deadlines."""
    SENT.append(to)
    await asyncio.sleep(0)
    return "sent"


class SendClass(Connector):
    name = "send_class"
    description = "Send a message. Use when testing deadlines."
    risk = "write"
    input_schema = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}

    async def execute(self, params: Any, ctx: Any) -> str:
        SENT.append(params["to"])
        await asyncio.sleep(0)
        return "sent"


class SendSyncClass(SendClass):
    name = "send_sync_class"

    def execute(self, params: Any, ctx: Any) -> str:  # type: ignore[override]
        SENT.append(params["to"])
        return "sent"


class Read(Connector):
    name = "read_slowly"
    description = "Read something slowly. Use when testing deadlines."
    risk = "read"
    max_retries = 0

    async def execute(self, params: Any) -> str:
        await asyncio.Event().wait()  # until the deadline cuts it off
        return "never"


SENDERS = ["send_direct", "send_ctx", "send_sync", "send_stream", "send_capped", "send_class", "send_sync_class"]


def _reach(tmp_path, config: dict[str, Any] | None = None):
    reach = make_reach(config=config, data_dir=tmp_path)
    for tool in (_send_direct, _send_ctx, _send_sync, _send_stream, _send_capped, SendClass(), SendSyncClass(),
                 Read()):
        reach.register(tool)
    return reach


def _did_not_run(result: Any) -> None:
    assert not result.ok and result.error.code == "timeout", result
    assert "did not run" in result.error.message
    assert SENT == []


@pytest.mark.parametrize("past", [0.0, 0.001, 1.0, 3600.0])
@pytest.mark.parametrize("tool", SENDERS)
async def test_a_deadline_already_past_runs_nothing(tmp_path, tool, past):
    reach = _reach(tmp_path)
    SENT.clear()
    loop = asyncio.get_running_loop()
    _did_not_run(await reach.invoke(tool, {"to": "ann"}, run_id="r1", deadline=loop.time() - past))


@pytest.mark.parametrize("tool", SENDERS)
async def test_a_call_queued_behind_the_deadline_runs_nothing(tmp_path, tool):
    """One call at a time: the send gets its turn only when the slow read is cut off by the deadline."""
    reach = _reach(tmp_path)
    SENT.clear()
    deadline = asyncio.get_running_loop().time() + 0.05
    slow, send = await reach.invoke_many(
        [{"id": "c1", "name": "read_slowly", "arguments": {}}, {"id": "c2", "name": tool, "arguments": {"to": "ann"}}],
        run_id="r1", concurrency=1, deadline=deadline)
    assert slow.error.code == "timeout"
    _did_not_run(send)


async def test_the_call_that_did_not_run_gives_back_its_budget_and_its_key(tmp_path):
    reach = _reach(tmp_path, {"connectors": {"send_class": {"daily_budget": 1}}})
    SENT.clear()
    loop = asyncio.get_running_loop()
    _did_not_run(await reach.invoke("send_class", {"to": "ann"}, idempotency_key="k-1", deadline=loop.time() - 1))
    done = await reach.invoke("send_class", {"to": "ann"}, idempotency_key="k-1")  # budget of 1, same key
    assert done.ok and done.content == "sent" and SENT == ["ann"]


@pytest.mark.parametrize("tool", SENDERS)
async def test_positive_control_a_deadline_still_ahead_runs(tmp_path, tool):
    reach = _reach(tmp_path)
    SENT.clear()
    result = await reach.invoke(tool, {"to": "ann"}, run_id="r1", deadline=asyncio.get_running_loop().time() + 60)
    assert result.ok and SENT == ["ann"]
