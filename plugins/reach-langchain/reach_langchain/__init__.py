"""reach-langchain: reach's guarded tools inside a LangChain agent.

::

    import reach_langchain

    tools = reach_langchain.tools(reach, agent="support")   # list[BaseTool]
    agent = create_agent(model, tools)                       # LangChain's own loop

Every call still runs through ``reach.invoke``: validation, policy,
confirmation, guard rails, shaping and audit.

LangChain itself is imported on first use, so the plugin costs nothing at
``Reach()`` start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bridge import ReachTool, as_langchain_tools

    tools = as_langchain_tools

__all__ = ["ReachTool", "tools"]


def __getattr__(name: str) -> Any:
    # The bridge (and LangChain) load on first use; ``tools`` is ``bridge.as_langchain_tools``.
    if name in __all__:
        from . import bridge

        return getattr(bridge, "as_langchain_tools" if name == "tools" else name)
    raise AttributeError(f"module 'reach_langchain' has no attribute {name!r}")
