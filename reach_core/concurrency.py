"""One model turn's calls, run together under a per-turn limit.

The per-turn limit (default 5) bounds fan-out of one turn; weights let a heavy
tool take several slots; ``sequential`` tools run alone, in the model's order.
Process-wide caps per connector and per plugin are the guard rails' job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from .calls import ToolCall, to_call
from .guard.concurrency import WeightedLimit
from .pipeline import invoke
from .result import ToolResult

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["run_turn"]


async def _workers(rt: Runtime, calls: list[ToolCall], kw: dict[str, Any], n: int) -> list[ToolResult]:
    """Unweighted calls: ``n`` workers take the calls in order, each starting its next
    call the moment its last one ends (no limiter, no hand-over through the event loop,
    which costs a loop iteration per call on a fan-out)."""
    results: list[ToolResult | None] = [None] * len(calls)
    todo = iter(enumerate(calls))

    async def worker() -> None:
        for i, call in todo:
            results[i] = await invoke(rt, call, **kw)

    await asyncio.gather(*(worker() for _ in range(n)))
    return [r for r in results if r is not None]


async def run_turn(rt: Runtime, calls: Sequence[Any], *, agent: str | None, run_id: str | None,
                   query: str | None, parent_run_id: str | None, limit: int,
                   allowed: Collection[str] | None = None, deadline: float | None = None) -> list[ToolResult]:
    norm: list[ToolCall] = []
    for c in calls:
        try:
            norm.append(to_call(c))
        except TypeError:
            norm.append(ToolCall(name=str(c)))
    kw: dict[str, Any] = {"agent": agent, "run_id": run_id, "query": query, "parent_run_id": parent_run_id,
                          "allowed": allowed, "deadline": deadline}
    if len(norm) == 1:
        return [await invoke(rt, norm[0], **kw)]
    tools = [rt.tools.get(c.name) for c in norm]
    if all(t is None or (t.weight == 1 and not t.sequential) for t in tools):
        return await _workers(rt, norm, kw, min(limit, len(norm)))
    limiter = WeightedLimit(max(1, limit))  # the same FIFO weighted semaphore as the process-wide caps

    async def one(call: ToolCall) -> ToolResult:
        tool = rt.tools.get(call.name)
        weight = min(max(1, tool.weight if tool is not None else 1), limiter.capacity)
        await limiter.acquire(weight)
        try:
            return await invoke(rt, call, **kw)
        finally:
            limiter.release(weight)

    results: list[ToolResult | None] = [None] * len(norm)
    batch: list[int] = []

    async def flush() -> None:
        if batch:
            done = await asyncio.gather(*(one(norm[i]) for i in batch))
            for i, r in zip(batch, done, strict=True):
                results[i] = r
            batch.clear()

    for i, call in enumerate(norm):
        tool = rt.tools.get(call.name)
        if tool is not None and tool.sequential:
            await flush()
            results[i] = await invoke(rt, call, **kw)
        else:
            batch.append(i)
    await flush()
    return [r for r in results if r is not None]
