"""reach-openai-agents: reach's guarded tools inside an OpenAI Agents SDK agent.

::

    from agents import Agent, Runner
    import reach_openai_agents

    agent = Agent(name="support", tools=reach_openai_agents.tools(reach, agent="support"))
    result = await Runner.run(agent, "北京天气怎么样？")

Every call still runs through ``reach.invoke`` (validation, policy, confirmation,
guard rails, shaping, audit). The SDK itself is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bridge import as_openai_agents_tools, strict_compatible

    tools = as_openai_agents_tools

__all__ = ["strict_compatible", "tools"]


def __getattr__(name: str) -> Any:
    # The bridge (and the OpenAI Agents SDK) load on first use; ``tools`` is ``bridge.as_openai_agents_tools``.
    if name in __all__:
        from . import bridge

        return getattr(bridge, "as_openai_agents_tools" if name == "tools" else name)
    raise AttributeError(f"module 'reach_openai_agents' has no attribute {name!r}")
