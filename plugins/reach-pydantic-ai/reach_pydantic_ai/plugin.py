"""Entry point of reach-pydantic-ai (group ``reach``).

The plugin adds nothing to ``Reach``: the bridge is a function that takes one,
``reach_pydantic_ai.toolset(reach, ...)``. A call a person approved through the pydantic-ai deferred approval
counts as approved in reach's pipeline through ``reach_core.approvals`` (no hook
needed here).
"""

from __future__ import annotations
