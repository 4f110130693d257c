"""Searching a JSON value: which items or leaves best match some words.

The value is cut into records, the smallest enclosing objects or array items
that are at most ``RECORD_CHARS`` of JSON (a row, an issue, a leaf), each named
by its path; records are scored with the same BM25 as text passages. A shaped
result names the best records for the user's question, and ``read_result``'s
``query`` returns them.
"""

from __future__ import annotations

from typing import Any

from reach_core.result import dumps

from .passages import best_passages
from .paths import join_index, join_key

__all__ = ["json_matches"]

RECORD_CHARS = 1200
MAX_RECORDS = 200_000


def _small(value: Any, limit: int) -> bool:
    """Whether ``value``'s JSON is about ``limit`` characters or less, without encoding it:
    the walk stops as soon as it has seen more, so deep or huge values cost ``O(limit)``."""
    total = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v) + 3
        elif isinstance(v, dict):
            total += 2
            for k, x in v.items():
                total += len(k) + 4
                stack.append(x)
        elif isinstance(v, list):
            total += 2 + len(v)
            stack.extend(v)
        else:
            total += 6
        if total > limit:
            return False
    return True


def _records(value: Any, path: str, out: list[tuple[str, Any, str]]) -> None:
    if len(out) >= MAX_RECORDS:
        return
    if not isinstance(value, (dict, list)) or not value or _small(value, RECORD_CHARS):
        out.append((path, value, dumps(value)))
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _records(v, join_key(path, k), out)
    else:
        for i, v in enumerate(value):
            _records(v, join_index(path, i), out)


def json_matches(value: Any, query: str, *, base: str = "", limit: int = 5) -> tuple[list[tuple[str, Any]], int]:
    """Up to ``limit`` ``(path, record)`` pairs best matching ``query``, and how many records were searched."""
    records: list[tuple[str, Any, str]] = []
    _records(value, base, records)
    spans, pos = [], 0
    for _, _, text in records:
        spans.append((pos, pos + len(text)))
        pos += len(text) + 1
    joined = "\n".join(r[2] for r in records)
    hits = best_passages(joined, query, units=spans, limit=limit)
    index = {s: i for i, (s, _) in enumerate(spans)}
    return [(records[index[p.start]][0], records[index[p.start]][1]) for p in hits], len(records)
