"""The cold index build: MiniLM's tool vectors for the 1,951 BFCL tools, one session run
at a time against one per core side by side (`reach_preselect.minilm.encode_threads`).

Each round builds a fresh Reach on an empty cache directory, makes its first selection
(BM25 and wordllama), and waits for the dense encoder's background build; the two
settings alternate, so load drifts hit both. Prints each round and the medians.

    PYTHONHASHSEED=0 python bench/preselect_build.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_preselect import build_reach, load, selected_names  # noqa: E402


def one_build(pool: list, threads: int | None) -> tuple[float, float]:
    """(first selection s, dense vectors ready s) from an empty cache."""
    from reach_preselect import minilm

    default = minilm.encode_threads
    minilm._doc_memo.clear()  # the per-process memo would make a second build free
    if threads is not None:
        minilm.encode_threads = lambda: threads  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            reach = build_reach(pool, tmp, {"multilingual": "none"})
            t0 = time.perf_counter()
            selected_names(reach, "warm up the index", 5)
            first = time.perf_counter() - t0
            assert reach.provider("selector").engine().wait_dense()
            return first, time.perf_counter() - t0
    finally:
        minilm.encode_threads = default  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from reach_preselect import minilm

    pool, _, _ = load()
    auto = minilm.encode_threads()
    print(f"cold index build, {len(pool)} tools, MiniLM int8; cores this process may use: "
          f"{len(os.sched_getaffinity(0))}; encode_threads() = {auto}; load {os.getloadavg()[0]:.1f}")
    one_build(pool, 1)  # loads the models and makes the int8 copy: not part of either figure
    results: dict[int, list[float]] = {1: [], auto: []}
    for r in range(args.rounds):
        for threads in (1, auto) if r % 2 == 0 else (auto, 1):
            first, ready = one_build(pool, threads)
            results[threads].append(ready)
            print(f"  round {r + 1}, {threads} at once: first selection {first:.2f} s, "
                  f"dense vectors ready {ready:.1f} s (load {os.getloadavg()[0]:.1f})")
    one, many = statistics.median(results[1]), statistics.median(results[auto])
    print(f"median ready: 1 at once {one:.1f} s, {auto} at once {many:.1f} s ({one / many:.2f}x faster)")


if __name__ == "__main__":
    main()
