"""PostgreSQL reads with a byte budget enforced by the server, before the bytes travel.

A value is only measurable after the driver received it, and by then a
``SELECT repeat('x', 400000000)`` has cost reach 400 MB. So the size check runs
on the server: the model's statement is first described through the
protocol's Parse + Describe (neither planned nor run), then wrapped so that every value of a
variable-length column comes with its size, and values over ``max_value_bytes``
are replaced by a short prefix (text, bytes) or nothing (JSON, arrays, ...)::

    SELECT <c1, or a cut form of it>, …, ARRAY[<sizes>] FROM (
      SELECT q.*, octet_length(q.c1) AS z1, … FROM (
        SELECT * FROM (<the model's statement>) AS q0 OFFSET 0) AS q(c1, …) OFFSET 0) AS s

``OFFSET 0`` keeps each value computed once. Rows are fetched in pages small
enough that one page cannot pass ``max_result_bytes`` (each value is capped),
and fetching stops when the result is full. Rows not sent are counted with
``MOVE``, which the server does without sending them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .classify import BIND

# Types of a fixed, small size: never measured on the server. Everything else (text, bytea,
# json, arrays, numeric, composite, xml, ranges, ...) is measured and capped. (inet and cidr
# are variable-length but at most 22 bytes.) Each maps to the longest text it is sent as, which
# counts towards max_result_bytes: 1,600 uuid columns of 500 rows are 29 MB of answer although
# no value is long, and went out whole under a 64 KB cap when fixed-size values counted nothing.
_FIXED: dict[int, int] = {
    16: 5, 18: 4, 19: 64, 20: 20, 21: 6, 23: 11, 26: 10, 28: 10, 700: 15, 701: 24, 790: 30, 1082: 16,
    1083: 15, 1114: 32, 1184: 38, 1186: 80, 1266: 21, 2950: 36, 829: 17, 774: 23, 869: 49, 650: 49,
    3220: 17, 5069: 20, 600: 50, 601: 104, 603: 104, 628: 76, 718: 78,
}
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


def _wrapped(query: str, type_oids: list[int], max_value: int, max_chars: int) -> tuple[str, list[int]]:
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
    outs = []
    for i in range(n):
        col = f"s.{_ident(i)}"
        if i not in measured:
            outs.append(col)
            continue
        oid = type_oids[i]
        if oid in _TEXT:
            short = f"left({col}, {max_chars})"
        elif oid == _BYTEA:
            short = f"substring({col} FROM 1 FOR {_HEX_BYTES})"
        else:
            short = "NULL"
        outs.append(f"CASE WHEN s.z{i} > {max_value} THEN {short} ELSE {col} END")
    size_array = "ARRAY[" + ", ".join(f"s.z{i}" for i in measured) + "]::int8[]"
    sql = (
        f"SELECT {', '.join(outs)}, {size_array} FROM ("
        f"SELECT q.*, {inner} FROM (SELECT * FROM (\n{query}\n) AS q0 OFFSET 0) AS q({cols}) OFFSET 0"
        ") AS s"
    )
    return sql, measured


def describe(raw: Any, query: str, params: dict[str, Any]) -> tuple[list[str], list[int]]:
    """Column names and type OIDs of ``query``, from the protocol's Parse + Describe.

    Parse only analyses the statement (it is planned, and its constants folded, at
    execution), so describing costs nothing however heavy the statement is. The
    values are inlined as quoted literals (psycopg's client-side binding) for this
    step only; the statement then runs with server-side parameters.
    """
    import psycopg

    text = psycopg.ClientCursor(raw).mogrify(query, params)
    encoding = raw.info.encoding
    pgconn = raw.pgconn
    res = pgconn.prepare(b"", text.encode(encoding))
    if res.status != psycopg.pq.ExecStatus.COMMAND_OK:
        raise psycopg.errors.error_from_result(res, encoding=encoding)
    desc = pgconn.describe_prepared(b"")
    if desc.status != psycopg.pq.ExecStatus.COMMAND_OK:
        raise psycopg.errors.error_from_result(desc, encoding=encoding)
    names = [(desc.fname(i) or b"").decode(encoding, errors="replace") for i in range(desc.nfields)]
    return names, [int(desc.ftype(i)) for i in range(desc.nfields)]


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
    setup: str | None = None,
) -> Fetched:
    """Run ``query`` (psycopg pyformat) read-only through cursors; see the module docstring.

    The statement is described first without being planned (so a constant such as
    ``repeat('x', 400000000)`` is not computed for that); then ``setup`` (e.g. ``SET
    LOCAL statement_timeout``), the cursor's DECLARE, its first FETCH and a MOVE that
    counts the rest are pipelined into one round trip.
    """
    columns, oids = describe(raw, query, params)
    if not columns:
        return Fetched([], [], 0, False, 0, False)
    cur = raw.cursor()
    measured = [i for i, oid in enumerate(oids) if oid not in _FIXED]
    fixed_bytes = sum(_FIXED.get(oid, 0) for oid in oids)  # what each row's fixed-size values send
    if not measured:  # fixed-size values only: the statement itself is the cursor
        # as many rows as fit in max_total (at least one), the rest counted
        take = max(1, min(limit, max_total // max(1, fixed_bytes)))
        count = None
        with raw.pipeline():
            if setup:
                cur.execute(setup, prepare=False)
            cur.execute(f"DECLARE reach_rows NO SCROLL CURSOR FOR {query}", params, prepare=False)
            cur.execute(f"FETCH FORWARD {int(take)} FROM reach_rows", prepare=False)
            if count_cap > 0:  # speculative: counts 0 when the page was not full
                count = raw.cursor()
                count.execute(f"MOVE FORWARD {int(count_cap)} FROM reach_rows", prepare=False)
        rows = [tuple(r) for r in cur.fetchall()]
        out = Fetched(columns, rows, 0, False, 0, False)
        if count is not None and len(rows) == take:
            out.more_rows = max(0, count.rowcount)
            out.more_rows_capped = out.more_rows >= count_cap
            out.result_full = take < limit and out.more_rows > 0
        return out
    sql, measured = _wrapped(query, oids, max_value, max_chars)
    # Each measured value is at most max_value bytes now, so a page of `chunk` rows is
    # at most max_total bytes: the total is checked between pages, never overrun.
    chunk = max(1, min(limit, max_total // (len(measured) * max_value + fixed_bytes)))
    count = None
    with raw.pipeline():
        if setup:
            cur.execute(setup, prepare=False)
        cur.execute(f"DECLARE reach_rows NO SCROLL CURSOR FOR {sql}", params, prepare=False)
        cur.execute(f"FETCH FORWARD {chunk} FROM reach_rows", prepare=False)
        if chunk == limit and count_cap > 0:  # one page is the whole answer: count the rest now
            count = raw.cursor()
            count.execute(f"MOVE FORWARD {int(count_cap)} FROM reach_rows", prepare=False)
    n = len(columns)
    out = Fetched(columns, [], 0, False, 0, False)
    total = 0
    page = cur.fetchall()
    while True:
        for pos, row in enumerate(page):
            values = list(row[:n])
            sizes = row[n]
            row_bytes = fixed_bytes
            for k, i in enumerate(measured):
                size = sizes[k]
                if size is None:
                    continue
                if size > max_value:
                    values[i] = Cut(int(size), values[i], "value")
                    out.cut_values += 1
                else:
                    row_bytes += size
            if total + row_bytes > max_total and out.rows:
                out.result_full = True  # this row and the rest are counted, not sent
                out.more_rows = len(page) - pos
                break
            if total + row_bytes > max_total:  # one row alone over the budget: send it cut
                out.result_full = True
                for k, i in enumerate(measured):
                    if not isinstance(values[i], Cut) and sizes[k] is not None:
                        values[i] = Cut(int(sizes[k]), values[i], "total")
                        out.cut_values += 1
            total += row_bytes
            out.rows.append(tuple(values))
        if out.result_full or len(out.rows) >= limit or len(page) < chunk:
            break
        cur.execute(f"FETCH FORWARD {min(chunk, limit - len(out.rows))} FROM reach_rows", prepare=False)
        page = cur.fetchall()
        if not page:
            break
    if count is not None:  # counted in the first round trip (rows past the budget included)
        if out.result_full or len(out.rows) == limit:
            out.more_rows += max(0, count.rowcount)
            out.more_rows_capped = count.rowcount >= count_cap
        return out
    if out.result_full:
        return _counted(cur, "reach_rows", out, 0, count_cap)
    return _counted(cur, "reach_rows", out, limit, count_cap)


def _counted(cur: Any, name: str, out: Fetched, limit: int, count_cap: int) -> Fetched:
    """Count the rows left in the cursor with MOVE (the server skips them without sending).

    ``limit`` 0 means the page was cut short by the byte budget: count in any case."""
    if (limit and len(out.rows) < limit) or count_cap <= 0:
        return out
    moved = cur.execute(f"MOVE FORWARD {int(count_cap)} FROM {name}", prepare=False).rowcount
    out.more_rows += max(0, moved)
    out.more_rows_capped = moved >= count_cap
    return out
