"""Hook implementations of reach-preselect (the entry point `reach-preselect`).

Importing this module imports neither pydantic nor bm25s nor wordllama nor
numpy-heavy code paths (``reach plugins`` imports it): the selector builds its
index on the first selection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from .settings import PreselectSettings

REACH_PLUGIN_NAME = "reach-preselect"


@hookimpl
def reach_plugin_settings() -> type[PreselectSettings]:
    from .settings import PreselectSettings  # pydantic only when a Reach validates settings

    return PreselectSettings


class LazyHybrid:
    """The ``hybrid`` selector, imported on the first selection: building a ``Reach``
    (``reach plugins``, ``reach --help``) must not pay for numpy and bm25s."""

    name = "hybrid"

    def __init__(self) -> None:
        self._impl: Any = None

    def _get(self) -> Any:
        if self._impl is None:
            from .selector import HybridSelector

            self._impl = HybridSelector()
        return self._impl

    def select(self, *args: Any, **kwargs: Any) -> Any:
        return self._get().select(*args, **kwargs)

    def explain(self, *args: Any, **kwargs: Any) -> Any:
        return self._get().explain(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # everything else the real selector offers
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._get(), name)


@hookimpl
def reach_register_selectors(register: Any) -> None:
    # One selector per Reach (this hook runs once per Reach instance); it reads
    # [plugins.reach-preselect] from the first call's ctx.reach.
    register("hybrid", LazyHybrid())


@hookimpl
def reach_register_tools(register: Any, settings: Any) -> None:
    if settings is None or getattr(settings, "find_tools", True):
        from .find_tools import FindTools

        limit = getattr(settings, "find_tools_limit", 5) if settings is not None else 5
        register(FindTools(default_limit=limit))


class PreselectPlugin:
    """reach-preselect in one ``Reach``: its per-call hook, with what it needs decided once.

    Built by ``reach_plugin_instance`` with this Reach's validated settings, so the hook
    does not look the settings up on every call (the usage prior is off by default).
    """

    def __init__(self, settings: Any) -> None:
        self.usage_prior = bool(getattr(settings, "usage_prior", False))
        # Without the usage prior the hook acts only on find_tools' calls: the core leaves it
        # out of every other tool's route (reach_core.hooks.for_route).
        self.REACH_HOOK_WHEN = {} if self.usage_prior else {"reach_post_invoke": ("tools", frozenset({"find_tools"}))}

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: Any, ctx: Any) -> Any:
        """Count the call for the usage prior; tag a `find_tools` result with the names it found.

        `result.meta["offer_tools"]` is how an agent loop can learn which tools to add to
        the next step's offer without parsing the content.
        """
        if tool is None or not result.ok:
            return None
        if tool.name != "find_tools":
            if self.usage_prior:
                _observe(tool.name, ctx)
            return None
        content = result.content if isinstance(result.content, dict) else {}
        names = [t.get("name") for t in content.get("tools", []) if isinstance(t, dict)]
        meta = getattr(result, "meta", None)
        if isinstance(meta, dict):
            meta["offer_tools"] = [n for n in names if n]
        return None


@hookimpl
def reach_plugin_instance(settings: Any) -> PreselectPlugin:
    return PreselectPlugin(settings)


def _observe(name: str, ctx: Any) -> None:
    """Hand a successful call to this Reach's selector (the usage prior is on)."""
    reach = getattr(ctx, "reach", None)
    if reach is None:
        return
    selector = reach.provider("selector")
    observe = getattr(selector, "observe_call", None) if isinstance(selector, LazyHybrid) else None
    if observe is not None:
        observe(str(getattr(ctx, "agent", None) or "default"), name, ctx)
