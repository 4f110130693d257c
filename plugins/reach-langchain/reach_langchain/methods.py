"""``Reach.as_langchain_tools``: the bridge reachable as a method, without editing the core.

The core has no extension point for methods yet, so the plugin adds exactly one
attribute to ``reach_core.Reach`` when it is loaded (by ``Reach()`` through the
entry point, or by ``import reach_langchain``). It never replaces an attribute
somebody else put there.
"""

from __future__ import annotations

from typing import Any

METHOD = "as_langchain_tools"


def _as_langchain_tools(self: Any, agent: str | None = None, **kwargs: Any) -> Any:
    """``reach.as_langchain_tools(agent=..., query=..., limit=...)``; see ``reach_langchain.as_langchain_tools``."""
    from .tools import as_langchain_tools

    return as_langchain_tools(self, agent=agent, **kwargs)


def install() -> None:
    """Add ``as_langchain_tools`` to ``reach_core.Reach`` (idempotent)."""
    from reach_core import Reach

    if METHOD not in Reach.__dict__:
        setattr(Reach, METHOD, _as_langchain_tools)
