"""Round 12 of issue #23: the English p95 on an AVX2-only host, the latency levers paired.

Engine-level runs over the benchmark's index (the 1,951 BFCL tools, registered through
`reach.register` as `bench_preselect.py` does; warm disk cache), one process. Each config
is applied to the default engine through instance attributes and removed afterwards:

  a  today's default;
  b  `dense_gate_unknown = 0` (only the agreement gate);
  c  `dense_query_tokens = 12`;
  d  the query pass on its own onnxruntime session with `intra_op_num_threads = 2`
     (thread spinning as onnxruntime sets it), d0 the same with
     `session.intra_op.allow_spinning = 0`;
  and combinations.

Recall: every split's R@5/R@10 on the distinct ranking (bench/bfcl/README.md), the share of
questions MiniLM read, and how many rankings differ from (a)'s. Latency: the 930 distinct
English questions, every config on each question in turn (paired; the order of the configs
rotates from question to question), MiniLM's question memo cleared before each call: wall
(`perf_counter`), process CPU (`process_time`: every thread of the process, so onnxruntime's
worker threads count) and the calling thread's CPU (`thread_time`), each around
`engine.rank(question, limit=20)`; then the process CPU burned in the next 10 ms of sleep
(`idle ms`: threads that spin on after the pass). Load average at start and end.

    PYTHONHASHSEED=0 python bench/preselect_p95.py --cache-dir DIR [--rounds N] [--no-recall] [--only a b ...]

The figures are in docs/plugins/reach-preselect.md, "Round 12".
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_preselect as B  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache-dir", required=True, help="a data_dir whose preselect cache is warm")
    parser.add_argument("--rounds", type=int, default=1, help="paired latency rounds over the 930 questions")
    parser.add_argument("--no-recall", action="store_true", help="latency only")
    parser.add_argument("--only", nargs="*", default=[], help="configs to run (labels), besides a")
    args = parser.parse_args()

    from reach_preselect import minilm

    pool, name_map, queries = B.load()
    by_id = {q["id"]: q for q in queries}
    _reach, engine = B.warm_engine(pool, args.cache_dir)  # the Reach holds the engine

    def side(path: Path) -> list[dict[str, Any]]:
        return B.side_set(by_id, json.loads(path.read_text())["queries"])

    sets: dict[str, list[dict[str, Any]]] = {}
    sets["BFCL tuning"], sets["BFCL held-out"] = B.split(queries)
    sets["restyled tuning"], sets["restyled held-out"] = B.split(side(B.RESTYLED_MORE))
    sets["fixed 30"] = side(B.RESTYLED)
    sets["Chinese"] = side(B.ZH)
    sets["Chinese T+"] = side(B.ZH_TUNING_MORE)
    sets["Chinese held-out-50"] = side(B.ZH_HELDOUT)
    sets["Chinese held-out2"] = side(B.ZH_HELDOUT2)
    english = list({q["question"]: q for q in queries + sets["fixed 30"]}.values())
    print("sets: " + ", ".join(f"{k} ({len(v)})" for k, v in sets.items()), flush=True)

    dense = engine.dense
    base_options = engine.options
    base_session = dense._session
    base_tokens = dense.query_tokens

    sessions = {"2": B.ort_session(dense, 2, True), "2-nospin": B.ort_session(dense, 2, False),
                "1-nospin": B.ort_session(dense, 1, False)}

    def config(unknown: float | None = None, tokens: int | None = None,
               threads: str | None = None) -> Callable[[], Callable[[], None]]:
        def apply() -> Callable[[], None]:
            if unknown is not None:
                engine.options = dataclasses.replace(base_options, dense_gate_unknown=unknown)
            if tokens is not None:
                dense.query_tokens = tokens
            if threads is not None:
                dense._session = sessions[threads]

            def undo() -> None:
                engine.options = base_options
                dense.query_tokens = base_tokens
                dense._session = base_session

            return undo

        return apply

    configs: dict[str, Callable[[], Callable[[], None]]] = {
        "a default": config(),
        "b unknown=0": config(unknown=0.0),
        "c 12 pieces": config(tokens=12),
        "b+c": config(unknown=0.0, tokens=12),
        "d 2 threads": config(threads="2"),
        "d0 2 threads, no spin": config(threads="2-nospin"),
        "a0 1 thread, no spin": config(threads="1-nospin"),
        "b+d0": config(unknown=0.0, threads="2-nospin"),
        "c+d0": config(tokens=12, threads="2-nospin"),
        "b+c+d0": config(unknown=0.0, tokens=12, threads="2-nospin"),
    }
    if args.only:
        configs = {k: v for k, v in configs.items() if k == "a default" or k.split()[0] in args.only}

    # ------------------------------------------------------------------ recall
    if not args.no_recall:
        print(f"{'':<24} " + "  ".join(f"{name[:19]:<19}" for name in sets), flush=True)
        base: dict[tuple[str, int], list[str]] = {}
        for label, apply in configs.items():
            undo = apply()
            try:
                cells, rankings = [], {}
                for name, rows in sets.items():
                    h5 = h10 = reads = 0
                    for i, q in enumerate(rows):
                        minilm._query_memo.clear()
                        ranking = B.distinct(engine.rank(q["question"], limit=20), name_map)
                        rankings[(name, i)] = ranking
                        reads += not engine.dense_skipped
                        h5 += set(q["gt_names"]) <= set(ranking[:5])
                        h10 += set(q["gt_names"]) <= set(ranking[:10])
                    n = len(rows)
                    cells.append(f"{h5 / n:.3f}/{h10 / n:.3f} ({reads / n:.0%})")
                if not base:
                    base = rankings
                moved = {}
                for key, ranking in rankings.items():
                    if ranking != base[key]:
                        moved[key[0]] = moved.get(key[0], 0) + 1
                print(f"{label:<24} " + "  ".join(f"{c:<19}" for c in cells)
                      + (f"   rankings moved vs a: {moved}" if moved else "   rankings as a"), flush=True)
            finally:
                undo()

    # ------------------------------------------------------------------ latency, paired
    labels = list(configs)
    for round_ in range(args.rounds):
        wall: dict[str, list[float]] = {k: [] for k in labels}
        pcpu: dict[str, list[float]] = {k: [] for k in labels}
        tcpu: dict[str, list[float]] = {k: [] for k in labels}
        idle: dict[str, list[float]] = {k: [] for k in labels}
        reads: dict[str, int] = {k: 0 for k in labels}
        read_mask: dict[str, list[bool]] = {k: [] for k in labels}
        load0 = os.getloadavg()
        for n, q in enumerate(english):
            shift = n % len(labels)
            for label in labels[shift:] + labels[:shift]:
                undo = configs[label]()
                try:
                    minilm._query_memo.clear()
                    w, p, t = time.perf_counter(), time.process_time(), time.thread_time()
                    engine.rank(q["question"], limit=20)
                    t, p, w = time.thread_time() - t, time.process_time() - p, time.perf_counter() - w
                    reads[label] += not engine.dense_skipped
                    read_mask[label].append(not engine.dense_skipped)
                    p2 = time.process_time()
                    time.sleep(0.01)
                    idle[label].append((time.process_time() - p2) * 1000)
                finally:
                    undo()
                wall[label].append(w * 1000)
                pcpu[label].append(p * 1000)
                tcpu[label].append(t * 1000)
        load1 = os.getloadavg()
        print(f"\nlatency round {round_ + 1}: {len(english)} English questions, paired; load average "
              f"{load0[0]:.1f} -> {load1[0]:.1f} (1 min), {load0[1]:.1f} -> {load1[1]:.1f} (5 min)")
        print(f"  {'config':<24} {'reads':>6}  {'wall p50':>8} {'wall p95':>8}  {'proc CPU p50':>12} "
              f"{'p95':>6} {'p99':>6}  {'thread CPU p50':>14} {'p95':>6}  {'idle ms mean':>12}")
        for label in labels:
            print(f"  {label:<24} {reads[label]:>6}  {B.pct(wall[label], 50):>8.2f} {B.pct(wall[label], 95):>8.2f}  "
                  f"{B.pct(pcpu[label], 50):>12.2f} {B.pct(pcpu[label], 95):>6.2f} {B.pct(pcpu[label], 99):>6.2f}  "
                  f"{B.pct(tcpu[label], 50):>14.2f} {B.pct(tcpu[label], 95):>6.2f}  "
                  f"{sum(idle[label]) / len(idle[label]):>12.3f}", flush=True)
        print("  thread CPU of the questions MiniLM read (median) and of the others (p95, p99):")
        for label in labels:
            readers = [c for c, r in zip(tcpu[label], read_mask[label], strict=True) if r]
            others = [c for c, r in zip(tcpu[label], read_mask[label], strict=True) if not r]
            print(f"  {label:<24} readers median {B.pct(readers, 50):.2f} ms (n={len(readers)}); "
                  f"others p95 {B.pct(others, 95):.2f} ms, p99 {B.pct(others, 99):.2f} ms (n={len(others)})",
                  flush=True)

    # ------------------------------------------------------------------ the pass alone
    texts = [engine._dense_text(q["question"], q["question"])[0] for q in english]
    variants = {"1 thread, 16": (base_session, 16), "1 thread, 12": (base_session, 12),
                "2 threads, 16": (sessions["2"], 16), "2 threads no spin, 16": (sessions["2-nospin"], 16)}
    spent: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    for text in texts:
        for label, (sess, cap) in variants.items():
            dense._session = sess
            minilm._query_memo.clear()
            w, p = time.perf_counter(), time.process_time()
            dense.embed_query(text, cap)
            spent[label].append(((time.perf_counter() - w) * 1000, (time.process_time() - p) * 1000))
    dense._session = base_session
    print(f"\none MiniLM pass (the 930 questions' content words, paired; load {os.getloadavg()[0]:.1f}): "
          "wall median / p95, process CPU median / p95 ms")
    for label, pairs in spent.items():
        ws, ps = [x[0] for x in pairs], [x[1] for x in pairs]
        print(f"  {label:<24} wall {B.pct(ws, 50):.2f} / {B.pct(ws, 95):.2f}   CPU {B.pct(ps, 50):.2f} / "
              f"{B.pct(ps, 95):.2f}", flush=True)


if __name__ == "__main__":
    main()
