"""Costs of streaming tools and of delegation, against their plain counterparts.

* ``invoke`` vs ``invoke_stream`` of a trivial plain tool (what a front-end pays
  for holding the stream);
* per-item cost of a streaming tool, aggregated by ``invoke`` and streamed by
  ``invoke_stream`` (the idle/deadline watchdog included);
* a run that delegates to a child run vs the same work done directly, with an
  in-process model (so only reach's own overhead is measured).

Run: ``python bench/bench_streaming.py``. Prints medians of several rounds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog

structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

from reach_core import Connector, connector  # noqa: E402
from reach_core.adapter import ModelRequest, ModelResponse, ModelToolCall  # noqa: E402
from reach_core.testing import make_reach  # noqa: E402

ROUNDS = 5


class Items(Connector):
    name = "items"
    description = "Yields n integers."
    risk = "read"
    timeout = 60.0
    idle_timeout = 5.0
    input_schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    async def execute_stream(self, params: dict[str, Any], ctx: Any):
        for i in range(params["n"]):
            yield i


@connector(risk="read")
async def plain(x: int) -> int:
    """Return x.

    Args:
        x: a number
    """
    return x


class Model:
    """Parent delegates (or calls `plain` directly); child calls `plain`; both then answer."""

    name = "bench"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        task = next(m["content"] for m in request.messages if m["role"] == "user")
        if any(m["role"] == "tool" for m in request.messages):
            return ModelResponse(text="done")
        if task == "delegate":
            return ModelResponse(tool_calls=[ModelToolCall("d", "delegate", json.dumps(
                {"task": "work", "agent": "worker"}))])
        return ModelResponse(tool_calls=[ModelToolCall("p", "plain", json.dumps({"x": 1}))])


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def main() -> None:
    data = Path(tempfile.mkdtemp())
    r = make_reach(config={
        "reach": {"log_calls": False},
        "agents": {"main": {"allow": ["plain"], "delegates": ["worker"]}, "worker": {"allow": ["plain"]}},
    }, data_dir=data)
    r.register(Items())
    r.register(plain)
    await r.invoke("plain", {"x": 1})

    async def per_call(fn: Any, n: int) -> float:
        rounds = []
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            for _ in range(n):
                await fn()
            rounds.append((time.perf_counter() - t0) / n)
        return median_us(rounds)

    async def drain() -> None:
        async for _ in r.invoke_stream("plain", {"x": 1}):
            pass

    inv = await per_call(lambda: r.invoke("plain", {"x": 1}), 2000)
    stream = await per_call(drain, 2000)
    print(f"plain tool: invoke {inv:.1f} us, invoke_stream {stream:.1f} us per call")

    n_items = 50_000

    async def aggregate() -> None:
        res = await r.invoke("items", {"n": n_items})
        assert res.ok and len(res.content) == n_items

    async def streamed() -> None:
        count = 0
        async for _ in r.invoke_stream("items", {"n": n_items}):
            count += 1
        assert count == n_items + 1

    agg = await per_call(aggregate, 1) / n_items
    st = await per_call(streamed, 1) / n_items
    print(f"streaming tool, {n_items} items: {agg:.2f} us/item aggregated by invoke, "
          f"{st:.2f} us/item through invoke_stream")

    model = Model()
    direct = await per_call(lambda: r.run("direct", agent="main", adapter=model), 300)
    delegated = await per_call(lambda: r.run("delegate", agent="main", adapter=model), 300)
    print(f"agent run calling a tool: {direct:.0f} us directly, {delegated:.0f} us through a delegated child run "
          f"(+{delegated - direct:.0f} us for delegation)")
    await r.aclose()


if __name__ == "__main__":
    asyncio.run(main())
