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
  or same-origin through DNS rebinding;
* an ``Authorization`` header that is not exactly one configured token (:func:`bearer_agent`):
  a wrong scheme, ``Bearer`` with nothing after it, two headers, a token with junk around it;
  these used to fall back to the anonymous agent, as if no header had been sent;
* many failed tokens from one client, which are guesses (:class:`TokenFailures`);
* client-chosen ids (call ids, run ids, idempotency keys) of any length or characters
  (:func:`client_id_problem`), which end up in logs, the audit trail and the console;
* a client address taken from headers the client wrote itself (:class:`TrustedProxies`):
  ``X-Forwarded-For`` is read only from the proxies ``trusted_proxies`` names, else a
  guesser rotates the address the failed-token count is kept by.
"""

from __future__ import annotations

import hmac
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .errors import ConfigError

__all__ = ["MAX_CLIENT_ID", "MIN_TOKEN_CHARS", "UVICORN_LIMITS", "BadToken", "TokenFailures", "TrustedProxies",
           "bearer_agent", "check_proxies", "check_token", "client_id_problem", "forwarded_client", "require_agents",
           "tokenless_refusal", "uvicorn_options"]

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


class BadToken(Exception):
    """An ``Authorization`` header that names no agent: answer 401 with ``str(exc)``, never fall back
    to the anonymous agent (a client that sent a header meant to be someone)."""


def bearer_agent(values: Sequence[str], tokens: Sequence[tuple[bytes, str]]) -> str | None:
    """The agent of a request's ``Authorization`` header(s), ``None`` when it sent none.

    ``values`` are the header's values as the server decoded them (latin-1: one character a
    byte, Starlette's ``Headers.getlist("authorization")``); ``tokens`` the configured tokens
    as UTF-8 bytes with their agents. Anything but exactly one header of the form
    ``Bearer <token>`` (the scheme in any case, spaces or tabs after it) whose token is a
    configured one, byte for byte, raises :class:`BadToken`: another scheme (``Basic``,
    ``Token``), ``Bearer`` alone, an empty header, two headers, a token with characters
    around it (a no-break space, a second token). Each configured token is compared in
    constant time, all of them every time (no timing hint of which one nearly matched).
    A token with non-ASCII characters matches when the client sends it as UTF-8.
    """
    if not values:
        return None
    if len(values) > 1:
        raise BadToken("send one Authorization header, not several")
    value = values[0].strip(" \t")  # what the server already trims (optional whitespace)
    end = next((i for i, ch in enumerate(value) if ch in " \t"), len(value))
    scheme, given = value[:end], value[end:].lstrip(" \t")  # the token as sent, inner spaces kept
    if scheme.lower() != "bearer":
        raise BadToken("use Authorization: Bearer <token> (other schemes are not accepted)")
    if not given:
        raise BadToken("Authorization: Bearer carries no token; send Bearer <token>")
    try:
        raw = given.encode("latin-1")  # the bytes the client sent
    except UnicodeEncodeError:
        raw = given.encode("utf-8", "surrogatepass")
    found = None
    for known, agent in tokens:
        if hmac.compare_digest(known, raw):
            found = agent
    if found is None:
        raise BadToken("unknown bearer token")
    return found


class TokenFailures:
    """Failed token attempts per client address, to slow guessing: ``limit`` in ``window`` seconds,
    then ``retry_after`` says how long that client waits (HTTP 429 with ``Retry-After``).

    Owned by one app instance (nothing global), and bounded: at most ``clients`` addresses are
    remembered, the least recently failing forgotten first. IPv6 clients are counted by their
    /64, which one host usually holds whole. A blocked client's token is not even read, so
    the answer (429) says nothing about whether a guess was right, and a valid token sent in
    between does not reset the count (an agent with a token of its own could otherwise guess an
    operator's between its own calls). The block ends with the window: the holder of the valid
    token is kept out for at most ``window`` seconds after the last counted failure.
    """

    def __init__(self, limit: int = 30, window: float = 60.0, clients: int = 10_000,
                 clock: Callable[[], float] | None = None) -> None:
        import time
        from collections import OrderedDict

        self.limit, self.window, self.clients = limit, window, clients
        self._clock = clock or time.monotonic
        self._seen: OrderedDict[str, tuple[float, int]] = OrderedDict()  # client -> (window start, failures)

    @staticmethod
    def client_key(address: str | None) -> str:
        """The counted unit of a peer address: the address, or the /64 of an IPv6 one."""
        import ipaddress

        if not address:
            return "?"
        try:
            ip = ipaddress.ip_address(address.split("%")[0])
        except ValueError:
            return address[:64]
        if isinstance(ip, ipaddress.IPv6Address):
            if ip.ipv4_mapped is not None:
                return str(ip.ipv4_mapped)
            return str(ipaddress.ip_network(f"{ip}/64", strict=False))
        return str(ip)

    def retry_after(self, address: str | None) -> int | None:
        """Whole seconds ``address`` must wait before its token is read again, or ``None``."""
        entry = self._seen.get(self.client_key(address))
        if entry is None:
            return None
        start, count = entry
        left = start + self.window - self._clock()
        if left <= 0 or count < self.limit:
            return None
        return max(1, math.ceil(left))

    def failed(self, address: str | None) -> None:
        """Count one failed token from ``address``."""
        key, now = self.client_key(address), self._clock()
        start, count = self._seen.pop(key, (now, 0))
        if start + self.window <= now:
            start, count = now, 0
        self._seen[key] = (start, count + 1)
        while len(self._seen) > self.clients:
            self._seen.popitem(last=False)


#: The longest call id or run id a client may choose (an idempotency key may have ``checked_key``'s 512).
MAX_CLIENT_ID = 256


def client_id_problem(field: str, value: object, limit: int = MAX_CLIENT_ID) -> str | None:
    """Why a client-chosen id (``id``, ``run_id``, ``idempotency_key``, an MCP request id) is refused,
    or ``None``. Such ids are written to logs, the audit trail, the ledger and the console, and
    link runs together: a line break forges a log line, an invisible or bidi character makes two
    ids look alike, and 100,000 characters fill every record they touch. So: a string of 1 to
    ``limit`` printable characters (``str.isprintable``: no control, line-break, format or
    non-ASCII space characters; letters of any script, ``/``, ``:``, ``.`` and spaces are fine)."""
    if not isinstance(value, str):
        return f"`{field}` must be a string"
    if not value:
        return f"`{field}` is empty; send 1-{limit} printable characters or leave the field out"
    if len(value) > limit:
        return f"`{field}` has {len(value)} characters; send at most {limit}"
    if not value.isprintable():
        return (f"`{field}` holds a control, line-break or invisible character; send 1-{limit} printable "
                "characters")
    return None


#: Bounds for the uvicorn server of ``reach serve http`` and ``reach serve mcp --http``:
#: the h11 parser (httptools has no bound on a request head of its own that reach can set), a request
#: head of at most 16 KiB, idle keep-alive connections closed after 5 s, at most 1,000
#: connections and requests at once (each may buffer a body), more answered 503, and uvicorn's
#: own ``X-Forwarded-For`` handling off: it believes that header from 127.0.0.1 by default, so any
#: client on the same host chose the address its failed tokens were counted by
#: (:class:`TrustedProxies` reads it, from the proxies the settings name, and only those).
#: :func:`uvicorn_options` adds the deadline for a request's head.
UVICORN_LIMITS: dict[str, Any] = {
    "http": "h11",
    "h11_max_incomplete_event_size": 16 * 1024,
    "timeout_keep_alive": 5,
    "limit_concurrency": 1000,
    "proxy_headers": False,
}


def uvicorn_options(read_timeout: float) -> dict[str, Any]:
    """``UVICORN_LIMITS`` with uvicorn's h11 protocol replaced by one that gives a client
    ``read_timeout`` seconds to send a request's head, then closes the connection.

    uvicorn has no such timeout: a connection that sends nothing, or a byte a minute of its
    head, was held until the client gave up, and 1,000 of them made the server answer 503 to
    everyone (its keep-alive timer starts only after a response, and any byte stops it). The
    clock starts when the connection opens and again when a response is complete (the next
    head, or the rest of a body the app did not read, must come within it); it stops once a
    head has arrived. Reading the body is the app's to bound (it answers 408): the app is
    the one waiting for it."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadDeadline(H11Protocol):  # type: ignore[misc]
        _head_timer: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._watch()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._watch()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop()
            super().connection_lost(exc)

        def _waiting(self) -> bool:
            """No head yet, or the app is done with the request: only the client can move."""
            done = self.cycle is not None and self.cycle.response_complete
            return self.conn.their_state is h11.IDLE or done

        def _watch(self) -> None:
            if not self._waiting():
                self._stop()
            elif self._head_timer is None and not self.transport.is_closing():
                self._head_timer = self.loop.call_later(read_timeout, self._expired)

        def _stop(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expired(self) -> None:
            self._head_timer = None
            if self._waiting() and not self.transport.is_closing():
                self.logger.info("closing a connection that sent no complete request head in %g s", read_timeout)
                self.transport.close()

    return {**UVICORN_LIMITS, "http": HeadDeadline}


# ---------------------------------------------------------------- client addresses behind proxies

def check_proxies(entries: Sequence[str]) -> list[str]:
    """``entries`` if each is an IP address or network (``127.0.0.1``, ``10.0.0.0/8``, ``fd00::/8``);
    else ``ValueError`` naming the entry (for a pydantic validator of ``trusted_proxies``).

    These are the peers whose ``X-Forwarded-For`` is believed, so a mistake is refused rather
    than guessed at: ``*`` (uvicorn's "trust everyone") would let any client choose the address
    the failed-token count is kept by; a host name is not resolved per request; ``10.0.0.1/8``
    has host bits set and probably meant ``10.0.0.0/8``; invisible characters pasted with an
    address make it another string."""
    import ipaddress

    from .config_problems import look_alike, shown

    for entry in entries:
        if entry.strip() == "*":
            raise ValueError("'*' would believe the X-Forwarded-For of every client, so anyone "
                             "could choose the address its failed tokens are counted by; list the addresses or "
                             "networks of your reverse proxies (e.g. 127.0.0.1, 10.0.0.0/8)")
        if entry.strip().lower() == "localhost":
            raise ValueError("'localhost' is a name, not an address; use '127.0.0.1' and '::1'")
        try:
            given = ipaddress.ip_network(entry, strict=True)
        except ValueError:
            given = None
        if given is not None and given.prefixlen == 0:  # 0.0.0.0/0, ::/0: every client, as '*'
            raise ValueError(f"{shown(entry)} is every address: the X-Forwarded-For of every client would be "
                             "believed, so anyone could choose the address its failed tokens are counted by; "
                             "list the addresses or networks of your reverse proxies (e.g. 127.0.0.1, 10.0.0.0/8)")
        if given is not None:
            continue
        try:
            net = ipaddress.ip_network(look_alike(entry, space=""), strict=False)
            meant = str(net.network_address if net.prefixlen == net.max_prefixlen else net)
        except ValueError:
            meant = None
        if meant is not None and entry == look_alike(entry, space=""):
            raise ValueError(f"{shown(entry)} has host bits set; did you mean {meant!r}?")
        hint = f"; did you mean {meant!r}?" if meant else ""
        raise ValueError(f"{shown(entry)} is not an IP address or network (write 127.0.0.1, "
                         f"10.0.0.0/8 or fd00::/8){hint}")
    return list(entries)


def _address(text: str) -> Any:
    """The IP address of one ``X-Forwarded-For`` hop (``1.2.3.4``, ``1.2.3.4:80``, ``::1``, ``[::1]:80``),
    IPv4-mapped IPv6 as IPv4; ``None`` for anything else (``unknown``, an obfuscated ``_id``, garbage)."""
    import ipaddress

    text = text.strip(" \t")
    if not text or len(text) > 64:
        return None
    if text.startswith("["):
        inner, bracket, rest = text[1:].partition("]")
        if not bracket or rest and not (rest.startswith(":") and rest[1:].isascii() and rest[1:].isdigit()):
            return None
        text = inner
    elif text.count(":") == 1:
        text, _, port = text.partition(":")
        if not (port.isascii() and port.isdigit()):
            return None
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def forwarded_client(peer: str | None, forwarded_for: Sequence[str], trusted: Sequence[Any]) -> str | None:
    """The client address of a request from ``peer`` carrying the ``X-Forwarded-For`` values
    ``forwarded_for``, believing only the proxies in ``trusted`` (``ipaddress`` networks).

    Each proxy appends the address it was connected from, so the list is read from the right:
    while the address reached so far is a trusted proxy, the hop before it is taken; the first
    untrusted address is the client. What a client wrote itself (any hops left of that) is never
    read, nor is anything from a peer that is not a trusted proxy. A hop that is no address
    stops the walk at the last address a trusted proxy vouched for. ``Forwarded:`` and
    ``X-Real-IP`` are not read: one header, one rule (nginx: ``$proxy_add_x_forwarded_for``)."""
    current = _address(peer or "")
    if current is None:
        return peer
    hops = [hop for value in forwarded_for for hop in value.split(",")]
    for hop in reversed(hops):
        if not any(current in net for net in trusted if net.version == current.version):
            break
        before = _address(hop)
        if before is None:
            break
        current = before
    return str(current)


class TrustedProxies:
    """ASGI middleware: the request's ``client`` (and ``scheme``) as the trusted proxies in front say.

    Every place that reads a client address (the failed-token count of ``reach serve http``,
    its console login, ``reach serve mcp``'s token gate) reads ``scope["client"]``; this sets
    it once, by :func:`forwarded_client`, so none of them can believe a header the client
    wrote. With no ``trusted`` networks the peer is the client and no header is read. A
    trusted peer's ``X-Forwarded-Proto`` (``http``/``https``) becomes the scheme (the
    console's ``Secure`` cookie). uvicorn's own proxy handling must be off
    (``UVICORN_LIMITS``): by default it believes ``X-Forwarded-For`` from 127.0.0.1, so any
    client on the same host could pick its address."""

    def __init__(self, app: Any, trusted: Sequence[str]) -> None:
        import ipaddress

        self.app = app
        self.trusted = [ipaddress.ip_network(entry) for entry in check_proxies(trusted)]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        client = scope.get("client")
        if self.trusted and scope.get("type") in ("http", "websocket") and client:
            peer = _address(client[0] or "")
            if peer is not None and any(peer in net for net in self.trusted if net.version == peer.version):
                headers = scope.get("headers") or ()
                hops = [v.decode("latin-1") for k, v in headers if k == b"x-forwarded-for"]
                protos = [v.decode("latin-1").strip(" \t").lower() for k, v in headers if k == b"x-forwarded-proto"]
                scope = dict(scope)
                address = forwarded_client(client[0], hops, self.trusted)
                if address != client[0]:
                    scope["client"] = (address, 0)
                if len(protos) == 1 and protos[0] in ("http", "https") and scope["type"] == "http":
                    scope["scheme"] = protos[0]
        await self.app(scope, receive, send)
