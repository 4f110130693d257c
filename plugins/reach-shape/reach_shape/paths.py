"""JSON paths the model reads and writes: ``a.b.c``, ``items[3].name``, ``rows[20:40]``, ``["odd key"]``.

The same syntax is used in both directions: the shaped result names what was
cut with these paths, and ``read_result(path=...)`` resolves them, so a path the
model copies from a note always works.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["PathError", "join_index", "join_key", "parse_path", "resolve"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")
_TOKEN = re.compile(
    r"""\s*(?:
        \.?(?P<key>[A-Za-z_][A-Za-z0-9_\-]*)          # .key or key
      | \[\s*(?P<slice>-?\d*\s*:\s*-?\d*)\s*\]        # [a:b]
      | \[\s*(?P<index>-?\d+)\s*\]                    # [3]
      | \[\s*(?P<quoted>"(?:[^"\\]|\\.)*")\s*\]       # ["key"]
      | \.?(?P<bare>[^.\[\]\s"]+)                     # any other bare key (e.g. 2024-05-01, 中文)
    )""",
    re.VERBOSE,
)


class PathError(ValueError):
    """A path that does not parse or does not lead anywhere; the message is for the model."""


def join_key(base: str, key: str) -> str:
    if _IDENT.match(key):
        return f"{base}.{key}" if base else key
    return f"{base}[{json.dumps(key, ensure_ascii=False)}]"


def join_index(base: str, index: int) -> str:
    return f"{base}[{index}]"


def parse_path(path: str) -> list[tuple[str, Any]]:
    """``[("key", "a"), ("index", 3), ("slice", (20, 40))]``; raises ``PathError``."""
    steps: list[tuple[str, Any]] = []
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise PathError(f"cannot read the path at {text[pos:pos + 20]!r}")
        if m.group("key") is not None:
            steps.append(("key", m.group("key")))
        elif m.group("slice") is not None:
            a, b = (p.strip() for p in m.group("slice").split(":"))
            steps.append(("slice", (int(a) if a else None, int(b) if b else None)))
        elif m.group("index") is not None:
            steps.append(("index", int(m.group("index"))))
        elif m.group("quoted") is not None:
            steps.append(("key", json.loads(m.group("quoted"))))
        else:
            steps.append(("key", m.group("bare")))
        pos = m.end()
    return steps


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        keys = list(value)[:12]
        more = ", ..." if len(value) > 12 else ""
        return f"an object with keys {', '.join(keys)}{more}"
    if isinstance(value, list):
        return f"an array of {len(value)} items"
    return f"a {type(value).__name__}"


def resolve(value: Any, path: str | None) -> Any:
    """The part of ``value`` at ``path`` (the whole value for ``None``/``""``)."""
    if not path or not path.strip() or path.strip() == "$":
        return value
    where = "the result"
    for kind, arg in parse_path(path):
        if kind == "key":
            if isinstance(value, dict) and arg in value:
                value = value[arg]
            elif isinstance(value, list) and isinstance(arg, str) and arg.lstrip("-").isdigit():
                kind, arg = "index", int(arg)
            else:
                raise PathError(f"{where} has no key {arg!r}; it is {_describe(value)}")
        if kind == "index":
            if not isinstance(value, list):
                raise PathError(f"{where} is not an array (it is {_describe(value)}), so [{arg}] does not apply")
            if not -len(value) <= arg < len(value):
                raise PathError(f"{where} has {len(value)} items; index {arg} is out of range")
            value = value[arg]
        elif kind == "slice":
            if not isinstance(value, list):
                raise PathError(f"{where} is not an array (it is {_describe(value)}), so a slice does not apply")
            value = value[arg[0]:arg[1]]
        where = f"{path!r} up to {arg!r}"
    return value
