"""Entry point of reach-openai-agents (group ``reach``).

Loading the plugin gives ``Reach`` its ``as_openai_agents_tools`` method. A call a person
approved through the Agents SDK approval counts as approved in reach's
pipeline through ``reach_core.approvals`` (no hook needed here).
"""

from __future__ import annotations

from .methods import install

install()
