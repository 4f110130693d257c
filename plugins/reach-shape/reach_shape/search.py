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
#: a longer string leaf is searched by its head only (its JSON would be a copy of a whole page
#: or log); read_result(path=..., query=...) searches the whole string
LEAF_SEARCH_CHARS = 65_536


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


def _flat_rows(value: list[Any], path: str, out: list[tuple[str, Any, str]]) -> bool:
    """Records of a long array of flat rows (SQL results, CSV-like data) from one encoding.

    Encoding 10,000 rows one by one costs far more than encoding the array once and
    splitting it between rows; the split is trusted only when it yields exactly one
    piece per row (a row holding ``],[``, in a string or nested arrays, makes it fall
    back to one by one).
    """
    first = value[0]
    kind: type
    if isinstance(first, list):
        kind, sep = list, "],["
    elif isinstance(first, dict):
        kind, sep = dict, "},{"
    else:
        return False
    if not all(type(row) is kind for row in value):
        return False
    # Between two rows the separator occurs exactly once, and occurrences cannot overlap;
    # so one piece per row means no row holds the separator, and the split is exact.
    pieces = dumps(value)[2:-2].split(sep)
    if len(pieces) != len(value):
        return False
    opener, closer = ("[", "]") if kind is list else ("{", "}")
    for i, (row, piece) in enumerate(zip(value, pieces, strict=True)):
        out.append((join_index(path, i), row, opener + piece + closer))
    return True


def _records(value: Any, path: str, out: list[tuple[str, Any, str]]) -> None:
    if len(out) >= MAX_RECORDS:
        return
    if isinstance(value, list) and len(value) > 100 and len(out) + len(value) <= MAX_RECORDS \
            and _flat_rows(value, path, out):
        return
    if isinstance(value, str) and len(value) > LEAF_SEARCH_CHARS:
        out.append((path, value, dumps(value[:LEAF_SEARCH_CHARS])))
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
