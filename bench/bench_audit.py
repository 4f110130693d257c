"""Benchmark of reach-audit: what auditing costs on the invoke path, how many
records per second it sustains, and how much disk 100,000 records take.

    python bench/bench_audit.py [--calls 20000] [--records 100000] [--quick]

Figures:
  baseline        json.loads + direct await of a trivial ``add`` + json.dumps (per call)
  invoke, audit off / on   the full ``reach.invoke`` path (sequential), per call;
                  "on" includes the background writer's work (flush at the end is timed)
  audit overhead  (on - off) / baseline; the target is at most +0.2x
  sustained       records/s with 1,000 concurrent calls at a time, until all are durable
  disk            bytes per record and MB per 100,000 records (after a WAL checkpoint)

Wall and CPU time (all threads of the process) are both shown: the machine may be shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "plugins" / "reach-audit"))

import reach_audit  # noqa: E402
import reach_audit.plugin as audit_plugin  # noqa: E402

from reach_core import Reach, connector, hookimpl  # noqa: E402

ARGS = '{"a": 1, "b": 2}'


@connector(risk="read")
async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first addend
        b: second addend
    """
    return a + b


async def _add(a: int, b: int) -> int:
    return a + b


class NoOpPostInvoke:
    """A post_invoke hook that does nothing: what the core's hook dispatch costs by itself."""

    REACH_PLUGIN_NAME = "bench-noop"

    @hookimpl
    def reach_post_invoke(self, call, tool, result, ctx):  # noqa: ANN001, ANN201
        return None


def make(data_dir: Path, audit: bool | str) -> Reach:
    cfg = {
        "reach": {"data_dir": str(data_dir), "log_calls": False},
        "plugins": {"reach-audit": {"log": "off", "otel": False}},
    }
    plugins = {True: [audit_plugin], False: [], "noop": [NoOpPostInvoke()]}[audit]
    reach = Reach(cfg, plugins=plugins)
    reach.register(add)
    return reach


class Clock:
    """Wall and process CPU time of a block."""

    def __enter__(self) -> Clock:
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0


async def baseline(n: int) -> tuple[float, float, float]:
    """(us/call wall, us/call cpu, median latency us) of the core-less minimum."""
    lat = []
    clock = time.perf_counter_ns
    with Clock() as c:
        for _ in range(n):
            t0 = clock()
            args = json.loads(ARGS)
            json.dumps(await _add(**args))
            lat.append(clock() - t0)
    return c.wall / n * 1e6, c.cpu / n * 1e6, statistics.median(lat) / 1e3


async def invoke_path(data_dir: Path, audit: bool | str, n: int) -> tuple[float, float, float]:
    """Sequential invokes, yielding to the loop after each (as a real agent does while it
    waits for its model), so the background writer runs at its own pace in between.

    Returns (us/call wall, us/call cpu, median latency of one invoke in us). The
    latency is the hot path: the writer never runs inside an invoke, only between them.
    "wall" and "cpu" include the writer's work (the final flush is timed too).
    """
    reach = make(data_dir, audit)
    for i in range(500):  # warm up: store open, schema, caches
        await reach.invoke({"id": f"w{i}", "name": "add", "arguments": ARGS})
    await reach_audit.flush(reach)
    lat = []
    clock = time.perf_counter_ns
    with Clock() as c:
        for i in range(n):
            t0 = clock()
            await reach.invoke({"id": f"c{i}", "name": "add", "arguments": ARGS})
            lat.append(clock() - t0)
            await asyncio.sleep(0)
        await reach_audit.flush(reach)  # the writer's work belongs to the cost
    await reach.aclose()
    return c.wall / n * 1e6, c.cpu / n * 1e6, statistics.median(lat) / 1e3


async def sustained(data_dir: Path, total: int, width: int = 1000, audit: bool = True) -> tuple[float, float]:
    reach = make(data_dir, audit)
    await reach.invoke({"id": "warm", "name": "add", "arguments": ARGS})
    await reach_audit.flush(reach)
    done = 0
    with Clock() as c:
        while done < total:
            await asyncio.gather(
                *(reach.invoke({"id": f"s{done + i}", "name": "add", "arguments": ARGS}) for i in range(width))
            )
            done += width
        await reach_audit.flush(reach)
    await reach.aclose()
    return done / c.wall, done / c.cpu


def db_size(data_dir: Path) -> int:
    db = data_dir / "reach.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sum(p.stat().st_size for p in data_dir.iterdir() if p.name.startswith("reach.db"))


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20_000, help="sequential calls per invoke-path run")
    ap.add_argument("--records", type=int, default=100_000, help="records for the sustained/disk figures")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (median is shown)")
    ap.add_argument("--quick", action="store_true", help="small numbers, for a smoke run")
    opts = ap.parse_args()
    if opts.quick:
        opts.calls, opts.records, opts.repeat = 2_000, 5_000, 1
    tmp = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    try:
        base = [await baseline(opts.calls) for _ in range(opts.repeat)]
        off, on, noop = [], [], []
        for r in range(opts.repeat):
            off.append(await invoke_path(tmp / f"off{r}", False, opts.calls))
            noop.append(await invoke_path(tmp / f"noop{r}", "noop", opts.calls))
            on.append(await invoke_path(tmp / f"on{r}", True, opts.calls))
        med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
        b_c, b_l = med(base, 1), med(base, 2)
        off_w, off_c, off_l = med(off, 0), med(off, 1), med(off, 2)
        on_w, on_c, on_l = med(on, 0), med(on, 1), med(on, 2)
        print(f"reach-audit benchmark ({opts.calls} sequential calls x {opts.repeat}, median of runs; "
              f"python {sys.version.split()[0]}, {os.cpu_count()} cpus)")
        print(f"  baseline (json.loads + await add + json.dumps): {b_l:7.2f} us median latency | {b_c:7.2f} us cpu")
        print(f"  invoke, audit off: {off_l:7.2f} us median latency | "
              f"{off_w:7.2f} us wall {off_c:7.2f} us cpu per call")
        print(f"  invoke, audit on:  {on_l:7.2f} us median latency | {on_w:7.2f} us wall {on_c:7.2f} us cpu per call"
              " (incl. background writing)")
        noop_l = med(noop, 2)
        print(f"  invoke, no-op post_invoke hook: {noop_l:7.2f} us median latency (the core's hook dispatch)")
        print(f"  hot path (median latency the caller sees): +{on_l - off_l:.2f} us = +{(on_l - off_l) / b_l:.2f}x"
              " baseline; target <= +0.2x")
        print(f"    of which reach-audit's own hook (beyond the core's hook dispatch): +{on_l - noop_l:.2f} us"
              f" = +{(on_l - noop_l) / b_l:.2f}x baseline")
        print(f"  all audit work, amortised per call: +{on_c - off_c:.2f} us cpu"
              f" = +{(on_c - off_c) / b_c:.2f}x baseline cpu")
        print(f"  invoke path of the core alone: {off_l / b_l:.1f}x baseline")

        plain_w, _ = await sustained(tmp / "sustained-off", min(opts.records, 20_000), audit=False)
        rec_w, rec_c = await sustained(tmp / "sustained", opts.records)
        size = db_size(tmp / "sustained")
        fresh = tmp / "empty"
        reach = make(fresh, True)
        await reach.invoke({"id": "one", "name": "add", "arguments": ARGS})
        await reach.aclose()
        empty = db_size(fresh)
        per = (size - empty) / (opts.records + 1)
        print(f"  sustained, 1,000 concurrent calls: {rec_w:,.0f} records/s wall ({rec_c:,.0f}/s per cpu-second), "
              f"{opts.records:,} records durable; the same calls without audit: {plain_w:,.0f} calls/s")
        print(f"  disk: {per:,.0f} bytes/record = {per * 100_000 / 1e6:.1f} MB per 100,000 records")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
