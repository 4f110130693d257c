"""Entry point of reach-openai-agents (group ``reach``).

The plugin adds nothing to ``Reach``: the bridge is a function that takes one,
``reach_openai_agents.tools(reach, ...)``. A call a person approved through the Agents SDK approval
counts as approved in reach's pipeline through ``reach_core.approvals`` (no hook
needed here).
"""

from __future__ import annotations
