"""``Reach.as_langchain_tools``: the bridge reachable as a method, without editing the core.

The plugin adds exactly one attribute to ``reach_core.Reach`` (through
``reach_core.plugins.extend_reach``) when it is loaded (by ``Reach()`` through the
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
    """Add ``as_langchain_tools`` to ``reach_core.Reach`` (idempotent; never replaces an attribute).

    Through ``reach_core.plugins.extend_reach``, so importing this plugin (``reach plugins``
    does) does not import the core's ``Reach`` and its pipeline.
    """
    from reach_core.plugins import extend_reach

    extend_reach(METHOD, _as_langchain_tools)
