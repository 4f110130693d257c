"""Turn an HTTP response into the small JSON a model needs.

A model pays for every token of a tool result and reasons worse over noise, so
the result keeps the status, a handful of headers that change what it should do
next (type, location, paging, rate limits), and the body parsed as JSON. Long
bodies are cut structurally (lists shortened, long strings clipped) so what is
left is still valid JSON, with markers saying what was dropped.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["KEPT_HEADERS", "error_message", "shape_response", "trim_json"]

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


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _cap(value: Any, items: int, chars: int) -> Any:
    if isinstance(value, str):
        if len(value) > chars:
            return value[:chars] + f"… [{len(value) - chars} more characters]"
        return value
    if isinstance(value, list):
        head = [_cap(v, items, chars) for v in value[:items]]
        if len(value) > items:
            head.append(f"… {len(value) - items} more items")
        return head
    if isinstance(value, dict):
        keys = list(value)
        out = {k: _cap(value[k], items, chars) for k in keys[: items * 4]}
        if len(keys) > items * 4:
            out["…"] = f"{len(keys) - items * 4} more keys"
        return out
    return value


def trim_json(value: Any, max_chars: int) -> tuple[Any, bool]:
    """``value`` made to fit ``max_chars`` of compact JSON, and whether it was cut."""
    if len(_dumps(value)) <= max_chars:
        return value, False
    capped = value
    for items, chars in ((50, 500), (20, 200), (10, 120), (5, 80), (3, 40), (1, 20)):
        capped = _cap(value, items, chars)
        if len(_dumps(capped)) <= max_chars:
            return capped, True
    text = _dumps(capped)
    return text[:max_chars] + f"… [{len(text) - max_chars} more characters]", True


def _media_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _decode(body: bytes, headers: dict[str, str]) -> str:
    charset = "utf-8"
    for part in headers.get("content-type", "").split(";")[1:]:
        key, _, val = part.strip().partition("=")
        if key.lower() == "charset" and val:
            charset = val.strip('"')
    try:
        return body.decode(charset, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def parse_body(body: bytes, headers: dict[str, str]) -> tuple[Any, str | None]:
    """(body as JSON value or text, or None; a note when it was not shown)."""
    if not body:
        return None, None
    media = _media_type(headers)
    if media.startswith(_BINARY_PREFIXES) or media in _BINARY_TYPES:
        return None, f"binary {media} body of {len(body)} bytes not shown"
    text = _decode(body, headers)
    if "json" in media or text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text), None
        except ValueError:
            pass
    return text, None


def shape_response(
    status: int,
    headers: dict[str, str],
    body: bytes,
    *,
    max_chars: int,
    cut_on_wire: bool = False,
) -> dict[str, Any]:
    """The model-facing result of one response."""
    kept = {k: headers[k] for k in KEPT_HEADERS if k in headers}
    result: dict[str, Any] = {"status": status}
    if kept:
        result["headers"] = kept
    value, note = parse_body(body, headers)
    truncated = cut_on_wire
    if isinstance(value, str):
        if len(value) > max_chars:
            value, truncated = value[:max_chars] + f"… [{len(value) - max_chars} more characters]", True
    elif value is not None:
        value, cut = trim_json(value, max_chars)
        truncated = truncated or cut
    if value is not None:
        result["body"] = value
    if note:
        result["note"] = note
    if truncated:
        result["truncated"] = True
    return result


def error_message(body: bytes, headers: dict[str, str], reason: str) -> str:
    """The server's own explanation of a failure, short; the reason phrase if none."""
    value, _ = parse_body(body, headers)
    found: Any = None
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
    return text[:300] + ("…" if len(text) > 300 else "")
