"""One strict reading of a URL written in config, a document or a redirect.

URL parsers disagree on the edges: ``http://good.example\\@evil.example/`` is
``evil.example`` to httpx and ``good.example`` to a browser (which reads ``\\`` as
``/``); ``http://h:+80/`` has port 80 for some and the default port for httpx;
``http://h:0/`` or ``http://h:65536/`` mean nothing anyone can honour. Whatever
reach checks and whatever it connects to must be the same thing, so a URL whose
reading is not certain is refused instead of guessed at:

* only ``http://`` or ``https://`` followed by a host;
* no whitespace, control characters or backslashes anywhere;
* no userinfo (``user@``), no ``%`` in the host part, nothing in it that Unicode
  normalisation turns into ``@ / ? # \\ %``;
* a port, when written, is 1-65535 in plain ASCII digits without a sign or a
  leading zero.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["BadURL", "check_port", "check_url_text", "split_authority"]

_SCHEME = re.compile(r"^(https?)://", re.IGNORECASE)
_PORT = re.compile(r"^[1-9][0-9]{0,4}$")
_AUTHORITY_END = re.compile(r"[/?#]")
_FORBIDDEN_IN_HOST = set("@/\\?#% ")


class BadURL(ValueError):
    """The URL text is ambiguous or malformed; the message says which part."""


def split_authority(url: str) -> tuple[str, str]:
    """``(authority, rest)`` of an ``http(s)://`` URL's text (the scheme already checked)."""
    after = url.split("://", 1)[1]
    end = _AUTHORITY_END.search(after)
    return (after, "") if end is None else (after[: end.start()], after[end.start():])


def check_port(text: str) -> int:
    """A written port as a number, or :class:`BadURL` (signs, spaces, zero, >65535, odd digits)."""
    if not (text.isascii() and _PORT.match(text)) or int(text) > 65535:
        raise BadURL(f"the port {text!r} is not a number from 1 to 65535 (plain digits, no sign or leading zero)")
    return int(text)


def check_url_text(url: str, *, allow_query: bool = False) -> None:
    """Raise :class:`BadURL` unless ``url`` reads the same to every parser.

    ``allow_query``: a redirect target may carry ``?``/``#``; a base URL may not,
    because tool paths are appended to it (``https://h/?x=`` + ``/pets`` sends the
    path as part of the query).
    """
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zs", "Zl", "Zp") for c in url):
        raise BadURL("it contains whitespace or control characters")
    if "\\" in url:
        raise BadURL("it contains a backslash, which some parsers read as '/' and others as part of the host")
    if not _SCHEME.match(url):
        raise BadURL("it must start with http:// or https:// followed by the host")
    authority, rest = split_authority(url)
    if not authority:
        raise BadURL("it has no host after the scheme")
    folded = unicodedata.normalize("NFKC", authority)
    if "@" in folded:
        raise BadURL("it has userinfo (user@host); put credentials in the service's auth or headers settings")
    odd = sorted(_FORBIDDEN_IN_HOST & set(folded))
    if odd:
        raise BadURL(f"its host part contains {' '.join(odd)!r}; write the host plainly")
    if not allow_query and ("?" in rest or "#" in rest):
        raise BadURL("it has a query or fragment; paths are appended to it (use headers or auth for keys)")
    host_port = authority
    if host_port.startswith("["):
        close = host_port.find("]")
        if close < 0:
            raise BadURL("its IPv6 host has no closing ']'")
        tail = host_port[close + 1:]
        if tail and not tail.startswith(":"):
            raise BadURL(f"unexpected text {tail!r} after the IPv6 host")
        port_text = tail[1:] if tail else None
    elif ":" in host_port:
        port_text = host_port.split(":", 1)[1]
    else:
        port_text = None
    if port_text is not None:
        check_port(port_text)
