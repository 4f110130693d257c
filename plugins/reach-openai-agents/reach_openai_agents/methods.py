"""``Reach.as_openai_agents_tools``: the bridge reachable as a method, without editing the core.

The core has no extension point for methods yet, so the plugin adds exactly one
attribute to ``reach_core.Reach`` when it is loaded (by ``Reach()`` through the
entry point, or by ``import reach_openai_agents``). It never replaces an attribute
somebody else put there.
"""

from __future__ import annotations

from typing import Any

METHOD = "as_openai_agents_tools"


def _as_openai_agents_tools(self: Any, agent: str | None = None, **kwargs: Any) -> Any:
    """``reach.as_openai_agents_tools(agent=..., ...)``; see ``reach_openai_agents.as_openai_agents_tools``."""
    from .tools import as_openai_agents_tools

    return as_openai_agents_tools(self, agent=agent, **kwargs)


def install() -> None:
    """Add ``as_openai_agents_tools`` to ``reach_core.Reach`` (idempotent; never replaces an attribute).

    Through ``reach_core.plugins.extend_reach``, so importing this plugin (``reach plugins``
    does) does not import the core's ``Reach`` and its pipeline.
    """
    try:
        from reach_core.plugins import extend_reach
    except ImportError:  # a reach-core without extend_reach
        from reach_core import Reach

        if METHOD not in Reach.__dict__:
            setattr(Reach, METHOD, _as_openai_agents_tools)
        return
    extend_reach(METHOD, _as_openai_agents_tools)
