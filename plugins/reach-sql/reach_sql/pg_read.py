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

``sql_execute`` uses the same caps for the rows it answers (see the section at the end):
a SELECT through these cursors, run to its end; a statement that writes as the
data-modifying CTE of one capping query, which PostgreSQL runs exactly once.
"""

from __future__ import annotations

import re
import secrets
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
    run_to_end: bool = False,
) -> Fetched:
    """Run ``query`` (psycopg pyformat) through cursors; see the module docstring.

    The statement is described first without being planned (so a constant such as
    ``repeat('x', 400000000)`` is not computed for that); then ``setup`` (e.g. ``SET
    LOCAL statement_timeout``), the cursor's DECLARE, its first FETCH and a MOVE that
    counts the rest are pipelined into one round trip.

    ``run_to_end`` (``sql_execute``): a SELECT there may call a function that writes,
    and it must run over every row as it would uncapped, not stop where the count
    stops. So the rows past the page are moved over to the end (``MOVE FORWARD ALL``:
    computed on the server, never sent) and counted exactly.
    """
    out = _fetch_capped(raw, query, params, limit=limit, count_cap=count_cap, max_value=max_value,
                        max_total=max_total, max_chars=max_chars, setup=setup)
    if run_to_end:
        cur = raw.cursor()
        if not out.columns:  # no columns, so no cursor yet: the statement still has to run
            with raw.pipeline():
                if setup:
                    cur.execute(setup, prepare=False)
                cur.execute(f"DECLARE reach_rows NO SCROLL CURSOR FOR {query}", params, prepare=False)
        moved = cur.execute("MOVE FORWARD ALL FROM reach_rows", prepare=False).rowcount
        cur.execute("CLOSE reach_rows", prepare=False)
        out.more_rows += max(0, moved)
        out.more_rows_capped = False
    return out


def _fetch_capped(
    raw: Any,
    query: str,
    params: dict[str, Any],
    *,
    limit: int,
    count_cap: int,
    max_value: int,
    max_total: int,
    max_chars: int,
    setup: str | None,
) -> Fetched:
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


# -- sql_execute: rows of a statement that writes --------------------------------------
#
# sql_execute answers rows for a SELECT (which may call a function that writes), for
# INSERT/UPDATE/DELETE … RETURNING and for a SELECT over a data-modifying WITH. The driver
# fetched them whole before any cap: ``SELECT repeat('x', 300000000)`` took reach to 950 MB.
# A SELECT goes through the cursors above (``run_to_end``). A statement that writes cannot be
# a cursor (``DECLARE CURSOR must not contain data-modifying statements in WITH``), so it is
# made a data-modifying CTE of one capped query instead: PostgreSQL runs such a CTE exactly
# once and to completion whatever the outer query reads, so the write happens as it would
# alone, and the outer query cuts the values, takes at most ``limit`` rows within
# ``max_result_bytes`` and counts them all, on the server, before anything is sent.



def _rows_name() -> str:
    """The capping query's name for the statement, new for every call: a name the statement
    could know (a table of its own, or one of its CTEs under WITH RECURSIVE, where every name
    is visible to every CTE) would otherwise resolve to reach's CTE instead."""
    return f"reach_q_{secrets.token_hex(8)}"


@dataclass(frozen=True)
class RowPlan:
    """How ``sql_execute`` fetches one PostgreSQL statement's rows.

    ``cursor``: a SELECT without data-modifying CTEs; ``statement`` runs through
    :func:`fetch_capped`. Otherwise ``statement`` writes and returns rows: it becomes
    the CTE ``reach_q_<random>`` of :func:`fetch_written`; ``with_text`` is its own WITH clause when
    that holds a data-modifying CTE (which must stay at the top level, so it is
    hoisted in front of ``reach_q``), and ``statement`` then the rest of it.
    """

    cursor: bool
    statement: str
    with_text: str = ""


def row_plan(sql: str) -> RowPlan | None:
    """The plan for the rows of ``sql`` (one statement, classified already), or None when
    it answers no rows (INSERT/UPDATE/DELETE/MERGE without RETURNING)."""
    from .classify import SqlParseError, pg_statement_text, pg_statements

    try:
        stmts = pg_statements(sql)
    except SqlParseError:  # sql_admin only (sql_execute refused it): the server answers it
        return None
    if len(stmts) != 1:
        return None
    text = pg_statement_text(sql, stmts[0])
    stmt: dict[str, Any] = pg_statements(text)[0].get("stmt") or {}  # positions from here are in `text`
    if len(stmt) != 1:
        return None
    (top, body), = stmt.items()
    if top not in _RETURNING_KINDS or body.get("intoClause"):  # SELECT … INTO (sql_admin) creates a table
        return None
    # PostgreSQL 18's grammar (pglast 8) holds RETURNING in returningClause.exprs, older ones in returningList
    if top != "SelectStmt" and not (body.get("returningList") or (body.get("returningClause") or {}).get("exprs")):
        return None
    writing_ctes = _writes_in_with(body)
    if top == "SelectStmt" and not writing_ctes:
        return RowPlan(cursor=True, statement=text)
    if not writing_ctes:
        return RowPlan(cursor=False, statement=text)
    with_text, rest = _split_with(text, body)
    return RowPlan(cursor=False, statement=rest, with_text=with_text)


_RETURNING_KINDS = frozenset({"SelectStmt", "InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt"})
_WRITING = frozenset({"InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt"})


def _writes_in_with(body: dict[str, Any]) -> bool:
    ctes = (body.get("withClause") or {}).get("ctes") or []
    return any(next(iter(c.get("CommonTableExpr", {}).get("ctequery") or {"": 0})) in _WRITING for c in ctes)


class WrapError(Exception):
    """The statement could not be wrapped faithfully; ``str()`` is written for a model."""


_NOT_SPLIT = ("this statement's WITH clause could not be separated from the statement after it; write the "
              "WITH clause first, without parentheses around the whole statement")


def _split_with(text: str, body: dict[str, Any]) -> tuple[str, str]:
    """``text`` cut after its top-level WITH clause: ``("WITH … a AS (…), b AS (…)", "rest")``.

    Found with PostgreSQL's own scanner from the last CTE's position (from the parse):
    its name, column list, ``AS [NOT] MATERIALIZED``, the parenthesised query, then a
    ``SEARCH … SET col`` and a ``CYCLE … USING col`` clause if the parse has them. The
    caller checks the result by parsing it again (:func:`_check_wrapped`)."""
    from pglast import parser

    from .classify import _pg_placeholders

    with_clause = body["withClause"]
    last = with_clause["ctes"][-1]["CommonTableExpr"]
    placeheld = _pg_placeholders(text)
    data = placeheld.encode("utf-8")
    start = len(data[: int(with_clause.get("location") or 0)].decode("utf-8", errors="replace"))
    at = len(data[: int(last.get("location") or 0)].decode("utf-8", errors="replace"))
    scanned = parser.scan(placeheld)
    if any(t.start < start for t in scanned):  # e.g. "(WITH … SELECT …)": the WITH is not first
        raise WrapError(_NOT_SPLIT)
    tokens = [t for t in scanned if t.start >= at]
    i = 0

    def skip_parens(i: int) -> int:
        depth = 0
        while i < len(tokens):
            depth += {"ASCII_40": 1, "ASCII_41": -1}.get(tokens[i].name, 0)
            i += 1
            if depth == 0:
                return i
        raise WrapError(_NOT_SPLIT)

    try:
        i = 1  # the CTE's name
        if tokens[i].name == "ASCII_40":  # its column list
            i = skip_parens(i)
        while tokens[i].name != "ASCII_40":  # AS [NOT] MATERIALIZED
            i += 1
        i = skip_parens(i)
        for clause, last_word in (("search_clause", "SET"), ("cycle_clause", "USING")):
            if last.get(clause):
                depth = 0
                while not (depth == 0 and tokens[i].name == last_word):
                    depth += {"ASCII_40": 1, "ASCII_41": -1}.get(tokens[i].name, 0)
                    i += 1
                i += 2  # the keyword and the column after it
        end = tokens[i - 1].end + 1
    except IndexError as exc:
        raise WrapError(_NOT_SPLIT) from exc
    return text[start:end], text[end:]


_POSITIONS = frozenset({"location", "name_location", "stmt_location", "stmt_len", "list_start", "list_end",
                        "rexpr_list_start", "rexpr_list_end"})


def _strip_locations(tree: Any) -> Any:
    """The tree without the fields that only say where a node was in the text."""
    if isinstance(tree, dict):
        return {k: _strip_locations(v) for k, v in tree.items() if k not in _POSITIONS}
    if isinstance(tree, list):
        return [_strip_locations(v) for v in tree]
    return tree


def _check_wrapped(original: str, wrapped: str, name: str) -> None:
    """Refuse unless ``wrapped`` parses as one SELECT whose CTEs are exactly ``original``'s
    (its own WITH clause's CTEs, then ``reach_q`` holding the rest), trees compared without
    positions: the server then runs the statement that was classified, and nothing of it
    can have spilled into the capping query around it."""
    from .classify import SqlParseError, pg_statements

    (orig_raw,) = pg_statements(original)
    orig = orig_raw["stmt"]
    (top, body), = orig.items()
    try:
        (raw,) = pg_statements(wrapped)
        sel = raw["stmt"]["SelectStmt"]
        with_clause = sel["withClause"]
        ctes = with_clause["ctes"]
        mine = ctes[-1]["CommonTableExpr"]
    except (KeyError, ValueError, SqlParseError) as exc:
        raise WrapError(_NOT_SPLIT) from exc
    expected_ctes: list[Any] = []
    expected_body = orig
    if _writes_in_with(body):
        own = body["withClause"]
        expected_ctes = own["ctes"]
        expected_body = {top: {k: v for k, v in body.items() if k != "withClause"}}
        if bool(own.get("recursive")) != bool(with_clause.get("recursive")):
            raise WrapError(_NOT_SPLIT)
    if (
        mine.get("ctename") != name
        or _strip_locations(ctes[:-1]) != _strip_locations(expected_ctes)
        or _strip_locations(mine.get("ctequery")) != _strip_locations(expected_body)
    ):
        raise WrapError(_NOT_SPLIT)


def written_query(plan: RowPlan, original: str, type_oids: list[int], *, limit: int, max_value: int,
                  max_total: int, max_chars: int, name: str | None = None) -> str:
    """The capping query around a writing statement (``:name`` placeholders kept), checked.

    Columns: the values (cut on the server past ``max_value``, or all cut when the first
    row alone passes ``max_total``), their sizes, the running byte total, and how many
    rows the statement returned (``count(*)`` over the CTE, computed once)::

        WITH <its own writing CTEs,> reach_q AS (<statement>)
        SELECT <values>, <sizes>, t.reach_run, (SELECT count(*) FROM reach_q) FROM (
          SELECT u.*, sum(u.reach_b) OVER (ORDER BY u.reach_n) AS reach_run FROM (
            SELECT <cut values>, <sizes>, <bytes sent> AS reach_b, row_number() OVER () AS reach_n
            FROM (SELECT q.*, <sizes> FROM reach_q AS q(c0, …) OFFSET 0) AS s LIMIT <limit>) AS u
        ) AS t WHERE t.reach_n = 1 OR t.reach_run <= <max_total> ORDER BY t.reach_n
    """
    name = name or _rows_name()
    n = len(type_oids)
    head = f"{plan.with_text},\n" if plan.with_text else "WITH "
    count = f"(SELECT count(*) FROM {name})"
    if n == 0:  # SELECT with no columns over a writing CTE: only its rows are counted
        sql = f"{head}{name} AS (\n{plan.statement}\n) SELECT {count}"
        _check_wrapped(original, sql, name)
        return sql
    measured = [i for i, oid in enumerate(type_oids) if oid not in _FIXED]
    fixed_bytes = sum(_FIXED.get(oid, 0) for oid in type_oids)
    cols = ", ".join(_ident(i) for i in range(n))
    size_of = {i: (f"octet_length(q.{_ident(i)})" if type_oids[i] in _TEXT or type_oids[i] == _BYTEA
                   else f"octet_length(q.{_ident(i)}::text)") for i in measured}

    def short(col: str, oid: int) -> str:
        if oid in _TEXT:
            return f"left({col}, {max_chars})"
        if oid == _BYTEA:
            return f"substring({col} FROM 1 FOR {_HEX_BYTES})"
        return "NULL"

    inner = "".join(f", {size_of[i]} AS z{i}" for i in measured)
    cut = ", ".join(
        f"CASE WHEN s.z{i} > {max_value} THEN {short(f's.{_ident(i)}', type_oids[i])} ELSE s.{_ident(i)} END"
        f" AS {_ident(i)}" if i in measured else f"s.{_ident(i)}"
        for i in range(n)
    )
    sizes = "".join(f", s.z{i}" for i in measured)
    sent = " + ".join([str(fixed_bytes)] + [f"coalesce(CASE WHEN s.z{i} <= {max_value} THEN s.z{i} END, 0)"
                                            for i in measured])
    outs = ", ".join(
        f"CASE WHEN t.reach_run > {max_total} THEN {short(f't.{_ident(i)}', type_oids[i])} ELSE t.{_ident(i)} END"
        if i in measured else f"t.{_ident(i)}"
        for i in range(n)
    )
    size_array = "ARRAY[" + ", ".join(f"t.z{i}" for i in measured) + "]::int8[]"
    sql = (
        f"{head}{name} AS (\n{plan.statement}\n)\n"
        f"SELECT {outs}, {size_array}, t.reach_run, {count} FROM ("
        f"SELECT u.*, sum(u.reach_b) OVER (ORDER BY u.reach_n) AS reach_run FROM ("
        f"SELECT {cut}{sizes}, {sent} AS reach_b, row_number() OVER () AS reach_n FROM ("
        f"SELECT q.*{inner} FROM {name} AS q({cols}) OFFSET 0) AS s LIMIT {int(limit)}) AS u"
        f") AS t WHERE t.reach_n = 1 OR t.reach_run <= {int(max_total)} ORDER BY t.reach_n"
    )
    _check_wrapped(original, sql, name)
    return sql


def fetch_written(
    raw: Any, plan: RowPlan, original: str, params: dict[str, Any], *, limit: int, max_value: int,
    max_total: int, max_chars: int,
) -> tuple[Fetched, int]:
    """Run a writing statement once inside :func:`written_query`; the capped rows and how many
    rows the statement returned (its rows changed, for RETURNING)."""
    columns, oids = describe(raw, to_pyformat(original), params)
    sql = to_pyformat(written_query(plan, original, oids, limit=limit, max_value=max_value,
                                    max_total=max_total, max_chars=max_chars))
    cur = raw.cursor()
    with raw.pipeline():  # the extended protocol even without parameters: one command only
        cur.execute(sql, params, prepare=False)
    page = cur.fetchall()
    n = len(columns)
    if n == 0:
        total = int(page[0][0]) if page else 0
        return Fetched([], [], 0, False, 0, False), total
    measured = [i for i, oid in enumerate(oids) if oid not in _FIXED]
    out = Fetched(columns, [], 0, False, 0, False)
    total = 0
    for row in page:
        values, sizes, run, total = list(row[:n]), row[n], row[n + 1], int(row[n + 2])
        over = run is not None and run > max_total
        for k, i in enumerate(measured):
            size = sizes[k]
            if size is None:
                continue
            if size > max_value:
                values[i] = Cut(int(size), values[i], "value")
                out.cut_values += 1
            elif over:
                values[i] = Cut(int(size), values[i], "total")
                out.cut_values += 1
        if over:
            out.result_full = True
        out.rows.append(tuple(values))
    out.more_rows = max(0, total - len(out.rows))
    if len(out.rows) < min(limit, total):
        out.result_full = True
    return out, total
