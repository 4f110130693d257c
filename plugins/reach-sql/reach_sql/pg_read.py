"""PostgreSQL reads with a byte budget enforced by the server, before the bytes travel.

A value is only measurable after the driver received it, and by then a
``SELECT repeat('x', 400000000)`` has cost reach 400 MB. So the size check runs
on the server: the model's statement is first declared as a cursor and
described (no row is computed), then wrapped so that every value of a
variable-length column comes with its size, values over ``max_value_bytes`` are
replaced by a short prefix (text, bytes) or nothing (JSON, arrays, ...), and a
running total stops sending values once the result holds ``max_result_bytes``::

    SELECT <c1, or a cut form of it>, …, <sizes>, <over budget?> FROM (
      SELECT t.*, sum(<bytes this row sends>) OVER (ROWS UNBOUNDED PRECEDING) FROM (
        SELECT q.*, octet_length(q.c1) AS z1, … FROM (
          SELECT * FROM (<the model's statement>) AS q0 OFFSET 0) AS q(c1, …) OFFSET 0) AS t) AS s

``OFFSET 0`` keeps each value computed once. Rows past the page are counted
with ``MOVE``, which the server does without sending them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .classify import BIND

# Types of a fixed, small size: never measured. Everything else (text, bytea, json,
# arrays, numeric, composite, xml, ranges, ...) is measured and capped.
# (inet and cidr are variable-length but at most 22 bytes.)
_FIXED = frozenset(
    {16, 18, 19, 20, 21, 23, 26, 28, 700, 701, 790, 1082, 1083, 1114, 1184, 1186, 1266, 2950,
     829, 774, 869, 650, 3220, 5069, 600, 601, 603, 628, 718}
)
_TEXT = frozenset({25, 1043, 1042, 705})  # text, varchar, bpchar, unknown
_BYTEA = 17
_HEX_BYTES = 32

_PYFORMAT = re.compile(BIND.pattern + r"|%|\\:", re.UNICODE)


def to_pyformat(sql: str) -> str:
    """``:name`` -> ``%(name)s``, ``%`` -> ``%%``, ``\\:`` -> ``:`` (what SQLAlchemy's text() does)."""

    def sub(m: re.Match[str]) -> str:
        if m.group(1):
            return f"%({m.group(1)})s"
        return "%%" if m.group(0) == "%" else ":"

    return _PYFORMAT.sub(sub, sql)


@dataclass(frozen=True)
class Cut:
    """A value not sent whole: ``size`` bytes on the server, ``prefix`` the part that was sent."""

    size: int
    prefix: Any = None
    reason: str = "value"  # "value": over the per-value cap; "total": the result was full


@dataclass
class Fetched:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    more_rows: int
    more_rows_capped: bool
    cut_values: int
    result_full: bool


def _ident(i: int) -> str:
    return f"c{i}"


def _wrapped(query: str, type_oids: list[int], max_value: int, max_total: int, max_chars: int) -> tuple[str, list[int]]:
    """The capped form of ``query`` and the positions of its measured columns."""
    n = len(type_oids)
    measured = [i for i, oid in enumerate(type_oids) if oid not in _FIXED]
    cols = ", ".join(_ident(i) for i in range(n))
    sizes = []
    for i in measured:
        oid = type_oids[i]
        col = f"q.{_ident(i)}"
        sizes.append(f"octet_length({col})" if oid in _TEXT or oid == _BYTEA else f"octet_length({col}::text)")
    inner = ", ".join(f"{expr} AS z{i}" for expr, i in zip(sizes, measured, strict=True))
    sent = " + ".join(f"(CASE WHEN t.z{i} > {max_value} THEN 0 ELSE coalesce(t.z{i}, 0) END)" for i in measured)
    outs = []
    for i in range(n):
        col = f"s.{_ident(i)}"
        if i not in measured:
            outs.append(col)
            continue
        oid = type_oids[i]
        over = f"(s.z{i} > {max_value} OR s.reach_total > {max_total})"
        if oid in _TEXT:
            short = f"left({col}, {max_chars})"
        elif oid == _BYTEA:
            short = f"substring({col} FROM 1 FOR {_HEX_BYTES})"
        else:
            short = "NULL"
        outs.append(f"CASE WHEN {over} THEN {short} ELSE {col} END")
    size_array = "ARRAY[" + ", ".join(f"s.z{i}" for i in measured) + "]::int8[]"
    sql = (
        f"SELECT {', '.join(outs)}, {size_array}, s.reach_total > {max_total} FROM ("
        f"SELECT t.*, sum({sent}) OVER (ROWS UNBOUNDED PRECEDING) AS reach_total FROM ("
        f"SELECT q.*, {inner} FROM (SELECT * FROM (\n{query}\n) AS q0 OFFSET 0) AS q({cols}) OFFSET 0"
        ") AS t) AS s"
    )
    return sql, measured


def fetch_capped(
    raw: Any,
    query: str,
    params: dict[str, Any],
    *,
    limit: int,
    count_cap: int,
    max_value: int,
    max_total: int,
    max_chars: int,
) -> Fetched:
    """Run ``query`` (psycopg pyformat) read-only through cursors; see the module docstring."""
    probe = raw.cursor(name="reach_probe")
    probe.execute(query, params)
    desc = probe.description
    if desc is None:
        return Fetched([], [], 0, False, 0, False)
    columns = [c.name for c in desc]
    oids = [int(c.type_code) for c in desc]
    measured: list[int] = []
    if any(oid not in _FIXED for oid in oids):
        sql, measured = _wrapped(query, oids, max_value, max_total, max_chars)
        cursor = raw.cursor(name="reach_rows")
        cursor.execute(sql, params)
        name = "reach_rows"
    else:
        cursor, name = probe, "reach_probe"
    fetched = cursor.fetchmany(limit)
    rows: list[tuple[Any, ...]] = []
    cut_values = 0
    result_full = False
    n = len(columns)
    for row in fetched:
        if not measured:
            rows.append(tuple(row))
            continue
        values = list(row[:n])
        sizes, over_total = row[n], row[n + 1]
        result_full = result_full or bool(over_total)
        for pos, i in enumerate(measured):
            size = sizes[pos]
            if size is not None and (size > max_value or over_total):
                values[i] = Cut(int(size), values[i], "total" if over_total and size <= max_value else "value")
                cut_values += 1
        rows.append(tuple(values))
    more, capped = 0, False
    if len(rows) == limit and count_cap > 0:
        moved = raw.execute(f'MOVE FORWARD {int(count_cap)} FROM "{name}"', prepare=False)
        more = max(0, moved.rowcount)
        capped = more >= count_cap
    return Fetched(columns, rows, more, capped, cut_values, result_full)
