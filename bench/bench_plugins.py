"""What each plugin that hooks every call adds to reach's invoke path, in one run.

The rows of ``bench_core.py``'s "every installed plugin" figure taken apart: the
core alone (with the bench's pre/post hook plugin), then each per-call plugin
alone (``[plugins] load = [name]``), then every installed plugin, and every
plugin but one (``disable=[name]``). Same clock and pairing as ``bench_core.py``
(process CPU time of every thread; each round paired with a baseline round).
A loop of awaits that never waits does not let reach-audit's background writer
run inside the round, so rows with reach-audit loaded get a second figure: the
calls plus ``reach_audit.flush`` (building, redacting, hashing, committing their
records; otel spans are built only when a tracer provider is configured).

Run: ``nox -s bench -- bench/bench_plugins.py`` or ``python bench/bench_plugins.py``;
``BENCH_N``/``BENCH_ROUNDS`` set the size, ``BENCH_PLUGINS`` (comma-separated) the
plugins ablated (default: the four that hook every call).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_core import ARGS, ROUNDS, HookPlugin, N, _clock, ratio, reach_call  # noqa: E402

from reach_core import Reach, connector  # noqa: E402

PER_CALL = ("reach-audit", "reach-shape", "reach-preselect", "reach-confirm")


async def with_writer(reach: Reach, fn: Any) -> float:
    """Seconds per call, N calls then ``reach_audit.flush`` (median over rounds).

    A loop of awaits that never waits (the other rows) never lets reach-audit's
    background writer run: its work for those calls lands after the round. Here it
    is inside the round: the records are built, redacted, hashed and committed."""
    import reach_audit

    times = []
    for _ in range(ROUNDS):
        t0 = _clock()
        for _ in range(N):
            await fn()
        await reach_audit.flush(reach)
        times.append((_clock() - t0) / N)
    return statistics.median(times)


def make(plugins: Any, load: list[str] | None = None, disable: tuple[str, ...] = ()) -> Reach:
    @connector(risk="read")
    async def add(a: int, b: int) -> int:
        """Add two integers. Use when asked for a sum."""
        return a + b

    data_dir = tempfile.mkdtemp(prefix="reach-bench-")
    atexit.register(shutil.rmtree, data_dir, True)
    cfg: dict[str, Any] = {"reach": {"data_dir": data_dir}}
    if load is not None:
        cfg["plugins"] = {"load": load}
    reach = Reach(cfg, plugins=plugins, disable=disable)
    reach.register(add)
    return reach


async def main() -> None:
    names = [n.strip() for n in os.environ.get("BENCH_PLUGINS", ",".join(PER_CALL)).split(",") if n.strip()]
    rows: list[tuple[str, Reach]] = [("core (bench hooks only)", make([HookPlugin()]))]
    rows += [(f"{n} alone", make(["auto", HookPlugin()], load=[n])) for n in names]
    rows.append(("every installed plugin", make(["auto", HookPlugin()])))
    rows += [(f"every plugin but {n}", make(["auto", HookPlugin()], disable=(n,))) for n in names]
    print(f"calls per round: {N}, rounds: {ROUNDS} (medians; each round paired with a baseline round)")
    results = []
    for label, reach in rows:
        res = await reach.invoke("add", ARGS)
        assert res.ok, res.to_dict()
        fn = reach_call(reach, "add")
        for _ in range(N // 10):  # warm up
            await fn()
        pr, t, base = await ratio(fn, reach)  # (its pending audit records written between rounds)
        audited = any(p.name == "reach-audit" and p.status == "loaded" for p in reach.plugin_info)
        w = await with_writer(reach, fn) if audited else None
        results.append((label, t, pr, base, w))
        await reach.aclose()
    base = statistics.median(r[3] for r in results)
    core = results[0][1]
    print(f"{'path (read tool)':34s} {'µs/call':>8s} {'ratio':>6s} {'vs core':>8s}  {'with audit writer':>17s}")
    print(f"{'baseline':34s} {base * 1e6:8.2f} {1.0:5.2f}x")
    for label, t, pr, _, w in results:
        extra = f"{w * 1e6:8.2f} {w / base:5.2f}x" if w is not None else ""
        print(f"{label:34s} {t * 1e6:8.2f} {pr:5.2f}x {(t - core) * 1e6:+7.2f}  {extra}")


if __name__ == "__main__":
    asyncio.run(main())
