"""Which request headers a model may set, and which ones carry credentials.

A model fills OpenAPI header parameters. Some header names are not data but
instructions to the HTTP stack or to proxies on the way: ``Host`` picks the
virtual host behind a shared address, ``Content-Length`` / ``Transfer-Encoding``
frame the body (request smuggling), ``X-Forwarded-*`` / ``Forwarded`` make a
backend believe the request came from inside, ``X-HTTP-Method-Override`` turns a
read into a DELETE. A document that declares such a parameter does not make it
safe, so these names are refused however they are spelled: any case,
surrounding whitespace, ``_`` for ``-`` (CGI-style servers read them alike).

Credential headers are recognised by name so a redirect to another origin can
leave them behind.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from reach_core import InvalidArguments

__all__ = [
    "FORBIDDEN_HEADERS",
    "check_header_value",
    "header_key",
    "header_value",
    "is_credential_header",
    "model_header_refusal",
]

FORBIDDEN_HEADERS = frozenset(
    {
        "host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
        "upgrade", "expect", "via", "forwarded", "http2-settings", "content-encoding",
        "cookie", "cookie2", "set-cookie", "authorization",
        "x-real-ip", "x-client-ip", "true-client-ip", "client-ip", "x-cluster-client-ip",
        "x-originating-ip", "x-remote-ip", "x-remote-addr", "x-host", "x-original-host",
        "x-original-url", "x-rewrite-url", "x-original-method",
        "x-http-method-override", "x-http-method", "x-method-override",
    }
)
"""Header names (normalised by :func:`header_key`) a model never sets."""

FORBIDDEN_PREFIXES = ("proxy-", "x-forwarded-", "sec-", "x-envoy-", ":")
"""Whole families: proxy control, forwarding claims, browser-owned and proxy-internal headers."""

_FORBIDDEN_WORDS = ("forward", "proxy", "remote", "override")
"""A name holding one of these words (``X-Forward-For``, ``Max-Forwards``, ``X-ProxyUser-Ip``,
``X-Remote-User``, ``X-Override-URL``) is a forwarding claim, proxy control, an identity a
front proxy vouches for, or a method/URL rewrite, however a vendor spells the rest."""
_CLIENT_ADDRESS = re.compile(r"(^|-)([a-z]*(client|socket|real|user|connecting))?ip(s|v4|v6)?(-|$)")
"""``CF-Connecting-IP``, ``Fastly-Client-IP``, ``X-Azure-ClientIP``, ``X-Custom-IP-Authorization``:
a client address claim, which backends trust for allow-lists and rate limits."""

_CREDENTIAL_WORDS = (
    "auth", "token", "key", "secret", "session", "password", "passwd", "credential", "signature",
    "cookie", "csrf", "xsrf", "api", "jwt", "bearer", "assertion", "dpop", "hmac", "pwd",
)
"""Anywhere in a name: ``X-Api-Key``, ``X-Jwt-Assertion``, ``DPoP`` ..."""
_CREDENTIAL_PARTS = frozenset({"sig", "sign", "otp", "pin", "pat"})
"""Whole ``-``-separated parts only (``X-Sig``, ``X-OTP``, ``X-PIN``; not ``X-Design``, ``X-Shipping``)."""
_CREDENTIAL_PART_STARTS = ("pass",)
"""A part that begins so (``X-Pass``, ``X-Passcode``, ``X-Passphrase``; not ``X-Compass-Region``)."""
_NOT_CREDENTIALS = frozenset({"idempotency-key"})
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")


def header_key(name: str) -> str:
    """The spelling-independent key of a header name: trimmed, lower case, ``_`` read as ``-``."""
    return name.strip().lower().replace("_", "-")


def model_header_refusal(name: str) -> str | None:
    """Why a model may not set the header ``name`` (None when it may)."""
    if not _TOKEN.match(name.strip()) or name != name.strip():
        return f"{name!r} is not a plain header name"
    key = header_key(name)
    if (
        key in FORBIDDEN_HEADERS
        or key.startswith(FORBIDDEN_PREFIXES)
        or any(word in key for word in _FORBIDDEN_WORDS)
        or _CLIENT_ADDRESS.search(key)
    ):
        return f"the {name.strip()} header is set by reach or the HTTP stack, never by a tool argument"
    return None


def check_header_value(field: str, value: str) -> str:
    """``value`` if it is one line of printable ASCII; ``InvalidArguments`` otherwise.

    CR/LF (and every other control or line-breaking character) could start a new
    header; non-ASCII text has no agreed encoding in a header.
    """
    if any(not (" " <= c <= "~" or c == "\t") for c in value) or value != value.strip(" \t"):
        # h11 refuses surrounding spaces too, before anything is sent: reported as a failed
        # connection, a write read as "may have taken effect"; the argument is what is wrong
        raise InvalidArguments(
            field, "a single-line value of printable ASCII characters (no line breaks or control characters, "
            "no spaces or tabs at either end)", "abc-123",
        )
    return value


_KEPT_IN_VALUES = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


def header_value(text: str) -> str:
    """``text`` as one line of printable ASCII, for a header value reach writes itself.

    An idempotency key comes from the caller or an agent framework (a tool-call id a
    model API chose), not from the operator: it may hold ``é``, ``\r\n`` or NUL. Such
    characters (and ``%`` itself, so two keys never meet in one value) are percent-encoded
    as UTF-8: the value can neither end the header line nor crash the encoder, and is the
    same for the same key (receivers de-duplicate on it). Printable ASCII keys without
    ``%`` are sent unchanged.
    """
    return quote(text, safe=_KEPT_IN_VALUES)


def is_credential_header(name: str) -> bool:
    """Whether ``name`` looks like it carries a credential (dropped when leaving the origin)."""
    key = header_key(name)
    if key in _NOT_CREDENTIALS:
        return False
    return (
        key in ("authorization", "proxy-authorization")
        or any(w in key for w in _CREDENTIAL_WORDS)
        or any(part in _CREDENTIAL_PARTS or part.startswith(_CREDENTIAL_PART_STARTS) for part in key.split("-"))
    )
