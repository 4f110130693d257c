"""Bearer tokens and the agents they name: one rule for every front-end that serves reach.

reach-serve's HTTP API and reach-mcp's server both map ``tokens = {"<token>" = "agent"}``
(and ``clients`` entries) to reach agents, and both must refuse the same mistakes:

* a token a client could send without knowing it: an empty one (the servers strip what
  the client sends and decode header bytes as latin-1, so ``tokens = {"" = "ops"}`` let
  ``Bearer \\xa0`` in as ``ops``) or a short one, which is guessed; and one with spaces
  or line breaks around it, which the stripped header could never match;
* an agent name with no ``[agents.NAME]`` table: reach gives such an agent the
  ``default`` agent's rights, usually wider than those of the restricted agent a token
  was meant for, so a typo (``"suport"`` for ``[agents.support]``) widened rights silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import ConfigError

__all__ = ["MIN_TOKEN_CHARS", "check_token", "require_agents"]

#: The shortest bearer token a front-end accepts, in ``tokens`` and ``clients`` alike.
MIN_TOKEN_CHARS = 8


def check_token(token: str) -> str:
    """``token`` if a front-end may accept it; else ``ValueError`` (for a pydantic validator)."""
    if token != token.strip():
        raise ValueError("a token has spaces or line breaks around it, which reach strips from the "
                         "Authorization header: it could never match; remove them")
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"a token must be at least {MIN_TOKEN_CHARS} characters (an empty or short token "
                         "is guessed); use a long random secret, e.g. { env = \"OPS_TOKEN\" }")
    return token


def require_agents(reach: Any, named: Iterable[tuple[str, str]], table: str) -> None:
    """Raise ``ConfigError`` for the first ``(where, agent)`` of ``named`` whose agent has no
    ``[agents.NAME]`` table in ``reach``'s config (``default`` may always be named), with the
    name probably meant. ``table`` names the settings table in the message."""
    import json

    from .config_problems import look_alike, oddities, shown

    known = set(getattr(getattr(reach, "config", None), "agents", None) or {})
    for where, name in named:
        if name == "default" or name in known:
            continue
        meant = look_alike(name).casefold()
        close = sorted(k for k in [*known, "default"] if k.casefold() in (name.casefold(), meant))
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        key = json.dumps(name) if oddities(name) else name  # [agents."support\u200b"]: the key as TOML writes it
        raise ConfigError(
            f"[{table}] {where} names the agent {shown(name)}{hint}, but there is no [agents.{key}] table, so "
            f"whoever uses it would get the `default` agent's rights; define [agents.{key}] (its allow-list "
            f"decides what it may do) or name \"default\" explicitly"
        )
