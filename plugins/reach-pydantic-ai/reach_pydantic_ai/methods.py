"""``Reach.as_pydantic_ai_toolset``: the bridge reachable as a method, without editing the core.

The core has no extension point for methods yet, so the plugin adds exactly one
attribute to ``reach_core.Reach`` when it is loaded (by ``Reach()`` through the
entry point, or by ``import reach_pydantic_ai``). It never replaces an attribute
somebody else put there.
"""

from __future__ import annotations

from typing import Any

METHOD = "as_pydantic_ai_toolset"


def _as_pydantic_ai_toolset(self: Any, agent: str | None = None, **kwargs: Any) -> Any:
    """``reach.as_pydantic_ai_toolset(agent=..., ...)``; see ``reach_pydantic_ai.as_pydantic_ai_toolset``."""
    from .toolset import as_pydantic_ai_toolset

    return as_pydantic_ai_toolset(self, agent=agent, **kwargs)


def install() -> None:
    """Add ``as_pydantic_ai_toolset`` to ``reach_core.Reach`` (idempotent; never replaces an attribute).

    Through ``reach_core.plugins.extend_reach``, so importing this plugin (``reach plugins``
    does) does not import the core's ``Reach`` and its pipeline.
    """
    try:
        from reach_core.plugins import extend_reach
    except ImportError:  # a reach-core without extend_reach
        from reach_core import Reach

        if METHOD not in Reach.__dict__:
            setattr(Reach, METHOD, _as_pydantic_ai_toolset)
        return
    extend_reach(METHOD, _as_pydantic_ai_toolset)
