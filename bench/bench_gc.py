"""What each per-call plugin costs in garbage collections, in one run.

A call through the core alone frees everything it allocates, so it triggers no
collection; a plugin whose hook keeps objects alive (reach-audit's captures, held
until its writer runs) makes collections run, and full collections walk the whole
heap. Timing rows (bench_plugins.py) show this only as noise-prone microseconds;
here each row counts the collections per generation, which depend on the code path
and not on the machine's load, and the process CPU time spent in them
(``gc.callbacks``). Like bench_core.py's rows, the loop never yields, so reach-audit's
writer does not run inside it: the worst case, every capture kept.

Run: ``nox -s bench -- bench/bench_gc.py`` or ``python bench/bench_gc.py``;
``BENCH_N`` calls per row (default 100,000), ``BENCH_PLUGINS`` as in bench_plugins.py.
Instructions per call (as in docs/architecture.md) come from valgrind instead:
``valgrind --tool=callgrind`` over this script with ``BENCH_N`` = 2000 and 0, same
``BENCH_PLUGINS``, difference / 2000.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_core import ARGS, HookPlugin  # noqa: E402
from bench_plugins import PER_CALL, make  # noqa: E402

N = int(os.environ.get("BENCH_N", "100000"))


async def row(reach: Any) -> tuple[list[int], float]:
    """(collections per generation, CPU seconds in collections) over N calls."""
    for _ in range(300):  # warm up: routes, lazy imports
        await reach.invoke({"id": "c1", "name": "add", "arguments": ARGS})
    gc.collect()  # what building the Reach allocated (imports: a large heap) is not this row's to walk
    spent = [0.0, 0.0]

    def timer(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            spent[1] = time.process_time()
        else:
            spent[0] += time.process_time() - spent[1]

    before = [s["collections"] for s in gc.get_stats()]
    gc.callbacks.append(timer)
    try:
        for _ in range(N):
            res = await reach.invoke({"id": "c1", "name": "add", "arguments": ARGS})
            res.to_message()
    finally:
        gc.callbacks.remove(timer)
    return [s["collections"] - b for s, b in zip(gc.get_stats(), before, strict=True)], spent[0]


async def main() -> None:
    names = [n.strip() for n in os.environ.get("BENCH_PLUGINS", ",".join(PER_CALL)).split(",") if n.strip()]
    configs: list[tuple[str, Any]] = [("core (bench hooks only)", lambda: make([HookPlugin()]))]
    configs += [(f"{n} alone", lambda n=n: make(["auto", HookPlugin()], load=[n])) for n in names]
    configs.append(("every installed plugin", lambda: make(["auto", HookPlugin()])))
    print(f"calls per row: {N} (the writer never runs inside a row)")
    print(f"{'configuration':32s} {'gen0':>6s} {'gen1':>5s} {'gen2':>5s} {'µs/call in gc':>14s}")
    for label, build in configs:
        reach = build()
        counts, spent = await row(reach)
        print(f"{label:32s} {counts[0]:6d} {counts[1]:5d} {counts[2]:5d} {spent / N * 1e6:14.2f}")
        await reach.aclose()
        del reach
        gc.collect()  # the next row starts from the same heap, not this row's leftovers


if __name__ == "__main__":
    asyncio.run(main())
