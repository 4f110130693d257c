"""Bearer tokens and the agents they name: one rule for every front-end that serves reach.

reach-serve's HTTP API and reach-mcp's server both map ``tokens = {"<token>" = "agent"}``
(and ``clients`` entries) to reach agents, and both must refuse the same mistakes:

* a token a client could send without knowing it: an empty one (the servers strip what
  the client sends and decode header bytes as latin-1, so ``tokens = {"" = "ops"}`` let
  ``Bearer \\xa0`` in as ``ops``) or a short one, which is guessed; and one with spaces
  or line breaks around it, which the stripped header could never match;
* an agent name with no ``[agents.NAME]`` table: reach gives such an agent the
  ``default`` agent's rights, usually wider than those of the restricted agent a token
  was meant for, so a typo (``"suport"`` for ``[agents.support]``) widened rights silently;
* a request without a token that a web page sent (:func:`tokenless_refusal`): cross-site,
  or same-origin through DNS rebinding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ConfigError

__all__ = ["MIN_TOKEN_CHARS", "check_token", "require_agents", "tokenless_refusal"]

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


def _split_host(host: str) -> tuple[str, str] | None:
    """``(name, port)`` of a ``Host`` value (``name``, ``name:port``, ``[v6]:port``), lower-cased,
    without a trailing dot; ``None`` when it is no such value."""
    name, port = host.strip().lower(), ""
    if name.startswith("["):
        name, _, rest = name[1:].partition("]")
        if rest:
            if not rest.startswith(":"):
                return None
            port = rest[1:]
    elif name.count(":") == 1:
        name, port = name.split(":")
    if port and port != "*" and not (port.isascii() and port.isdigit()):
        return None
    return name.rstrip("."), port


def _known_host(host: str, allowed: set[str]) -> bool:
    """``host`` names an IP address, ``localhost`` or one of the ``allowed`` names (any port)."""
    import ipaddress  # here: this module is read at config time, this only when a request comes

    split = _split_host(host)
    if split is None:
        return False
    name = split[0]
    if name == "localhost" or name in allowed:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def tokenless_refusal(headers: Mapping[str, str], allowed_hosts: Iterable[str], table: str) -> str | None:
    """Why a request *without a token* must be refused (``None``: it may go on).

    Without a token nothing secret proves who sends a request, so any web page the user
    opens could: a cross-site ``POST`` with ``Content-Type: text/plain`` needs no CORS
    preflight (request forgery), and a page whose name the attacker re-points at this
    machine (DNS rebinding) is even same-origin with the server, so it sends JSON and reads
    the answers. So the request must name the server in ``Host`` by IP address, ``localhost``
    or an ``allowed_hosts`` name (a rebound name is none of these; entries may carry a port,
    ``name:443`` or ``name:*``, which is not compared here), and a browser's
    ``Origin``/``Sec-Fetch-Site`` must not say another site sent it. ``headers`` has
    lower-case names (Starlette's ``Headers``); ``table`` names the settings table.
    """
    from urllib.parse import urlsplit

    allowed = {split[0] for h in allowed_hosts if (split := _split_host(h)) is not None}
    host = headers.get("host")
    if host is not None and not _known_host(host, allowed):
        return (f"requests without a token must address this server by IP address, localhost or a name in "
                f"[{table}] allowed_hosts; send Authorization: Bearer <token>")
    origin = headers.get("origin")
    site = headers.get("sec-fetch-site", "same-origin").strip().lower()
    cross = site not in ("same-origin", "none")
    if origin is not None:  # the X-Forwarded-Host a TLS proxy in front sets (a page cannot set it cross-site)
        here = {(host or "").strip().lower(), headers.get("x-forwarded-host", "").strip().lower()}
        netloc = urlsplit(origin.strip()).netloc.lower()
        cross = cross or origin.strip().lower() == "null" or not netloc or netloc not in here
    if cross:
        return ("a request without a token sent by a web page of another site is refused; "
                "send Authorization: Bearer <token>")
    return None
