"""Reading the audit log: tail, export, stats and chain verification.

Blocking functions over the store's ``*_sync`` methods: the CLI calls them
directly, the async API runs them in a worker thread.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from .chain import GENESIS, link_hash
from .record import exact_ts, iso
from .stats import AuditStats, Since, compute, parse_since, query
from .storage import COLUMNS, COMPONENT, MIGRATIONS, TABLE

CHUNK = 2000


def ensure_schema_sync(store: Any) -> None:
    """Create the table if this database never saw an audit record.

    A migration takes the write lock, which ``tail --follow`` must not do every poll,
    so the store's schema record (``reach_schema``, written by every migration) is read
    first and the migration runs only when it lacks this component's last version.
    Nothing is remembered here: the database says.
    """
    try:
        row = store.fetchall_sync("SELECT MAX(version) FROM reach_schema WHERE component = ?", (COMPONENT,))
    except Exception:  # noqa: BLE001 - a store without that record (reach-audit's own file): migrate
        row = None
    if row and row[0][0] is not None and int(row[0][0]) >= len(MIGRATIONS):
        return
    store.migrate_sync(COMPONENT, MIGRATIONS)


@dataclass
class Entry:
    """One stored row: its position, hash and record."""

    seq: int
    hash: str
    record: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, **self.record, "hash": self.hash}


def _entry(row: tuple) -> Entry:
    return Entry(seq=row[0], hash=row[10], record=json.loads(row[9]))


def tail_sync(
    store: Any,
    *,
    limit: int = 20,
    after: int | None = None,
    agent: str | None = None,
    tool: str | None = None,
    kind: str | None = None,
) -> list[Entry]:
    """The last ``limit`` records (or all records after ``after``), oldest first."""
    ensure_schema_sync(store)
    where: list[str] = ["1 = 1"]
    params: list[Any] = []
    if after is not None:
        where.append("seq > ?")
        params.append(after)
    for column, value in (("agent", agent), ("tool", tool), ("kind", kind)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if after is not None:
        sql = f"SELECT {COLUMNS} FROM {TABLE} WHERE {' AND '.join(where)} ORDER BY seq LIMIT ?"
        rows = store.fetchall_sync(sql, (*params, limit))
    else:
        sql = f"SELECT {COLUMNS} FROM {TABLE} WHERE {' AND '.join(where)} ORDER BY seq DESC LIMIT ?"
        rows = list(reversed(store.fetchall_sync(sql, (*params, limit))))
    return [_entry(r) for r in rows]


def head_seq_sync(store: Any) -> int:
    ensure_schema_sync(store)
    row = store.fetchall_sync(f"SELECT MAX(seq) FROM {TABLE}")
    return int(row[0][0] or 0) if row else 0


def iter_entries_sync(store: Any, *, since: Since = None) -> Iterator[Entry]:
    """Every record in order, read in chunks so a large log never sits in memory."""
    ensure_schema_sync(store)
    start = parse_since(since)
    last = 0
    while True:
        sql = f"SELECT {COLUMNS} FROM {TABLE} WHERE seq > ?"
        params: list[Any] = [last]
        if start is not None:
            sql += " AND ts >= ?"
            params.append(start)
        rows = store.fetchall_sync(sql + " ORDER BY seq LIMIT ?", (*params, CHUNK))
        if not rows:
            return
        for row in rows:
            yield _entry(row)
        last = rows[-1][0]


def stats_sync(store: Any, *, since: Since = "24h", until: Since = None) -> AuditStats:
    """Figures per tool and per agent over a window (see ``reach_audit.stats``)."""
    ensure_schema_sync(store)
    start, end = parse_since(since), parse_since(until)
    sql, params = query(start, end)
    return compute(store.fetchall_sync(sql, params), start, end)


@dataclass
class VerifyReport:
    """Result of walking the chain. ``broken_at`` is the seq of the first bad row."""

    ok: bool
    checked: int
    head: str
    broken_at: int | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_INDEXED = ("kind", "agent", "tool", "status", "elapsed_ms", "run_id", "call_id")


def _check_row(row: tuple, prev: str, numbered: bool) -> tuple[str, str | None]:
    """Return (this row's expected hash, the reason it is broken or None).

    Every column is checked: ``record`` and ``hash`` by the link; ``seq`` and ``ts``
    against the hashed record (its ``seq``, and the exact float of its ``ts``); the
    other columns must equal the record's fields exactly, whatever their value.
    Records written before ``seq`` was hashed (none has it) are checked as they
    were then: every column but ``seq``, ``ts`` to the microsecond. Once one
    numbered record was seen, every later one must be numbered too.
    """
    seq, ts, *cols = row[:9]
    text, stored = row[9], row[10]
    expected = link_hash(prev, text)
    if expected != stored:
        return expected, (
            "hash mismatch: the record or a record before it was changed, inserted or removed"
        )
    try:
        record = json.loads(text)
    except ValueError:
        return expected, "record is not valid JSON"
    if not isinstance(record, dict):
        return expected, "record is not a JSON object"
    for name, value in zip(_INDEXED, cols, strict=True):
        held = record.get(name)
        if held != value or type(held) is not type(value) and not _same_number(held, value):
            return expected, f"column {name!r} ({value!r}) differs from the hashed record ({held!r})"
    if "seq" in record or numbered:
        if type(record.get("seq")) is not int or record["seq"] != seq or type(seq) is not int:
            return expected, f"column 'seq' ({seq!r}) differs from the hashed record ({record.get('seq')!r})"
        if not isinstance(ts, float) or ts != exact_ts(ts):
            return expected, f"column 'ts' ({ts!r}) is not the instant of the hashed record"
    if not isinstance(ts, int | float) or isinstance(ts, bool) or iso(ts) != record.get("ts"):
        return expected, "column 'ts' differs from the hashed record"
    return expected, None


def _same_number(a: Any, b: Any) -> bool:
    """A REAL column read back as int (SQLite stores 2.0 as REAL but a store may give 2)."""
    return all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))


def verify_sync(store: Any) -> VerifyReport:
    """Recompute every link from the first record; stop at the first broken one."""
    ensure_schema_sync(store)
    prev, checked, numbered = GENESIS, 0, False
    last: int | None = None  # no lower bound at first: a row moved to seq <= 0 is read too
    while True:
        after = "" if last is None else "WHERE seq > ?"
        rows = store.fetchall_sync(
            f"SELECT {COLUMNS} FROM {TABLE} {after} ORDER BY seq LIMIT ?", (*(() if last is None else (last,)), CHUNK)
        )
        if not rows:
            return VerifyReport(ok=True, checked=checked, head=prev)
        for row in rows:
            expected, reason = _check_row(row, prev, numbered)
            if reason is not None:
                return VerifyReport(ok=False, checked=checked, head=prev, broken_at=row[0], reason=reason)
            numbered = numbered or '"seq":' in row[9] and "seq" in json.loads(row[9])
            prev = expected
            checked += 1
        last = rows[-1][0]
