"""reach-openai-agents: reach's guarded tools inside an OpenAI Agents SDK agent.

::

    from agents import Agent, Runner
    from reach_openai_agents import as_openai_agents_tools

    agent = Agent(name="support", tools=as_openai_agents_tools(reach, agent="support"))
    result = await Runner.run(agent, "北京天气怎么样？")

Every call still runs through ``reach.invoke`` (validation, policy, confirmation,
guard rails, shaping, audit). Importing this package also gives ``Reach`` an
``as_openai_agents_tools`` method (see :func:`install`). The SDK itself is
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .methods import install

if TYPE_CHECKING:
    from .tools import as_openai_agents_tools, strict_compatible

__all__ = ["as_openai_agents_tools", "install", "strict_compatible"]


def __getattr__(name: str) -> Any:
    if name in ("as_openai_agents_tools", "strict_compatible"):
        from . import tools

        return getattr(tools, name)
    raise AttributeError(f"module 'reach_openai_agents' has no attribute {name!r}")


install()
