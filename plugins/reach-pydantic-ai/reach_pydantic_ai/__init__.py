"""reach-pydantic-ai: reach's guarded tools inside a pydantic-ai agent.

::

    from pydantic_ai import Agent
    import reach_pydantic_ai

    agent = Agent(model, toolsets=[reach_pydantic_ai.toolset(reach, agent="support")])

Every call still runs through ``reach.invoke`` (validation, policy, confirmation,
guard rails, shaping, audit). pydantic-ai itself is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bridge import ReachToolset, as_pydantic_ai_toolset

    toolset = as_pydantic_ai_toolset

__all__ = ["ReachToolset", "toolset"]


def __getattr__(name: str) -> Any:
    # The bridge (and pydantic-ai) load on first use; ``toolset`` is ``bridge.as_pydantic_ai_toolset``.
    if name in __all__:
        from . import bridge

        return getattr(bridge, "as_pydantic_ai_toolset" if name == "toolset" else name)
    raise AttributeError(f"module 'reach_pydantic_ai' has no attribute {name!r}")
