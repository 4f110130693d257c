"""Text embedders: the static model inside the `wordllama` wheel, or an OpenAI-compatible API.

Both are imported and loaded on first use only: importing reach-preselect must stay
cheap for `reach --version` with many plugins installed.
"""

from __future__ import annotations

import os
import threading
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
            import logging

            root = logging.getLogger()
            handlers, level = list(root.handlers), root.level
            import wordllama  # its __init__ calls logging.basicConfig; undo that below
            from wordllama import WordLlama

            root.handlers[:] = handlers
            root.setLevel(level)
            package_dir = os.path.dirname(wordllama.__file__)
            model = WordLlama.load(
                config=config, dim=dim, cache_dir=package_dir, disable_download=True
            )
            # We pool ourselves (see `WordLlamaEmbedder.embed`), so no padding: batches
            # come back as plain token-id lists. This process-wide copy is ours alone.
            model.tokenizer.no_padding()
            _models[(config, dim)] = model
        return model


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
