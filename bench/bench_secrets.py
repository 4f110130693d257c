"""What configured secrets cost per call: bench_core's core Reach (read tool ``add``, write
tool ``put``) with none and with two secret values configured (masked in every result).

Run: ``python bench/bench_secrets.py`` (``BENCH_N``/``BENCH_ROUNDS`` as in bench_core).
Prints µs/call and the ratio to bench_core's baseline round paired with it.
"""

from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_core as b  # noqa: E402

SECRETS = ["sk-live-4f9a8b7c6d5e4f3a2b1c", "hunter2-Correct-Horse!"]


async def main() -> None:
    plain = b.make_reach_bench()
    two = b.make_reach_bench()
    two.redactor.add(values=SECRETS)  # what [plugins.NAME] key = { env = ... } configures
    rows = [("core read, no secrets", b.reach_call(plain, "add")),
            ("core write, no secrets", b.reach_call(plain, "put")),
            ("core read, 2 secrets", b.reach_call(two, "add")),
            ("core write, 2 secrets", b.reach_call(two, "put"))]
    for name, fn in rows:
        for _ in range(b.N // 10):  # warm up
            await fn()
        ratio, t, base = await b.ratio(fn)
        print(f"{name:28s} {t * 1e6:8.2f} µs/call  {ratio:5.2f}x baseline ({base * 1e6:.2f} µs)")


if __name__ == "__main__":
    asyncio.run(main())
