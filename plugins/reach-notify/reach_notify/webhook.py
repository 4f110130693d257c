"""Posting one Slack-compatible JSON message to a webhook URL.

The URL never appears in a message or a log line: webhook URLs usually carry
their own token. Redirects are not followed, so a webhook cannot bounce the
message to a host nobody configured.

The host goes through reach-http's SSRF guard (one rule for every plugin that
opens connections): resolved once, every answer checked (loopback, private,
special-purpose ranges refused unless the webhook sets ``allow_private`` or its URL
names such an address itself, see :func:`written_as_address`; cloud metadata
always), and the connection pinned to the checked address, so a DNS answer that
changes between check and connect (rebinding) changes nothing.
Environment proxies and ``~/.netrc`` are never consulted (``trust_env`` off); a
webhook that needs a proxy names it in its own ``proxy`` setting.
"""

from __future__ import annotations

import functools
import math
import re
import ssl
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # httpx and the guard are imported by the first post, not when the plugin loads
    import httpx
    from reach_http.guard import AddressGuard

from reach_core import BusinessError, RateLimited, RetryableError, ToolFailure

_BODY_EXCERPT = 200
_RAW_HEAD = 4096


@dataclass(frozen=True)
class WebhookTarget:
    """Resolved channel settings (secrets already read)."""

    channel: str
    url: str
    headers: dict[str, str]
    text_field: str
    idempotency_header: str | None
    timeout: float
    allow_private: bool | None = None
    proxy: str | None = None
    allow_mentions: bool = False


# Slack ``<!...>``/``<@...>``, Teams ``<at>``/``<at id=..>``, Google Chat ``<users/...>``
_MENTION_OPENER = re.compile(r"<(?=[!@]|at[\s>/]|users/)", re.IGNORECASE)
# No word boundary after the word: Discord pings for ``@everyone1`` or ``@here_`` as well.
_BROADCAST = re.compile(r"@(?=(everyone|here|channel))", re.IGNORECASE)
# An ``@`` that starts a word (not one inside ``ops@example.com``; ``_`` starts a word for
# Rocket.Chat), followed by anything but whitespace: ``@all``, ``@room``, ``@**all**``, ``@alice``.
# Not after ``/``: ``https://medium.com/@alice`` is a link, and a zero-width space would break it.
_WORD_START_AT = re.compile(r"(?<![^\W_])(?<!/)@(?=[^\s\u200b])")
_ZWSP = "\u200b"


def neutralise_mentions(text: str) -> str:
    """``text`` with every mention a chat service would expand broken by a zero-width space.

    Slack expands ``<!channel>``, ``<!here>``, ``<!subteam^...>`` and ``<@U123>``;
    Discord ``@everyone``, ``@here`` (anywhere, even inside a word), ``<@id>``, ``<@&role>``;
    Teams ``<at>``; Google Chat ``<users/all>``, ``<users/123>``; Mattermost and Rocket.Chat
    ``@all``, ``@channel``, ``@alice``; Matrix ``@room``; Zulip ``@**all**``, ``@**Alice**``.
    A model that was told (by a prompt injection, say) to page everyone or someone would
    otherwise do so. The text reads the same; the service sees no mention.
    """
    text = _MENTION_OPENER.sub("<" + _ZWSP, text)
    text = _WORD_START_AT.sub("@" + _ZWSP, text)
    return _BROADCAST.sub("@" + _ZWSP, text)


def written_as_address(host: str) -> bool:
    """True when the URL's host is an IP address or ``localhost`` as the operator wrote it.

    Such a URL says where it goes: the operator chose that address, so with
    ``allow_private`` unset it may be private (a receiver on this machine, an in-house
    chat server). A *name* gets no such trust: its DNS answer can change (rebinding)
    and lead a webhook that looked public into the internal network.
    """
    import ipaddress

    bare = host.strip("[]").rstrip(".").lower()
    if bare == "localhost":
        return True
    try:
        ipaddress.ip_address(bare)
    except ValueError:
        return False
    return True


def new_guard() -> AddressGuard:
    """The address guard of reach-http, resolving with the system's resolver."""
    from reach_http.guard import AddressGuard

    return AddressGuard()


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a webhook or proxy URL (reach-http's strict reading), or None."""
    from reach_http.settings import url_problem as http_url_problem

    return http_url_problem(url, allow_query=True)


async def post(
    target: WebhookTarget,
    text: str,
    idempotency_key: str | None,
    transport: httpx.AsyncBaseTransport | None = None,
    guard: AddressGuard | None = None,
) -> int:
    """Send `text`; return the HTTP status of an accepted message, raise otherwise.

    ``transport`` replaces the network (offline tests): then no address is checked.
    """
    import httpx
    from reach_http.guard import HostRefused, HostUnresolved
    from reach_http.headers import header_value
    from reach_http.transport import PinnedTransport

    headers = dict(target.headers)
    if idempotency_key and target.idempotency_header:
        # one ASCII line whatever the key holds (a tool-call id may carry CR/LF or non-ASCII)
        headers[target.idempotency_header] = header_value(idempotency_key)
    where = f"the `{target.channel}` webhook"
    if not target.allow_mentions:
        text = neutralise_mentions(text)
    if transport is None:
        url = httpx.URL(target.url)
        host = url.raw_host.decode("ascii")
        try:
            address = await (guard or new_guard()).check_within(
                target.timeout, url.scheme, host, url.port or (443 if url.scheme == "https" else 80),
                allow_private=(written_as_address(host) if target.allow_private is None
                               else target.allow_private),
            )
        except HostUnresolved:
            raise RetryableError(
                f"the host of {where} could not be resolved; nothing was sent. Try again later."
            ) from None
        except HostRefused as exc:
            raise BusinessError(
                f"refused to post to {where}: {exc}; nothing was sent. Do not retry; tell the user "
                "the webhook's address is not allowed"
            ) from None
        if target.proxy is None:
            transport = PinnedTransport({host.lower(): str(address)})
    if transport is None:  # through the webhook's own proxy
        transport = httpx.AsyncHTTPTransport(proxy=target.proxy, verify=_tls_context(), trust_env=False)
    # The client only builds the request (its default headers, the timeout); the transport
    # sends it. AsyncClient.send logs every request's URL at INFO on the ``httpx`` logger,
    # and a webhook's URL is its token: a host logging at INFO kept every token.
    builder = httpx.AsyncClient(timeout=target.timeout, trust_env=False)
    request = builder.build_request("POST", target.url, json={target.text_field: text}, headers=headers)
    await builder.aclose()
    try:
        async with transport:
            response = await transport.handle_async_request(request)
            try:
                status = response.status_code
                raw = b"" if 200 <= status < 300 else await _head_of_body(response)
            finally:
                await response.aclose()
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as error:
        raise RetryableError(
            f"{where} could not be reached ({type(error).__name__}); nothing was sent. "
            "Try again later."
        ) from error
    except httpx.TransportError as error:
        raise ToolFailure(
            f"the connection to {where} broke after the message was sent "
            f"({type(error).__name__}); it may or may not have arrived. Do not send it "
            "again without asking the user.",
            code="outcome_unknown",
        ) from error
    if 200 <= status < 300:
        return status
    excerpt = _excerpt(raw, response.headers.get("content-encoding", ""), secret_pieces(target))
    if status == 429:
        raise RateLimited(_retry_after(response), message=f"{where} says slow down (HTTP 429)")
    if status >= 500:
        # The receiver failed while handling the post: it may have reached the channel (a
        # gateway's 502/504, Slack's 500 after posting). outcome_unknown is kept by the core's
        # ledger, so the same call repeated in a run is not posted again (a retryable code
        # was not, and was).
        raise ToolFailure(
            f"{where} failed with HTTP {status}; delivery is not confirmed. Check with the "
            "user before sending again.",
            code="outcome_unknown",
        )
    raise BusinessError(
        f"{where} refused the message with HTTP {status}"
        + (f": {excerpt}" if excerpt else "")
        + ". Do not resend it unchanged."
    )


async def _head_of_body(response: httpx.Response) -> bytes:
    """The first few kilobytes of the answer as sent (still encoded), the rest never read.

    The answer only serves the excerpt in an error. Read whole (and decoded by httpx,
    each network chunk in one unbounded ``decompress``) a webhook answering with an
    endless body or a gzip bomb (200 KB on the wire, 200 MB decoded) filled memory.
    """
    head = bytearray()
    async for chunk in response.aiter_raw():
        head += chunk
        if len(head) >= _RAW_HEAD:
            break
    return bytes(head[:_RAW_HEAD])


def _excerpt(raw: bytes, content_encoding: str, secrets: tuple[str, ...] = ()) -> str:
    """At most ``_BODY_EXCERPT`` printable characters of the answer, decoded within a budget,
    with every piece of ``secrets`` (see :func:`secret_pieces`) replaced by ``[redacted]``."""
    cut = len(raw) >= _RAW_HEAD
    encodings = [e.strip().lower() for e in content_encoding.split(",") if e.strip() not in ("", "identity")]
    if encodings:
        if len(encodings) > 1 or encodings[0] not in ("gzip", "x-gzip", "deflate"):
            return ""  # an encoding reach does not undo here: no excerpt rather than bytes
        wbits = -zlib.MAX_WBITS if encodings[0] == "deflate" and not _zlib_header(raw) else 47
        try:
            decoder = zlib.decompressobj(wbits)
            raw = decoder.decompress(raw, _BODY_EXCERPT * 4)
        except zlib.error:
            return ""
        cut = cut or bool(decoder.unconsumed_tail)
    # redacted before anything is cut or collapsed, so no cut can keep half a secret
    text = redact(raw.decode("utf-8", "replace"), secrets)
    # the model reads this: no control characters, line breaks or escape sequences from the server
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    if cut:  # the answer went on: its last characters may be the start of a secret
        text = _drop_secret_start(text, secrets)
    return text[:_BODY_EXCERPT].strip()


_REDACTED = "[redacted]"
_MIN_SECRET = 8
_PLAIN_WORD = re.compile(r"[a-z][a-z-]*")


def secret_pieces(target: WebhookTarget) -> tuple[str, ...]:
    """What of ``target`` may be a credential, longest first: the URL, its path, each path
    segment and query value, each header value and its words, as written and percent-decoded.

    A chat webhook's URL is its credential (``/services/T0/B0/<token>``, ``?token=...``),
    and servers repeat the request in their error answers (Express: ``Cannot POST
    /services/T0/B0/<token>``). Pieces shorter than 8 characters, and plain lowercase
    words such as ``services`` or ``webhooks``, are no secret and stay readable.
    """
    from urllib.parse import unquote, unquote_plus, urlsplit

    parts = urlsplit(target.url)
    raw = [target.url, parts.path, parts.query, parts.fragment, *parts.path.split("/")]
    for pair in parts.query.split("&"):
        raw += pair.split("=", 1)
    for value in target.headers.values():
        raw += [value, *value.split()]
    pieces: set[str] = set()
    for piece in raw:
        for form in (piece, unquote(piece), unquote_plus(piece)):
            if len(form) >= _MIN_SECRET and not (_PLAIN_WORD.fullmatch(form) and len(form) < 20):
                pieces.update({form, form.replace("/", "\\/")})  # also as JSON writes it: \/
    return tuple(sorted(pieces, key=len, reverse=True))


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with each of ``secrets`` (in any case) replaced by ``[redacted]``."""
    if not secrets:
        return text
    pattern = re.compile("|".join(re.escape(s) for s in secrets), re.IGNORECASE)
    return pattern.sub(_REDACTED, text)


def _drop_secret_start(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` without a trailing start (3 characters or more) of one of ``secrets``."""
    low = text.lower()
    for secret in secrets:
        for size in range(min(len(secret), len(low)), 2, -1):
            if low.endswith(secret[:size].lower()):
                return text[: len(text) - size] + _REDACTED
    return text


def _zlib_header(data: bytes) -> bool:
    return len(data) >= 2 and (data[0] & 0x0F) == 8 and ((data[0] << 8) | data[1]) % 31 == 0


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """Built once: a fresh client would otherwise reload the CA store on every message."""
    return ssl.create_default_context()


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        seconds = float(value)
    except ValueError:
        return None
    # "inf", "nan", "1e999" are no wait anyone can honour (nor a JSON number for the model)
    return max(seconds, 0.0) if math.isfinite(seconds) else None
