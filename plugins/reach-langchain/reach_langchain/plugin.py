"""Entry point of reach-langchain (group ``reach``).

Loading the plugin gives ``Reach`` its ``as_langchain_tools`` method. A call a person
approved through the LangGraph interrupt counts as approved in reach's
pipeline through ``reach_core.approvals`` (no hook needed here).
"""

from __future__ import annotations

from .methods import install

install()
