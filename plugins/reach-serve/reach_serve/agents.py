"""Every agent the settings name must be one config defines: a typo fails, it never widens.

reach gives an agent it has no ``[agents.NAME]`` table for the ``default`` agent's
rights, which are usually wider than those of the restricted agent a token was meant
for. ``tokens = { "tok-…" = "suport" }`` next to ``[agents.support] allow = [...]``
therefore handed that client ``default``'s tools, silently; so did a misspelt
``anonymous_agent``. reach-mcp's server refuses such names; reach-serve does the same
when its app is built, by the same rule (``reach_core.tokens.require_agents``).
``default`` may always be named explicitly.
"""

from __future__ import annotations

from typing import Any

from reach_core.tokens import require_agents

from .settings import ServeHttpSettings

__all__ = ["check_agents"]


def check_agents(reach: Any, settings: ServeHttpSettings) -> None:
    """Raise ``ConfigError`` for a token's agent, ``anonymous_agent`` or operator without a table."""
    named = [(f"tokens/clients (a token's agent {a!r})", a) for a in settings.token_agents().values()]
    if settings.anonymous_agent is not None:
        named.append(("anonymous_agent", settings.anonymous_agent))
    named += [("operators", a) for a in settings.operators]
    require_agents(reach, named, "plugins.reach-serve")
