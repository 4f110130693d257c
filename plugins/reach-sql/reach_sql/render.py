"""Turn database values into JSON a model can read without guessing.

JSON has no dates, exact decimals or bytes. Letting a generic encoder guess
(floats for decimals, base64 for bytes) loses money digits and hides binary
blobs as walls of text, so every such type gets one explicit rendering here:

- ``Decimal`` -> its exact string (``"12.30"``), NaN/inf floats -> strings;
- dates, times, datetimes -> ISO 8601; intervals -> ISO 8601 durations (``"PT90S"``);
- bytes -> ``{"bytes": size, "hex": first 32 bytes, "truncated": bool}``;
- long text -> cut at ``max_chars`` with a ``"… [N more chars]"`` marker;
- UUIDs, IP addresses, ranges and anything else -> ``str(value)``;
- a value over the byte caps (a :class:`~reach_sql.pg_read.Cut`) -> its prefix
  with a ``… [cut: N bytes]`` marker, or a sentence saying it was not sent.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

from .pg_read import Cut

_HEX_BYTES = 32


def render_value(value: Any, max_chars: int) -> Any:
    """One cell, recursively for arrays and JSON documents."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, Cut):
        return render_cut(value, max_chars)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return clip_text(value, max_chars)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return f"PT{value.total_seconds():g}S"
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        return {"bytes": len(raw), "hex": raw[:_HEX_BYTES].hex(), "truncated": len(raw) > _HEX_BYTES}
    if isinstance(value, list | tuple):
        return [render_value(v, max_chars) for v in value]
    if isinstance(value, dict):
        return {str(k): render_value(v, max_chars) for k, v in value.items()}
    return clip_text(str(value), max_chars)


def render_cut(cut: Cut, max_chars: int) -> Any:
    """A value that was not sent whole: say so, with its size, so the model can ask for less."""
    why = "too large to send" if cut.reason == "value" else "not sent: the result reached its size cap"
    if isinstance(cut.prefix, str):
        return f"{cut.prefix[:max_chars]}… [cut: the value holds {cut.size} bytes, {why}]"
    if isinstance(cut.prefix, bytes | bytearray | memoryview):
        return {"bytes": cut.size, "hex": bytes(cut.prefix[:_HEX_BYTES]).hex(), "truncated": True}
    return f"[value of {cut.size} bytes {why}; select part of it, e.g. left(col::text, 200) or length(col)]"


def clip_text(text: str, max_chars: int) -> str:
    """Cut long text and say how much was cut, so the model never mistakes a prefix for the whole."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}… [{len(text) - max_chars} more chars]"


def render_rows(rows: list[Any], max_chars: int) -> list[list[Any]]:
    """Rows as compact lists (column names are sent once, not per row)."""
    return [[render_value(v, max_chars) for v in row] for row in rows]
