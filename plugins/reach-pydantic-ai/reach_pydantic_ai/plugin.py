"""Entry point of reach-pydantic-ai (group ``reach``).

Loading the plugin gives ``Reach`` its ``as_pydantic_ai_toolset`` method. A call a person
approved through the pydantic-ai deferred approval counts as approved in reach's
pipeline through ``reach_core.approvals`` (no hook needed here).
"""

from __future__ import annotations

from .methods import install

install()
