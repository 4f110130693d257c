"""How far below reach's invoke path a Python pipeline can go: the floor of issue #22's 1.5×.

Three rows, paired with the bare call like ``bench_core.py`` (process CPU time):

* the bare call (``json.loads`` + ``await`` + ``json.dumps``);
* reach's own path (``reach.invoke`` of a read tool on a default ``Reach`` with a pre and a
  post hook, then the tool message);
* a *floor*: the same parts reach uses (``to_call``, a ``CallContext``, orjson decode, the
  compiled schema check, the two hooks, the connector step, a ``ToolResult`` and its
  message) with every check between them left out: no unknown-tool, allow-list, policy,
  confirmation, guard, fallback, log or ``raise_errors`` step. Nothing may ship like
  this; it says what the parts cost by themselves on this interpreter.

Then the bytecode operations one reach call executes, per function (``sys.settrace`` with
``f_trace_opcodes``): what the time is spent on, independent of the machine's load.

Run: ``python bench/bench_invoke_floor.py`` (``BENCH_N``/``BENCH_ROUNDS`` set the size).
"""

from __future__ import annotations

import asyncio
import collections
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).parent))
import bench_core as b  # noqa: E402 - the same tool, hooks and baseline as bench_core

from reach_core.calls import to_call  # noqa: E402
from reach_core.context import CallContext  # noqa: E402
from reach_core.execute import run_connector  # noqa: E402
from reach_core.result import ToolResult  # noqa: E402

N = int(os.environ.get("BENCH_N", "20000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))


def floor_call(reach: Any) -> Any:
    rt = reach.runtime
    tool = rt.tools["add"]
    pre = tuple(i.function for i in rt.hooks.impls["reach_pre_invoke"])
    post = tuple(i.function for i in rt.hooks.impls["reach_post_invoke"])
    ids = iter(range(1, 1 << 62))

    async def floor(call: Any) -> ToolResult:
        t0 = time.perf_counter()
        call = to_call(call)
        ctx = CallContext(rt, tool, "default", None, call.id, f"{next(ids):x}")
        args = tool.compiled.prepare(orjson.loads(call.arguments))
        call.arguments = ctx.arguments = args
        for fn in pre:
            fn(call, tool, ctx)
        out = run_connector(tool, args, ctx)
        content, meta = out if isinstance(out, tuple) else await out
        result = ToolResult(call.id, call.name, True, content, None, 0.0, ctx.trace_id, meta)
        for fn in post:
            new = fn(call, tool, result, ctx)
            if new is not None:
                result = new
        result.elapsed_ms = (time.perf_counter() - t0) * 1000.0
        return result

    async def call() -> None:
        res = await floor({"id": "c1", "name": "add", "arguments": b.ARGS})
        res.to_message()

    return call


async def opcodes(fn: Any) -> collections.Counter[str]:
    """Bytecode operations one ``await fn()`` executes, per file and function."""
    counts: collections.Counter[str] = collections.Counter()

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"] += 1
        return tracer

    sys.settrace(tracer)
    try:
        await fn()
    finally:
        sys.settrace(None)
    return counts


async def main() -> None:
    reach = b.make_reach_bench()
    rows = [("reach core, read tool", b.reach_call(reach, "add")),
            ("floor: reach's parts, no checks", floor_call(reach))]
    for _, fn in rows:
        for _ in range(N // 10):
            await fn()
    print(f"calls per round: {N}, rounds: {ROUNDS} (medians; paired with a baseline round; process CPU time)")
    for name, fn in rows:
        ratios, times = [], []
        for _ in range(ROUNDS):
            base = await b._round(b.baseline)
            t = await b._round(fn)
            ratios.append(t / base)
            times.append(t)
        print(f"{name:36s} {statistics.median(times) * 1e6:7.2f} µs  {statistics.median(ratios):5.2f}x the bare call")
    counts = await opcodes(rows[0][1])
    print(f"bytecode operations in one reach call: {sum(counts.values())}")
    for where, n in counts.most_common(12):
        print(f"  {n:4d}  {where}")


if __name__ == "__main__":
    b.N, b.ROUNDS = N, ROUNDS
    asyncio.run(main())
