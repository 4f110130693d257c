"""Benchmark of the guard rails (issue 3). Prints figures; not a test.

    python bench/bench_guard.py [--quick]

1. 100 calls each awaiting 50 ms through ``invoke_many`` with limit 5: target wall <= 1.015 s.
2. The same 100 calls unbounded: target <= 0.055 s.
3. The read path with guard rails on (lazy deadline, a max_concurrency limiter, a
   per-run call counter) as a ratio to the baseline (json.loads + direct await +
   json.dumps of a trivial add(a, b)): target <= 2.0x.
4. Extra cost per call of: a daily budget check (persisted), a rate limit
   (limits, memory://), a ledgered write call (durable claim + completion).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from reach_core import Reach, connector

QUICK = "--quick" in sys.argv
#: per-call figures use CPU time of this process (store thread included): on a shared
#: machine wall time mostly measures the neighbours. The fan-out and ledger figures are wall.
clock = time.process_time
N = 5_000  # calls per round of a per-call figure
REPEAT = 3 if QUICK else 5  # rounds of the fan-out figures
ROUNDS = 6 if QUICK else 24  # interleaved rounds of the per-call figures: short rounds, many of
# them, so a burst of load from a neighbour on this shared machine spoils a few rounds, not the figure


@connector(risk="read")
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@connector(risk="read")
async def wait_50ms(i: int) -> int:
    """Sleep 50 ms."""
    await asyncio.sleep(0.05)
    return i


@connector(risk="write")
async def record(a: int, b: int) -> int:
    """A write with a side effect (none here): ledgered."""
    return a + b


async def _baseline(n: int) -> float:
    async def direct(a: int, b: int) -> int:
        return a + b

    t0 = clock()
    for i in range(n):
        raw = f'{{"a": {i}, "b": 2}}'
        args = json.loads(raw)
        out = await direct(**args)
        json.dumps(out)
    return (clock() - t0) / n


_rounds = iter(range(1, 1 << 30))


async def _path(reach: Reach, name: str, n: int, *, run: bool = False, key: bool = False,
                wall: bool = False) -> float:
    """Seconds per call of ``n`` fresh calls (new runs and keys every round: a repeated
    round would otherwise hit the identical-call guard and replay earlier results).

    The store's queued writes (budget counters) are flushed inside the timing: the CPU
    clock counts every thread, and their commit would otherwise land in whichever
    round runs next."""
    now = time.perf_counter if wall else clock
    r = next(_rounds)
    runs = [f"run{r}.{i // 10}" for i in range(n)] if run else None  # made before the clock starts
    keys = [f"k{r}.{i}" for i in range(n)] if key else None
    t0 = now()
    for i in range(n):
        call = {"id": f"c{i}", "name": name, "arguments": f'{{"a": {i}, "b": 2}}'}
        res = await reach.invoke(call, run_id=runs[i] if runs else None, idempotency_key=keys[i] if keys else None)
        res.to_json()
    if reach._store is not None:
        await reach.store.flush()
    dt = (now() - t0) / n
    assert res.ok, res.error
    return dt


def _best(values: list[float]) -> float:
    return min(values)


async def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="reach-bench-guard-"))

    def make(**sections) -> Reach:
        cfg = {k: dict(v) for k, v in sections.items()}
        cfg.setdefault("reach", {}).update({"data_dir": str(tmp / f"d{len(list(tmp.iterdir()))}"), "log_calls": False})
        r = Reach(cfg, plugins=[])
        for c in (add, wait_50ms, record):
            r.register(c)
        return r

    # 1 + 2: fan-out
    r = make()
    await r.invoke("add", {"a": 1, "b": 2})
    calls = [{"id": f"w{i}", "name": "wait_50ms", "arguments": {"i": i}} for i in range(100)]
    walls5, wallsu = [], []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        res = await r.invoke_many(calls, concurrency=5)
        walls5.append(time.perf_counter() - t0)
        assert all(x.ok for x in res)
        t0 = time.perf_counter()
        res = await r.invoke_many(calls, concurrency=1000)
        wallsu.append(time.perf_counter() - t0)
    print(f"fan-out 100 x 50 ms, limit 5:   wall {statistics.median(walls5):.4f} s (best {min(walls5):.4f}; target <= 1.015)")
    print(f"fan-out 100 x 50 ms, unbounded: wall {statistics.median(wallsu):.4f} s (best {min(wallsu):.4f}; target <= 0.055)")

    # 3: the read path
    plain = make()
    guarded = make(connectors={"add": {"max_concurrency": 64, "max_calls_per_run": 1_000_000}})
    budget = make(connectors={"add": {"daily_budget": 10_000_000}})
    rated = make(connectors={"add": {"rate_limit": "100000000/minute"}})
    ledger = make()
    for rr in (plain, guarded, budget, rated, ledger):
        await _path(rr, "add", 200)
    await _path(ledger, "record", 50, key=True)

    # Rounds are interleaved (baseline, plain, guarded, budget, rated, then again): a
    # load spike on this shared machine then hits one round of each, and the ratios
    # are taken per round (each path against the baseline measured right before it).
    rounds: dict[str, list[float]] = {k: [] for k in ("base", "plain", "guard", "budget", "rated")}
    ratio: dict[str, list[float]] = {k: [] for k in ("plain", "guard")}
    for _ in range(ROUNDS):
        b = await _baseline(N)
        rounds["base"].append(b)
        for key, rr, run in (("plain", plain, False), ("guard", guarded, True), ("budget", budget, False),
                             ("rated", rated, False)):
            t = await _path(rr, "add", N, run=run)
            rounds[key].append(t)
            if key in ratio:
                ratio[key].append(t / b)
    base, t_plain, t_guard, t_budget, t_rated = (_best(rounds[k]) for k in ("base", "plain", "guard", "budget", "rated"))
    n_ledger = 300 if QUICK else 1000
    t_ledger = _best([await _path(ledger, "record", n_ledger, key=True, wall=True) for _ in range(min(REPEAT, 3))])
    await budget.store.flush()

    us = 1e6
    print(f"baseline (json.loads + await add + json.dumps): {base * us:7.2f} us CPU")
    print(f"invoke, no limits configured:                    {t_plain * us:7.2f} us  "
          f"{statistics.median(ratio['plain']):5.2f}x (median of per-round ratios)")
    print(f"invoke, guard rails on (deadline, limiter, run counter): "
          f"{t_guard * us:7.2f} us  {statistics.median(ratio['guard']):5.2f}x (target <= 2.0x)")
    print(f"  + daily budget check (persisted):              {t_budget * us:7.2f} us  extra {(t_budget - t_plain) * us:+.2f} us")
    print(f"  + rate limit (limits, memory://):              {t_rated * us:7.2f} us  extra {(t_rated - t_plain) * us:+.2f} us")
    print(f"ledgered write call (durable claim + complete):  {t_ledger * us:7.0f} us wall (sequential calls; fsync-bound)")
    for rr in (r, plain, guarded, budget, rated, ledger):
        await rr.aclose()


if __name__ == "__main__":
    asyncio.run(main())
