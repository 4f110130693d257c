"""What each plugin that hooks every call adds to reach's invoke path, in one run.

The rows of ``bench_core.py``'s "every installed plugin" figure taken apart: the
core alone (with the bench's pre/post hook plugin), then each per-call plugin
alone (``[plugins] load = [name]``), then every installed plugin, and every
plugin but one (``disable=[name]``). Same clock and pairing as ``bench_core.py``
(process CPU time of every thread, so work a plugin moves to a thread or a
background task is still counted; each round paired with a baseline round).

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

from bench_core import ARGS, N, ROUNDS, HookPlugin, ratio, reach_call  # noqa: E402

from reach_core import Reach, connector  # noqa: E402

PER_CALL = ("reach-audit", "reach-shape", "reach-preselect", "reach-confirm")


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
        pr, t, base = await ratio(fn)
        results.append((label, t, pr, base))
        await reach.aclose()
    base = statistics.median(r[3] for r in results)
    core = results[0][1]
    print(f"{'path (read tool)':34s} {'µs/call':>8s} {'ratio':>6s} {'vs core':>8s}")
    print(f"{'baseline':34s} {base * 1e6:8.2f} {1.0:5.2f}x")
    for label, t, pr, _ in results:
        print(f"{label:34s} {t * 1e6:8.2f} {pr:5.2f}x {(t - core) * 1e6:+7.2f}")


if __name__ == "__main__":
    asyncio.run(main())
