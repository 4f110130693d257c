"""``Reach.as_pydantic_ai_toolset``: the bridge reachable as a method, without editing the core.

The plugin adds exactly one attribute to ``reach_core.Reach`` (through
``reach_core.plugins.extend_reach``) when it is loaded (by ``Reach()`` through the
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
    from reach_core.plugins import extend_reach

    extend_reach(METHOD, _as_pydantic_ai_toolset)
