"""Every agent the settings name must be one config defines: a typo fails, it never widens.

reach gives an agent it has no ``[agents.NAME]`` table for the ``default`` agent's
rights, which are usually wider than those of the restricted agent a token was meant
for. ``tokens = { "tok-…" = "suport" }`` next to ``[agents.support] allow = [...]``
therefore handed that client ``default``'s tools, silently; so did a misspelt
``anonymous_agent``. reach-mcp's server refuses such names; reach-serve does the same
when its app is built. ``default`` may always be named explicitly.
"""

from __future__ import annotations

from typing import Any

from reach_core import ConfigError

from .settings import ServeHttpSettings

__all__ = ["check_agents"]


def check_agents(reach: Any, settings: ServeHttpSettings) -> None:
    """Raise ``ConfigError`` for a token's agent, ``anonymous_agent`` or operator without a table."""
    known = set(getattr(getattr(reach, "config", None), "agents", None) or {})
    named = [(f"tokens/clients (a token's agent {a!r})", a) for a in settings.token_agents().values()]
    if settings.anonymous_agent is not None:
        named.append(("anonymous_agent", settings.anonymous_agent))
    named += [("operators", a) for a in settings.operators]
    for where, name in named:
        if name == "default" or name in known:
            continue
        close = sorted(k for k in known if k.casefold() == name.casefold() or k.strip() == name.strip())
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(
            f"[plugins.reach-serve] {where} names the agent {name!r}{hint}, but there is no "
            f"[agents.{name}] table, so its requests would get the `default` agent's rights; define "
            f"[agents.{name}] (its allow-list decides what it may do) or name \"default\" explicitly"
        )
