"""What ``sql_execute`` checks on the database itself, around the statement.

The parse tree (``classify``) refuses a WHERE that reads no column, but not one
that reads a column and still holds for every row (``WHERE id = id``,
``WHERE id IS NOT NULL``, ``WHERE owner LIKE '%'``, a MERGE joining a table to
itself, ``INSERT … SELECT … ON CONFLICT DO UPDATE`` over the whole table,
``INSERT OR REPLACE``): whether a condition bounds anything depends on the data.
So the database answers it, inside the statement's own transaction, before the
commit: a statement that changed (updated, deleted, replaced) every row of a
table holding two rows or more is rolled back and refused, as an UPDATE/DELETE
without WHERE is. A table of one row may still lose it (``DELETE … WHERE id = 1``).

Sizes: a write can build a value (``repeat``, ``zeroblob``, ``printf('%.*c')``,
a recursive CTE doubling a string) or rows (``generate_series``, a cross join)
far larger than any honest change. The statement deadline bounds the time;
these caps bound the bytes:

- SQLite, enforced by the engine while the statement runs: no string or blob
  over ``max_write_value_bytes`` may be built (``SQLITE_LIMIT_LENGTH``, "string
  or blob too big"), and the file may grow by at most ``max_write_bytes``
  (``PRAGMA max_page_count``, "database or disk is full"). Both are set back
  after the call (the connection is pooled).
- PostgreSQL, measured before the commit (PostgreSQL has no per-statement size
  limit a non-superuser can set): the tables the statement writes may grow by at
  most ``max_write_bytes`` (``pg_total_relation_size``, TOAST and indexes
  included), and when chunks were written to a table's TOAST, no value written by this
  transaction may be longer than ``max_write_value_bytes``, by its length in any
  column type (a 1 GB ``repeat('x', …)`` compresses to a few MB on disk but is 1 GB
  for every reader).
  Over a cap: rolled back. PostgreSQL itself caps one value at 1 GB.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# A change to fewer rows than this is never "every row" (a one-row table may lose its row).
_MIN_ROWS = 2


def _every_row(what: str, table: str, rows: int) -> str:
    return (
        f"it {what} every row of {table} ({rows} rows), as an UPDATE/DELETE without WHERE would "
        "(its condition holds for every row); nothing was changed. Restrict it to the rows meant "
        "(WHERE id = :id …); changing a whole table is for sql_admin, which a person confirms"
    )


def _too_big(what: str) -> str:
    return (
        f"{what}; nothing was changed. Write smaller values or fewer rows per call "
        "(the limits are max_write_value_bytes and max_write_bytes in [plugins.reach-sql])"
    )


# -- SQLite ------------------------------------------------------------------------


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SqliteWriteGuard:
    """Caps and the every-row check for one ``sql_execute`` statement on SQLite."""

    def __init__(self, raw: sqlite3.Connection, sql: str, *, max_value_bytes: int, max_write_bytes: int) -> None:
        self.raw = raw
        self.max_value_bytes = max_value_bytes
        self.max_write_bytes = max_write_bytes
        self.kind, self.table = _sqlite_target(sql)
        self.before: int | None = None

    @contextmanager
    def limits(self) -> Iterator[None]:
        """Engine-enforced caps while the statement runs; set back afterwards."""
        raw = self.raw
        old_length = raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.max_value_bytes)
        old_max_pages = int(raw.execute("PRAGMA max_page_count").fetchone()[0])
        pages = int(raw.execute("PRAGMA page_count").fetchone()[0])
        page_size = int(raw.execute("PRAGMA page_size").fetchone()[0]) or 4096
        raw.execute(f"PRAGMA max_page_count = {pages + max(1, self.max_write_bytes // page_size)}")
        try:
            yield
        finally:
            raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, old_length)
            raw.execute(f"PRAGMA max_page_count = {old_max_pages}")

    def _count(self, up_to: int | None = None) -> int:
        assert self.table is not None
        inner = f"SELECT 1 FROM {self.table}" + (f" LIMIT {int(up_to)}" if up_to is not None else "")
        return int(self.raw.execute(f"SELECT count(*) FROM ({inner})").fetchone()[0])

    def start(self) -> None:
        """Before the statement: open the transaction the check may roll back (Python's sqlite3
        opens one implicitly only for a statement that starts with INSERT/UPDATE/DELETE/REPLACE,
        so ``WITH … UPDATE`` ran in autocommit); an INSERT that may replace rows needs the row
        count before.

        ``BEGIN IMMEDIATE`` takes the write lock first, waiting for another writer within the
        busy timeout (`database._sqlite_deadline`). A deferred transaction read (page and row
        counts) under a shared lock and then asked for the write lock, and SQLite answers that
        at once with "database is locked" while another connection writes (waiting there could
        deadlock): a second tool, another process, or reach's own statement that the core's
        deadline abandoned and that is still rolling back."""
        if not self.raw.in_transaction:
            self.raw.execute("BEGIN IMMEDIATE")
        if self.kind == "insert" and self.table is not None:
            self.before = self._count()

    def refusal(self) -> str | None:
        """After the statement (its cursor closed), inside its transaction."""
        if self.table is None or self.kind is None:
            return None
        changed = int(self.raw.execute("SELECT changes()").fetchone()[0])
        if self.kind == "delete":
            if changed >= _MIN_ROWS and self._count(1) == 0:
                return _every_row("deleted", self.table, changed)
        elif self.kind == "update":
            if changed >= _MIN_ROWS and self._count(changed + 1) <= changed:
                return _every_row("updated", self.table, changed)
        elif self.before is not None and self.before >= _MIN_ROWS:
            replaced = changed - (self._count() - self.before)  # rows changed that are not new rows
            if replaced >= self.before:
                return _every_row("replaced", self.table, self.before)
        return None


def _sqlite_target(sql: str) -> tuple[str | None, str | None]:
    """``("insert"|"update"|"delete", quoted table)`` of a SQLite data change, or ``(None, None)``.

    An INSERT counts only when it can replace rows (a SELECT source, OR REPLACE,
    ON CONFLICT …): a list of VALUES names its rows one by one."""
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from .classify import quiet_parse

    try:
        parsed = quiet_parse(sql, "sqlite")
    except SqlglotError:
        return None, None
    if len(parsed) != 1:  # none, or several statements (sqlglot.parse_one's Block): not one data change
        return None, None
    top = parsed[0]
    kinds = {exp.Insert: "insert", exp.Update: "update", exp.Delete: "delete"}
    kind = next((k for cls, k in kinds.items() if isinstance(top, cls)), None)
    if kind is None:
        return None, None
    target = top.this
    if isinstance(target, exp.Schema):
        target = target.this
    if not isinstance(target, exp.Table) or not target.name:
        return None, None
    if kind == "insert" and isinstance(top.expression, exp.Values) and not (
        top.args.get("alternative") or top.args.get("conflict")
    ):
        kind = "insert-values"
    table = _quote(target.name)
    if target.db:
        table = f"{_quote(target.db)}.{table}"
    return (None if kind == "insert-values" else kind), table


# -- PostgreSQL --------------------------------------------------------------------

# One round trip before the statement and one after: rows inserted/updated/deleted per
# table (grouped by partition root; whether that root is a partitioned table) in this
# session's pending counters, and for the tables the statement names and every table that
# inherits from them (pg_inherits: partitions, and the child tables of plain inheritance, whose
# rows an UPDATE of the parent writes too; pg_partition_tree listed partitions only, so a
# megabyte written through a parent into a child row passed both caps) their size and the
# chunks written to their TOAST table (a value stored out of line).
_PG_STATE = """
WITH RECURSIVE tree(rel) AS (
  SELECT to_regclass(name) FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL
  UNION
  SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.rel
)
SELECT
  (SELECT coalesce(json_agg(json_build_array(r::regclass::text, i, u, d,
                                              (SELECT relkind = 'p' FROM pg_class WHERE oid = r))), '[]') FROM (
     SELECT coalesce(pg_partition_root(oid), oid) AS r,
            sum(i)::bigint AS i, sum(u)::bigint AS u, sum(d)::bigint AS d
     FROM (SELECT oid, pg_stat_get_xact_tuples_inserted(oid) AS i, pg_stat_get_xact_tuples_updated(oid) AS u,
                  pg_stat_get_xact_tuples_deleted(oid) AS d
           FROM pg_class WHERE relkind IN ('r', 'm') AND oid >= 16384) AS s  -- not the system catalogs
     WHERE i + u + d > 0
     GROUP BY 1) AS counts),
  (SELECT coalesce(json_agg(json_build_array(rel::regclass::text, pg_total_relation_size(rel),
                                              coalesce(pg_stat_get_xact_tuples_inserted(
                                                  nullif(c.reltoastrelid, 0)), 0))), '[]')
   FROM tree JOIN pg_class c ON c.oid = tree.rel)
"""

_TEXTLIKE = frozenset({"text", "character varying", "character", "bytea", "name", "citext"})
# The variable-length columns of a table, each with its type, a domain's resolved to its base
# type (a domain over a domain too): a domain over text is measured as text.
_VARLENA_COLUMNS = """
WITH RECURSIVE col(name, typ) AS (
  SELECT a.attname, a.atttypid FROM pg_attribute a
  WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attlen = -1
  UNION ALL
  SELECT col.name, t.typbasetype FROM col JOIN pg_type t ON t.oid = col.typ WHERE t.typtype = 'd'
)
SELECT col.name, format_type(col.typ, NULL) FROM col JOIN pg_type t ON t.oid = col.typ WHERE t.typtype <> 'd'
"""


def pg_write_targets(sql: str) -> list[str]:
    """The tables an INSERT/UPDATE/MERGE anywhere in the statement writes, as ``"schema"."name"``."""
    from .classify import _nodes, pg_statements

    out: list[str] = []
    for stmt in pg_statements(sql):
        for node_type, node in _nodes(stmt):
            if node_type in ("InsertStmt", "UpdateStmt", "MergeStmt"):
                rel = node.get("relation") or {}
                if rel.get("relname"):
                    name = _quote(str(rel["relname"]))
                    out.append(f"{_quote(str(rel['schemaname']))}.{name}" if rel.get("schemaname") else name)
    return out


class PgWriteGuard:
    """The every-row check and the size caps for one ``sql_execute`` statement on PostgreSQL.

    Its own queries are not prepared (``prepare=False``): they are reach's, not the
    model's, and need no protection against a second command riding along."""

    def __init__(self, cursor: Any, sql: str, *, max_value_bytes: int, max_write_bytes: int) -> None:
        self.cur = cursor
        self.max_value_bytes = max_value_bytes
        self.max_write_bytes = max_write_bytes
        try:
            self.targets = pg_write_targets(sql)
        except Exception:  # noqa: BLE001 - the classifier already refused what cannot be parsed
            self.targets = []
        self.sizes: dict[str, tuple[int, int]] = {}
        self.counts: dict[str, tuple[int, int, int]] = {}
        self.partitioned: set[str] = set()

    def _state(self) -> tuple[dict[str, tuple[int, int, int]], dict[str, tuple[int, int]]]:
        """Rows inserted, updated, deleted per table, and sizes of the named tables. PostgreSQL
        15+ shows counts of earlier transactions not yet flushed too: only differences count."""
        self.cur.execute(_PG_STATE, (self.targets,), prepare=False)
        counts, sizes = self.cur.fetchone()
        self.partitioned.update(t for t, _i, _u, _d, partitioned in counts if partitioned)
        return ({t: (int(i), int(u), int(d)) for t, i, u, d, _p in counts},
                {name: (int(total), int(toast)) for name, total, toast in sizes})

    def start(self) -> None:
        self.counts, self.sizes = self._state()

    def refusal(self) -> str | None:
        cur = self.cur
        counts, now = self._state()
        for table, (ins, upd, dele) in counts.items():
            before = self.counts.get(table, (0, 0, 0))
            inserted, updated, deleted = ins - before[0], upd - before[1], dele - before[2]
            if updated + deleted < _MIN_ROWS:
                continue
            # rows before = rows after + deleted - inserted; every one was touched when
            # updated + deleted >= that, i.e. when rows after <= updated + inserted.
            # The counters are the table's own rows: a plain table is counted ONLY (without
            # the child tables that inherit from it, which a plain FROM reads too); a
            # partitioned table holds no rows itself, its counters are its partitions' summed.
            only = "" if table in self.partitioned else "ONLY "
            cur.execute(f"SELECT count(*) FROM (SELECT 1 FROM {only}{table} LIMIT %s) AS s",
                        (updated + inserted + 1,), prepare=False)
            after = int(cur.fetchone()[0])
            if after <= updated + inserted:
                what = "deleted" if not updated else "updated" if not deleted else "updated or deleted"
                return _every_row(what, table, updated + deleted)
        growth = sum(max(0, total - self.sizes.get(name, (0, 0))[0]) for name, (total, _toast) in now.items())
        if growth > self.max_write_bytes:
            return _too_big(f"it grew the table by {growth} bytes, more than the {self.max_write_bytes} "
                            "one call may write")
        for name, (_total, toast) in now.items():
            # chunks written to TOAST (counted, not measured by file size: a rolled-back
            # value leaves free space the next one fills without growing the file)
            if toast > self.sizes.get(name, (0, 0))[1] and (size := self._largest_new_value(name)) is not None \
                    and size > self.max_value_bytes:
                return _too_big(f"it wrote a value of {size} bytes into {name}, more than the "
                                f"{self.max_value_bytes} one value may hold")
        return None

    def _largest_new_value(self, table: str) -> int | None:
        """The longest variable-length value in the rows this transaction wrote to ``table``
        (their ``xmin`` is this transaction), by its length, never by its stored size.

        Stored sizes are compressed: a megabyte of ``repeat('x', …)`` stores in about 12 KB.
        So text and bytes (also behind a domain: ``CREATE DOMAIN note AS text``) are
        measured by ``octet_length``, every other type (arrays, JSON, XML, composites …)
        by the length of its text form, which is what every reader gets."""
        cur = self.cur
        cur.execute(_VARLENA_COLUMNS, (table,), prepare=False)
        columns = cur.fetchall()
        if not columns:
            return None
        sizes = [f"octet_length({_quote(name)}{'' if kind in _TEXTLIKE else '::text'})" for name, kind in columns]
        largest = sizes[0] if len(sizes) == 1 else f"greatest({', '.join(sizes)})"
        cur.execute(f"SELECT max({largest}) FROM {table} WHERE xmin = pg_current_xact_id()::xid", prepare=False)
        row = cur.fetchone()
        return None if row is None or row[0] is None else int(row[0])
