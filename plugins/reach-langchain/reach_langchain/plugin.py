"""Entry point of reach-langchain (group ``reach``).

The plugin adds nothing to ``Reach``: the bridge is a function that takes one,
``reach_langchain.tools(reach, ...)``. A call a person approved through the LangGraph interrupt
counts as approved in reach's pipeline through ``reach_core.approvals`` (no hook
needed here).
"""

from __future__ import annotations
