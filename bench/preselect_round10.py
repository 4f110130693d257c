"""Round 10 of issue #23 (rewritten-style questions): the levers measured, none adopted.

Engine-level runs over the benchmark's index (the 1,951 BFCL tools, registered through
`reach.register` exactly as `bench_preselect.py` does; warm disk cache), each lever applied
alone to the default engine through instance attributes and removed afterwards. Prints, per
lever, R@5/R@10 on the distinct ranking (bench/bfcl/README.md) and the share of questions
MiniLM read, on: the BFCL tuning and held-out halves, the restyled-90 tuning and held-out
halves, the fixed 30 rewritten questions, and both Chinese sets (whose rankings no lever may
move: every lever here leaves CJK questions to today's code, and the script counts moved
Chinese rankings to prove it). With `--cpu`, each lever's selection CPU over the 930
distinct English questions (`time.thread_time` around `engine.rank`: ~0.4 ms less than
through `reach.tools`). The figures are in docs/plugins/reach-preselect.md, "Round 10".

    PYTHONHASHSEED=0 python bench/preselect_round10.py --cache-dir DIR [--cpu] [--only WORD ...]

Levers:
1a. twin expansion: the near-twins (cosine >= theta in MiniLM's or wordllama's tool space,
    computed once at index time, near-copies aside) of the top 1-2 tools placed right behind
    them; 1b. twin diversity: in multi-clause questions, a tool that is a near-twin of one
    already in the first five waits behind them (a hard-threshold MMR).
2.  a cheaper MiniLM pass: its first 2 / 3 / 4 layers (tools and questions through the same
    cut model), under today's gate and wider ones; 2b. fewer word pieces (12 / 8).
3.  wordllama reading content words only; smooth-inverse-frequency token weights for
    wordllama; the dense gate opened at "top 5 share <= 1 tool" for English questions with
    MiniLM a third equal vote (not the arbiter) where the lists share one tool.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_preselect as B  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache-dir", required=True, help="a data_dir whose preselect cache is warm")
    parser.add_argument("--cpu", action="store_true", help="also the selection CPU of each lever")
    parser.add_argument("--only", nargs="*", default=[], help="levers whose label holds one of these words")
    args = parser.parse_args()

    from reach_preselect import minilm
    from reach_preselect.embedders import _normalise
    from reach_preselect.engine import SelectionEngine
    from reach_preselect.minilm import MiniLMEncoder
    from reach_preselect.text import clauses, content_words, has_cjk

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
    sets["Chinese held-out-50"] = side(B.ZH_HELDOUT)
    english = list({q["question"]: q for q in queries + sets["fixed 30"]}.values())
    print("sets: " + ", ".join(f"{k} ({len(v)})" for k, v in sets.items()))

    def measure(label: str) -> dict[tuple[str, int], list[str]]:
        cells, rankings = [], {}
        for name, rows in sets.items():
            h5 = h10 = reads = 0
            for i, q in enumerate(rows):
                ranking = B.distinct(engine.rank(q["question"], limit=20), name_map)
                rankings[(name, i)] = ranking
                reads += not engine.dense_skipped
                h5 += set(q["gt_names"]) <= set(ranking[:5])
                h10 += set(q["gt_names"]) <= set(ranking[:10])
            n = len(rows)
            cells.append(f"{h5 / n:.3f}/{h10 / n:.3f} ({reads / n:.0%})")
        print(f"{label:<44} " + "  ".join(f"{c:<18}" for c in cells), flush=True)
        return rankings

    def cpu(label: str) -> None:
        minilm._query_memo.clear()
        spent = []
        for q in english:
            start = time.thread_time()
            engine.rank(q["question"], limit=20)
            spent.append((time.thread_time() - start) * 1000)
        print(f"{'':<44} CPU of the 930 English questions: p50 {B.pct(spent, 50):.2f} ms, "
              f"p95 {B.pct(spent, 95):.2f} ms, p99 {B.pct(spent, 99):.2f} ms (load {os.getloadavg()[0]:.1f})",
              flush=True)

    # ---------------------------------------------------------------- lever 1
    similarity = {"MiniLM": engine._dense_t.T @ engine._dense_t, "wordllama": engine._matrix @ engine._matrix_t}
    plain_ranked = engine._ranked_indices

    def twins(space: str, theta: float) -> list[list[int]]:
        """Each tool's near-twins, most similar first (its near-copies aside: they are
        pushed back already, and are the same tool)."""
        matrix = similarity[space]
        out = []
        for i in range(matrix.shape[0]):
            near = np.flatnonzero(matrix[i] >= theta)
            near = near[near != i]
            out.append([int(j) for j in near[np.argsort(-matrix[i, near])] if j not in engine._copies[i]])
        return out

    def expansion(space: str, theta: float, anchors: int, per: int, single: bool = False) -> Callable[..., Any]:
        near = twins(space, theta)

        def ranked(query: str, mask: Any, limit: int, bonus: Any = None) -> list[int]:
            order = plain_ranked(query, mask, limit, bonus)
            if has_cjk(query) or (single and len(clauses(query)) > 1):
                return order
            head: list[int] = []
            placed: set[int] = set()
            for anchor in order[:anchors]:
                if anchor in placed:
                    continue
                head.append(anchor)
                placed.add(anchor)
                added = 0
                for j in near[anchor]:
                    if added == per:
                        break
                    if j in placed or (mask is not None and not mask[j]):
                        continue
                    head.append(j)
                    placed.add(j)
                    added += 1
            return head + [i for i in order if i not in placed]

        return ranked

    def diversity(space: str, theta: float, head_size: int = 5) -> Callable[..., Any]:
        near = [set(t) for t in twins(space, theta)]

        def ranked(query: str, mask: Any, limit: int, bonus: Any = None) -> list[int]:
            order = plain_ranked(query, mask, limit, bonus)
            if has_cjk(query) or len(clauses(query)) < 2:
                return order
            kept: list[int] = []
            later: list[int] = []
            for position, i in enumerate(order):
                if len(kept) == head_size:
                    return kept + later + order[position:]
                (later if any(j in near[i] for j in kept) else kept).append(i)
            return kept + later

        return ranked

    # ---------------------------------------------------------------- lever 2
    full_dense, full_t = engine.dense, engine._dense_t
    scratch = tempfile.TemporaryDirectory()

    def cut_model(layers: int) -> tuple[Any, np.ndarray]:
        """The fused int8 copy in use, cut after its first `layers` layers, and the tool
        texts encoded through it (a question and the tools must share one space)."""
        import onnx

        model = onnx.load(str(full_dense.run_file))
        kept = []
        for node in model.graph.node:
            kept.append(node)
            if f"h{layers}" in node.output:
                break
        for node in kept:
            node.output[:] = ["last_hidden_state" if o == f"h{layers}" else o for o in node.output]
        del model.graph.node[:]
        model.graph.node.extend(kept)
        used = {i for node in kept for i in node.input}
        initialisers = [t for t in model.graph.initializer if t.name in used]
        del model.graph.initializer[:]
        model.graph.initializer.extend(initialisers)
        path = Path(scratch.name) / f"minilm-L{layers}.onnx"
        onnx.save(model, str(path))
        encoder = MiniLMEncoder(path, query_tokens=full_dense.query_tokens, doc_tokens=full_dense.doc_tokens)
        start = time.process_time()
        matrix = encoder.embed_documents([d.embed_text() for d in engine._docs])
        print(f"  (first {layers} layers: 1,951 tool texts encoded in {time.process_time() - start:.1f} s of CPU)")
        return encoder, np.ascontiguousarray(matrix.T.astype(np.float32))

    cut: dict[int, tuple[Any, np.ndarray]] = {}

    def layers(count: int, **gate: Any) -> Callable[[], Callable[[], None]]:
        def apply() -> Callable[[], None]:
            if count < 6 and count not in cut:
                cut[count] = cut_model(count)
            if count < 6:
                engine.dense, engine._dense_t = cut[count]
            engine.options = dataclasses.replace(base_options, **gate)

            def undo() -> None:
                engine.dense, engine._dense_t = full_dense, full_t
                engine.options = base_options

            return undo

        return apply

    def pass_cost() -> None:
        """CPU of one MiniLM pass over the content words of every English question,
        the models alternating question by question (paired)."""
        for count in (2, 3, 4):
            if count not in cut:
                cut[count] = cut_model(count)
        texts = [engine._dense_text(q["question"], q["question"])[0] for q in english]
        variants = {"6 layers, 16 pieces": (full_dense, 16), "6 layers, 12 pieces": (full_dense, 12),
                    "6 layers, 8 pieces": (full_dense, 8)}
        variants.update({f"{c} layers, 16 pieces": (cut[c][0], 16) for c in (4, 3, 2)})
        spent: dict[str, list[float]] = {k: [] for k in variants}
        for text in texts:
            for label, (encoder, cap) in variants.items():
                minilm._query_memo.clear()
                start = time.thread_time()
                encoder.embed_query(text, cap)
                spent[label].append((time.thread_time() - start) * 1000)
        print("one MiniLM pass, CPU ms median / p95 (paired, the 930 English questions' content words, "
              f"load {os.getloadavg()[0]:.1f}): "
              + "; ".join(f"{k} {B.pct(v, 50):.2f} / {B.pct(v, 95):.2f}" for k, v in spent.items()))

    def pieces(cap: int) -> Callable[[], Callable[[], None]]:
        def apply() -> Callable[[], None]:
            full_dense.query_tokens = cap

            def undo() -> None:
                full_dense.query_tokens = 16

            return undo

        return apply

    # ---------------------------------------------------------------- lever 3
    real_embedder = engine.embedder
    model = real_embedder._load()
    tokenizer, table = model.tokenizer, model.embedding
    last = table.shape[0] - 1
    tool_texts = [d.embed_text() for d in engine._docs]
    counts = np.zeros(table.shape[0], dtype=np.float64)
    for encoding in tokenizer.encode_batch(tool_texts, add_special_tokens=False):
        np.add.at(counts, np.clip(encoding.ids, 0, last), 1)
    frequency = counts / counts.sum()

    class Wordllama:
        """wordllama reading an English question's content words, or with SIF weights."""

        def __init__(self, mode: str, a: float = 0.0) -> None:
            self.mode = mode
            self.weights = (a / (a + frequency)).astype(np.float32) if a else None

        def __getattr__(self, name: str) -> Any:
            return getattr(real_embedder, name)

        def vector(self, text: str) -> np.ndarray:
            assert self.weights is not None
            ids = np.clip(tokenizer.encode(text, add_special_tokens=False).ids, 0, last)
            if not len(ids):
                return np.zeros(table.shape[1], dtype=np.float32)
            w = self.weights[ids]
            return (w[:, None] * table[ids]).sum(axis=0) / max(float(w.sum()), 1e-9)

        def embed(self, texts: list[str]) -> np.ndarray:
            if len(texts) != 1 or has_cjk(texts[0]):
                return real_embedder.embed(texts)
            if self.mode == "words":
                return real_embedder.embed([content_words(texts[0]) or texts[0]])
            return _normalise(self.vector(texts[0])[None])

    real_matrix, real_matrix_t = engine._matrix, engine._matrix_t

    def wordllama(mode: str, a: float = 0.0, tools: bool = False) -> Callable[[], Callable[[], None]]:
        def apply() -> Callable[[], None]:
            engine.embedder = Wordllama(mode, a)
            if tools:
                matrix = _normalise(np.stack([engine.embedder.vector(t) for t in tool_texts]))
                engine._matrix, engine._matrix_t = matrix, np.ascontiguousarray(matrix.T)

            def undo() -> None:
                engine.embedder = real_embedder
                engine._matrix, engine._matrix_t = real_matrix, real_matrix_t

            return undo

        return apply

    base_options = engine.options
    partial = {"read": False}

    def wider_gate(share: int, vote: float | None, cap: int = 16, cut_to: int = 0) -> Callable[[], Callable[[], None]]:
        """English questions only: where today's gate skips MiniLM but BM25's and
        wordllama's top 5 share at most `share` tools, MiniLM reads too, weighing
        `vote` there (None: the arbiter's 2, as where it reads today); `cut_to`: there
        (only) MiniLM cut to its first layers reads, with its own tool vectors."""
        wide = dataclasses.replace(base_options, dense_gate_shared=share)

        def raw(queries: list[str], mask: Any = None) -> dict[str, np.ndarray]:
            partial["read"] = False
            out = SelectionEngine.raw_scores(engine, queries, mask)
            if engine.dense_skipped and not has_cjk(queries[0]):
                engine.options = wide
                try:
                    if engine._signals_disagree(out["bm25"][0], out["embedding"][0], mask):
                        if cut_to:
                            encoder, matrix_t = cut[cut_to]
                            text, words = engine._dense_text(queries[0], queries[0])
                            scores = np.einsum("d,dn->n", encoder.embed_query(text, words), matrix_t)
                        else:
                            vector = engine._dense_vector(queries[0], queries[0])
                            scores = np.einsum("d,dn->n", vector, engine._dense_t)
                        out["dense"] = np.broadcast_to(scores, out["dense"].shape)
                        engine.dense_skipped = False
                        partial["read"] = True
                finally:
                    engine.options = base_options
            return out

        def weights() -> Any:
            w = SelectionEngine._weights(engine)
            return {**w, "dense": vote} if partial["read"] and vote is not None else w

        def apply() -> Callable[[], None]:
            if cut_to and cut_to not in cut:
                cut[cut_to] = cut_model(cut_to)
            engine.raw_scores, engine._weights = raw, weights
            full_dense.query_tokens = cap

            def undo() -> None:
                engine.__dict__.pop("raw_scores", None)
                engine.__dict__.pop("_weights", None)
                full_dense.query_tokens = 16

            return undo

        return apply

    def ranked_by(fn: Callable[[], Callable[..., Any]]) -> Callable[[], Callable[[], None]]:
        def apply() -> Callable[[], None]:
            engine._ranked_indices = fn()
            return lambda: engine.__dict__.pop("_ranked_indices", None)

        return apply

    levers: list[tuple[str, Callable[[], Callable[[], None]]]] = []
    for space, thetas in (("MiniLM", (0.95, 0.9, 0.85, 0.8)), ("wordllama", (0.95, 0.9, 0.85))):
        for theta in thetas:
            levers.append((f"1a twins {space} >= {theta}, top 1, one twin",
                           ranked_by(lambda s=space, t=theta: expansion(s, t, 1, 1))))
        for theta in thetas[1:3]:
            levers.append((f"1a twins {space} >= {theta}, top 2, one twin",
                           ranked_by(lambda s=space, t=theta: expansion(s, t, 2, 1))))
            levers.append((f"1a twins {space} >= {theta}, top 1, two twins",
                           ranked_by(lambda s=space, t=theta: expansion(s, t, 1, 2))))
            levers.append((f"1a twins {space} >= {theta}, one-clause only",
                           ranked_by(lambda s=space, t=theta: expansion(s, t, 1, 1, True))))
        for theta in thetas:
            levers.append((f"1b diversity {space} >= {theta}", ranked_by(lambda s=space, t=theta: diversity(s, t))))
    alone = {"bm25": 0.0, "embedding": 0.0, "dense": 1.0, "multilingual": 0.0, "tags": 0.0}
    for count in (6, 4, 3, 2):  # the signal by itself: MiniLM's ranking alone, every question
        levers.append((f"2 MiniLM alone, {count} layers", layers(count, dense_gate=0, weights=alone)))
    for count in (4, 3, 2):
        levers.append((f"2 first {count} layers, gate as today", layers(count)))
    for count in (4, 3):
        levers.append((f"2 first {count} layers, share <= 1", layers(count, dense_gate_shared=1)))
        levers.append((f"2 first {count} layers, share <= 1 or 25% unknown",
                       layers(count, dense_gate_shared=1, dense_gate_unknown=0.25)))
        levers.append((f"2 first {count} layers, every question", layers(count, dense_gate_shared=5)))
    for cap in (12, 8):
        levers.append((f"2b {cap} pieces, gate as today", pieces(cap)))
        levers.append((f"2b {cap} pieces, English share <= 1", wider_gate(1, None, cap)))
    levers.append(("3 wordllama reads content words", wordllama("words")))
    for a in (1e-3, 1e-4):
        levers.append((f"3 wordllama SIF a={a:g}, questions", wordllama("sif", a)))
        levers.append((f"3 wordllama SIF a={a:g}, questions and tools", wordllama("sif", a, tools=True)))
    levers.append(("3 English share <= 1, arbiter 2", wider_gate(1, None)))
    levers.append(("3 English share <= 1, vote 1 where one shared", wider_gate(1, 1.0)))
    levers.append(("3 ... vote 1.5 where one shared", wider_gate(1, 1.5)))
    levers.append(("3 ... vote 1, 12 pieces", wider_gate(1, 1.0, 12)))
    for count in (3, 4):
        levers.append((f"3 ... vote 1 by the first {count} layers", wider_gate(1, 1.0, cut_to=count)))

    print(f"{'':<44} " + "  ".join(f"{name[:18]:<18}" for name in sets))
    base = measure("default")
    if args.cpu:
        cpu("default")
    for label, apply in levers:
        if args.only and not any(word in label for word in args.only):
            continue
        undo = apply()
        try:
            rankings = measure(label)
            moved = sum(1 for key, r in rankings.items() if key[0].startswith("Chinese") and r != base[key])
            if moved:
                print(f"{'':<44} Chinese rankings moved: {moved}")
            if args.cpu:
                cpu(label)
        finally:
            undo()
    if args.cpu:
        pass_cost()
    scratch.cleanup()


if __name__ == "__main__":
    main()
