"""reach-pydantic-ai: reach's guarded tools inside a pydantic-ai agent.

::

    from pydantic_ai import Agent
    from reach_pydantic_ai import as_pydantic_ai_toolset

    agent = Agent(model, toolsets=[as_pydantic_ai_toolset(reach, agent="support")])

Every call still runs through ``reach.invoke`` (validation, policy, confirmation,
guard rails, shaping, audit). Importing this package also gives ``Reach`` an
``as_pydantic_ai_toolset`` method (see :func:`install`). pydantic-ai itself is
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .methods import install

if TYPE_CHECKING:
    from .toolset import ReachToolset, as_pydantic_ai_toolset

__all__ = ["ReachToolset", "as_pydantic_ai_toolset", "install"]


def __getattr__(name: str) -> Any:
    if name in ("ReachToolset", "as_pydantic_ai_toolset"):
        from . import toolset

        return getattr(toolset, name)
    raise AttributeError(f"module 'reach_pydantic_ai' has no attribute {name!r}")


install()
