"""Embeddings of tool texts kept on disk, so a restart does not embed every tool again.

One `.npz` file per embedding model under the cache directory, keyed by the hash of
each tool's text: a tool whose text did not change is never embedded twice, one whose
text changed gets a new key. Writes go to a temporary file renamed into place, so a
crash mid-write leaves the previous cache intact.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

import numpy as np


class EmbeddingCache:
    """A key -> vector map for one embedding model, persisted in one file."""

    def __init__(self, directory: str | os.PathLike[str] | None, model_id: str) -> None:
        self.model_id = model_id
        self._vectors: dict[str, np.ndarray] = {}
        self._dirty = False
        self._lock = threading.Lock()
        self.path: Path | None = None
        if directory is not None:
            digest = hashlib.sha256(model_id.encode()).hexdigest()[:16]
            self.path = Path(directory) / f"embeddings-{digest}.npz"
            self._read()

    def _read(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            with np.load(self.path, allow_pickle=False) as data:
                if str(data["model_id"]) != self.model_id:
                    return
                keys = data["keys"]
                matrix = data["vectors"]
            self._vectors = {str(k): matrix[i] for i, k in enumerate(keys)}
        except (OSError, KeyError, ValueError):
            # A damaged cache costs one re-embedding, never a failure.
            self._vectors = {}

    def get(self, key: str) -> np.ndarray | None:
        return self._vectors.get(key)

    def put(self, key: str, vector: np.ndarray) -> None:
        with self._lock:
            self._vectors[key] = np.asarray(vector, dtype=np.float32)
            self._dirty = True

    def __len__(self) -> int:
        return len(self._vectors)

    def flush(self) -> None:
        """Write the cache if anything was added since the last write."""
        if self.path is None or not self._dirty:
            return
        with self._lock:
            keys = list(self._vectors)
            matrix = (
                np.stack([self._vectors[k] for k in keys])
                if keys
                else np.zeros((0, 1), dtype=np.float32)
            )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".npz.tmp")
            try:
                with os.fdopen(fd, "wb") as handle:
                    np.savez(
                        handle,
                        model_id=np.array(self.model_id),
                        keys=np.array(keys),
                        vectors=matrix,
                    )
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            self._dirty = False


#: bump when `ToolDoc.bm25_terms` or `text.tokenize` changes what a text yields:
#: terms cached by an older version are then ignored, never mixed in.
TERMS_VERSION = "terms-1"


class TermCache:
    """A key -> BM25 term list map, persisted in one JSON file next to the embeddings.

    Tokenising ~2,000 tool texts (identifier splitting, stemming, schema walking) was
    two thirds of a restart's index build; the terms of a text that did not change are
    read back instead. Keyed like the embeddings, by the hash of each tool's text.
    """

    def __init__(self, directory: str | os.PathLike[str] | None, version: str = TERMS_VERSION) -> None:
        self.version = version
        self._terms: dict[str, list[str]] = {}
        self._dirty = False
        self._lock = threading.Lock()
        self.path: Path | None = None
        if directory is not None:
            self.path = Path(directory) / "bm25-terms.json"
            self._read()

    def _read(self) -> None:
        import json

        if self.path is None or not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("version") != self.version:
                return
            self._terms = {str(k): str(v).split(" ") for k, v in data["terms"].items()}
        except (OSError, KeyError, ValueError, AttributeError, TypeError):
            self._terms = {}  # a damaged file costs one re-tokenising, never a failure

    def get(self, key: str) -> list[str] | None:
        return self._terms.get(key)

    def put(self, key: str, terms: list[str]) -> None:
        with self._lock:
            self._terms[key] = list(terms)
            self._dirty = True

    def __len__(self) -> int:
        return len(self._terms)

    def flush(self) -> None:
        """Write the file if anything was added since the last write."""
        import json

        if self.path is None or not self._dirty:
            return
        with self._lock:
            blob = json.dumps(
                {"version": self.version, "terms": {k: " ".join(v) for k, v in self._terms.items()}},
                ensure_ascii=False,
            )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".json.tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(blob)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            self._dirty = False


class IndexSnapshot:
    """The built index of one tool set (BM25's score matrix, the near-copy pairs) in one
    `.npz` file, so a restart with the same tools loads arrays instead of building them.

    Building them from cached terms and vectors still took ~0.4 s of CPU for 2,000 tools
    (bm25s's indexing, the all-pairs similarity for near-copies). The file holds one
    tool set, named inside by a digest of everything the arrays depend on; any other
    digest is ignored and overwritten.
    """

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self.path = Path(directory) / "index.npz" if directory is not None else None

    def load(self, digest: str) -> dict[str, np.ndarray] | None:
        if self.path is None or not self.path.exists():
            return None
        try:
            with np.load(self.path, allow_pickle=False) as data:
                if str(data["digest"]) != digest:
                    return None
                return {k: data[k] for k in data.files}
        except (OSError, KeyError, ValueError, EOFError):
            return None  # a damaged snapshot costs one build, never a failure

    def save(self, digest: str, arrays: dict[str, np.ndarray]) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".npz.tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                # numpy's stub takes a key of **kwds for `allow_pickle` (a keyword only since 2.1)
                np.savez(handle, digest=np.array(digest), **arrays)  # type: ignore[arg-type]
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
