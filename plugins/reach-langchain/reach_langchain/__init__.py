"""reach-langchain: reach's guarded tools inside a LangChain agent.

::

    from reach_langchain import as_langchain_tools

    tools = as_langchain_tools(reach, agent="support")   # list[BaseTool]
    agent = create_agent(model, tools)                    # LangChain's own loop

Every call still runs through ``reach.invoke``: validation, policy,
confirmation, guard rails, shaping and audit. Importing this package also gives
``Reach`` an ``as_langchain_tools`` method (see :func:`install`).

LangChain itself is imported on first use, so the plugin costs nothing at
``Reach()`` start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .methods import install

if TYPE_CHECKING:
    from .tools import ReachTool, as_langchain_tools

__all__ = ["ReachTool", "as_langchain_tools", "install"]


def __getattr__(name: str) -> Any:
    if name in ("ReachTool", "as_langchain_tools"):
        from . import tools

        return getattr(tools, name)
    raise AttributeError(f"module 'reach_langchain' has no attribute {name!r}")


install()
