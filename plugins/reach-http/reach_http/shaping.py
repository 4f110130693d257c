"""Turn an HTTP response into the small JSON a model needs.

A model pays for every token of a tool result and reasons worse over noise, so
the result keeps the status, a handful of headers that change what it should do
next (type, location, paging, rate limits), and the body parsed as JSON. Long
bodies are cut structurally (lists shortened, long strings clipped) so what is
left is still valid JSON, with markers saying what was dropped.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from .masking import Masker

__all__ = ["KEPT_HEADERS", "describe_binary", "error_message", "json_depth", "shape_response", "trim_json"]

KEPT_HEADERS = (
    "content-type",
    "location",
    "retry-after",
    "etag",
    "last-modified",
    "link",
    "x-total-count",
    "x-next",
    "ratelimit-remaining",
    "x-ratelimit-remaining",
)
_BINARY_PREFIXES = ("image/", "audio/", "video/", "font/")
_BINARY_TYPES = ("application/octet-stream", "application/pdf", "application/zip", "application/gzip")


MAX_HEADER_CHARS = 2000
"""A kept header value is cut here: a ``Link`` or ``Location`` of megabytes is no answer."""
MAX_JSON_DEPTH = 100
"""Deeper JSON is returned as text: parsing and shaping it would recurse past Python's limit."""
_DECODED_ENCODINGS = frozenset({"", "identity", "gzip", "x-gzip", "deflate"})
"""Content-Encodings :mod:`.decoding` undoes; after any other the bytes are still encoded."""
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_ODD_CHARACTER = re.compile("[\ufffd\x01-\x08\x0e-\x1a\x1c-\x1f]")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _cap(value: Any, items: int, chars: int, masker: Masker) -> Any:
    if isinstance(value, str):
        if len(value) > chars:
            return masker.cut(value, chars) + f"… [{len(value) - chars} more characters]"
        return value
    if isinstance(value, list):
        head = [_cap(v, items, chars, masker) for v in value[:items]]
        if len(value) > items:
            head.append(f"… {len(value) - items} more items")
        return head
    if isinstance(value, dict):
        keys = list(value)
        out = {k: _cap(value[k], items, chars, masker) for k in keys[: items * 4]}
        if len(keys) > items * 4:
            out["…"] = f"{len(keys) - items * 4} more keys"
        return out
    return value


def trim_json(value: Any, max_chars: int, masker: Masker | None = None) -> tuple[Any, bool]:
    """``value`` made to fit ``max_chars`` of compact JSON, and whether it was cut.

    ``masker``: secrets are already masked in ``value``; a string cut through one
    has its remaining first characters masked too.
    """
    masker = masker or Masker()
    if len(_dumps(value)) <= max_chars:
        return value, False
    capped = value
    for items, chars in ((50, 500), (20, 200), (10, 120), (5, 80), (3, 40), (1, 20)):
        capped = _cap(value, items, chars, masker)
        if len(_dumps(capped)) <= max_chars:
            return capped, True
    text = _dumps(capped)
    return masker.cut(text, max_chars) + f"… [{len(text) - max_chars} more characters]", True


def _media_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _codec_names(*labels: str) -> frozenset[str]:
    names = set()
    for label in labels:
        try:
            names.add(codecs.lookup(label).name)
        except LookupError:  # pragma: no cover - a Python built without one of the CJK codecs
            pass
    return frozenset(names)


WEB_CHARSETS = _codec_names(
    "utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be", "ascii",
    *(f"iso-8859-{n}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16)),
    *(f"windows-125{n}" for n in range(9)), "windows-874", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic",
    "cp866", "gbk", "gb2312", "gb18030", "big5", "big5hkscs", "euc-jp", "iso-2022-jp", "shift_jis", "cp932",
    "euc-kr", "cp949",
)
"""Python's names for the encodings the web uses (the WHATWG Encoding Standard's, and UTF-32).

A service (or any host a redirect reaches) names the charset; Python knows many codecs that
are none: bytes-to-bytes ones (``rot13``, ``hex``, ``zlib``) raised out of the decoder as an
internal error, and ``punycode`` decodes in quadratic time (160 KB took 20 s of CPU on the event
loop, which no timeout interrupts). Any other name reads as UTF-8.
"""
_NO_BOM = {
    codecs.lookup("utf-16").name: ((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE), "utf-16-le"),
    codecs.lookup("utf-32").name: ((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE), "utf-32-le"),
}
"""``charset=utf-16`` without a byte order mark is little-endian, as browsers read it (Python's
decoder raised instead)."""


def _charset(headers: dict[str, str], body: bytes = b"") -> str:
    for part in headers.get("content-type", "").split(";")[1:]:
        key, _, val = part.strip().partition("=")
        if key.strip().lower() == "charset" and val:
            try:
                name = codecs.lookup(val.strip().strip('"').strip()).name
            except LookupError:
                break
            if name not in WEB_CHARSETS:
                break
            if name in _NO_BOM and not body.startswith(_NO_BOM[name][0]):
                return _NO_BOM[name][1]
            return name
    return "utf-8"


def _decode(body: bytes, headers: dict[str, str], cut: bool) -> str:
    """The body as text; a body cut on the wire may end inside a character, which is dropped."""
    decoder = codecs.getincrementaldecoder(_charset(headers, body))(errors="replace")
    return decoder.decode(body, final=not cut)


def _looks_binary(text: str) -> bool:
    """NUL, or more than one character in 20 undecodable or a control character."""
    if "\x00" in text:
        return True
    return len(_ODD_CHARACTER.findall(text)) * 20 > len(text)


def json_depth(text: str, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep ``text``'s brackets nest (outside strings); stops counting past ``limit``."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def describe_binary(body: bytes, headers: dict[str, str]) -> str:
    """What a body reach does not show is, in a line: ``<binary body: N bytes, type ...>``."""
    encoding = headers.get("content-encoding", "").strip().lower()
    extra = f", content-encoding {encoding[:40]}" if encoding and encoding != "identity" else ""
    return f"<binary body: {len(body)} bytes, type {_media_type(headers)[:80] or 'unknown'}{extra}>"


def parse_body(
    body: bytes, headers: dict[str, str], masker: Masker | None = None, *, cut: bool = False
) -> tuple[Any, str | None]:
    """(body as JSON value or text with secrets masked, or None; a note when it was not shown).

    Not shown, only described: a body whose Content-Encoding reach cannot undo (``br``,
    ``zstd``: the bytes are still compressed), a binary media type, and text that
    decodes to NULs or mostly replacement characters whatever its type says.
    """
    if not body:
        return None, None
    masker = masker or Masker()
    media = _media_type(headers)
    encodings = {t.strip().lower() for t in headers.get("content-encoding", "").split(",")}
    if encodings - _DECODED_ENCODINGS or media.startswith(_BINARY_PREFIXES) or media in _BINARY_TYPES:
        return None, describe_binary(body, headers) + " not shown"
    text = _decode(body, headers, cut)
    if _looks_binary(text):
        return None, describe_binary(body, headers) + " not shown"
    text = masker.text(text)
    if cut:
        text = masker.tail(text)
    if ("json" in media or text.lstrip()[:1] in ("{", "[")) and json_depth(text) <= MAX_JSON_DEPTH:
        try:
            return masker.value(json.loads(text)), None
        except (ValueError, RecursionError):
            pass
    return text, None


def shape_response(
    status: int,
    headers: dict[str, str],
    body: bytes,
    *,
    max_chars: int,
    cut_on_wire: bool = False,
    masker: Masker | None = None,
) -> dict[str, Any]:
    """The model-facing result of one response, secrets masked before anything is cut."""
    masker = masker or Masker()
    kept = {k: masker.cut(masker.text(headers[k]), MAX_HEADER_CHARS) for k in KEPT_HEADERS if k in headers}
    result: dict[str, Any] = {"status": status}
    if kept:
        result["headers"] = kept
    value, note = parse_body(body, headers, masker, cut=cut_on_wire)
    truncated = cut_on_wire
    if isinstance(value, str):
        if len(value) > max_chars:
            value, truncated = masker.cut(value, max_chars) + f"… [{len(value) - max_chars} more characters]", True
    elif value is not None:
        value, cut = trim_json(value, max_chars, masker)
        truncated = truncated or cut
    if value is not None:
        result["body"] = value
    if note:
        result["note"] = note
    if truncated:
        result["truncated"] = True
    return result


def error_message(body: bytes, headers: dict[str, str], reason: str, masker: Masker | None = None) -> str:
    """The server's own explanation of a failure, short (secrets masked first); the reason phrase if none."""
    masker = masker or Masker()
    value, note = parse_body(body, headers, masker)
    found: Any = note
    if isinstance(value, dict):
        for key in ("message", "error_description", "detail", "error", "title", "errors", "msg"):
            if value.get(key):
                found = value[key]
                break
        if isinstance(found, dict):
            found = found.get("message") or found.get("detail") or _dumps(found)
        if found is None:
            found = _dumps(value)
    elif isinstance(value, str):
        found = " ".join(value.split())
    elif value is not None:
        found = _dumps(value)
    text = found if isinstance(found, str) else _dumps(found) if found is not None else ""
    text = text.strip() or reason
    return masker.cut(text, 300) + ("…" if len(text) > 300 else "")
