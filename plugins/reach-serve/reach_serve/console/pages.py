"""What the Runs, Audit and Tools pages show, read from the audit table and the Reach.

Reads only: the audit table through the store (reach-audit's schema), the
registry and the agents' policies. Every value shown came out of the audit
trail already redacted; what the console cuts is only length.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from reach_core.reveal import clip

__all__ = ["AuditFilter", "agent_tools", "audit_rows", "csv_rows", "cut", "run_detail", "recent_runs", "shorten"]

PAGE = 200  # audit records per page
RUN_SCAN = 5000  # recent records the Runs page groups into runs
CSV_CHUNK = 2000
_ASCII_SPACE = re.compile(r"[ \t\n\r\f\v]+")  # collapsed on one line; other spaces and separators are revealed


def cut(value: Any, limit: int = 160) -> tuple[str, int]:
    """A value as one line of at most ``limit`` characters, and how many characters that leaves out."""
    if value is None:
        return "", 0
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str,
                                                           separators=(", ", ": "))
    text = " ".join(_ASCII_SPACE.split(text)).strip()
    if len(text) <= limit:
        return text, 0
    head = clip(text, limit)  # a summary holds ⟨U+202E⟩ markers already: never half of one
    return head, len(text) - len(head)


def shorten(value: Any, limit: int = 160) -> str:
    """A value as one line of at most ``limit`` characters (results and arguments on lists),
    saying how many characters it leaves out; the record's own page shows all of them."""
    head, left_out = cut(value, limit)
    return f"{head}… [{left_out:,} more characters hidden]" if left_out else head


@dataclass
class AuditFilter:
    """The Audit page's filters, checked: a bad time is a message for the person, not a 500."""

    agent: str | None = None
    tool: str | None = None
    status: str | None = None
    kind: str | None = None
    since: str | None = None
    until: str | None = None
    before: int | None = None
    errors: list[str] = field(default_factory=list)
    # since/until as epoch seconds, worked out by ``of``
    _start: float | None = field(default=None, repr=False)
    _end: float | None = field(default=None, repr=False)

    @classmethod
    def of(cls, params: Any) -> AuditFilter:
        def text(name: str) -> str | None:
            value = (params.get(name) or "").strip()
            return value[:200] or None

        before = text("before")
        f = cls(agent=text("agent"), tool=text("tool"), status=text("status"), kind=text("kind"),
                since=text("since"), until=text("until"),
                before=int(before) if before and before.isascii() and before.isdigit() and len(before) < 12 else None)
        f._start, f._end = f._time("since"), f._time("until")
        return f

    def _time(self, name: str) -> float | None:
        from reach_audit.stats import parse_since

        value = getattr(self, name)
        try:
            return parse_since(value)
        except ValueError:
            self.errors.append(f"`{name}` must look like 15m, 24h, 7d or 2026-05-01T08:00; got {value!r}")
            setattr(self, name, None)
            return None

    def where(self) -> tuple[str, list[Any]]:
        clauses, params = ["1 = 1"], []
        for column in ("agent", "tool", "status", "kind"):
            value = getattr(self, column)
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if self._start is not None:
            clauses.append("ts >= ?")
            params.append(self._start)
        if self._end is not None:
            clauses.append("ts < ?")
            params.append(self._end)
        return " AND ".join(clauses), params

    def query(self, **changes: Any) -> dict[str, str]:
        """The filters as query parameters (for links: next page, CSV export)."""
        out = {k: getattr(self, k) for k in ("agent", "tool", "status", "kind", "since", "until")}
        out.update(changes)
        return {k: str(v) for k, v in out.items() if v not in (None, "")}


async def _store(reach: Any) -> Any:
    import asyncio

    import reach_audit
    from reach_audit.query import ensure_schema_sync

    await reach_audit.flush(reach)  # this instance's own records first
    await asyncio.to_thread(ensure_schema_sync, reach.store)
    return reach.store


def _entry(row: tuple[Any, ...]) -> dict[str, Any]:
    record = json.loads(row[9])  # its "ts" is the ISO time the chain hashed
    return {**record, "seq": row[0], "hash": row[10]}


async def audit_rows(reach: Any, f: AuditFilter) -> tuple[list[dict[str, Any]], int | None]:
    """One page of matching records, newest first, and the ``before`` of the next page."""
    from reach_audit.storage import COLUMNS, TABLE

    store = await _store(reach)
    where, params = f.where()
    if f.before is not None:
        where += " AND seq < ?"
        params.append(f.before)
    rows = await store.fetchall(f"SELECT {COLUMNS} FROM {TABLE} WHERE {where} ORDER BY seq DESC LIMIT ?",
                                (*params, PAGE + 1))
    entries = [_entry(r) for r in rows[:PAGE]]
    more = entries[-1]["seq"] if len(rows) > PAGE else None
    return entries, more


async def csv_rows(reach: Any, f: AuditFilter) -> AsyncIterator[str]:
    """Every matching record, oldest first, as CSV text (the columns of ``reach audit export``)."""
    import csv
    import io

    from reach_audit.cli import CSV_FIELDS
    from reach_audit.spreadsheet import cell
    from reach_audit.storage import COLUMNS, TABLE

    store = await _store(reach)
    where, params = f.where()
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_FIELDS)
    last = -1
    while True:
        rows = await store.fetchall(
            f"SELECT {COLUMNS} FROM {TABLE} WHERE {where} AND seq > ? ORDER BY seq LIMIT ?",
            (*params, last, CSV_CHUNK))
        for row in rows:
            entry = _entry(row)
            writer.writerow([cell(entry.get(name)) for name in CSV_FIELDS])  # the rule of `reach audit export`
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        if len(rows) < CSV_CHUNK:
            return
        last = rows[-1][0]


async def recent_runs(reach: Any, limit: int = 50) -> list[dict[str, Any]]:
    """The latest runs seen in the audit trail, newest first: calls, errors, tokens, time span."""
    from reach_audit.storage import COLUMNS, TABLE

    store = await _store(reach)
    rows = await store.fetchall(
        f"SELECT {COLUMNS} FROM {TABLE} WHERE run_id IS NOT NULL ORDER BY seq DESC LIMIT ?", (RUN_SCAN,))
    runs: dict[str, dict[str, Any]] = {}
    for row in rows:
        run_id = row[7]
        run = runs.get(run_id)
        if run is None:
            if len(runs) >= limit:
                continue
            run = runs[run_id] = {"run_id": run_id, "agent": row[3], "last": row[1], "first": row[1], "calls": 0,
                                  "errors": 0, "steps": 0, "tokens": 0, "tools": []}
        run["first"] = min(run["first"], row[1])
        if row[2] == "call":
            run["calls"] += 1
            if row[5] != "ok":
                run["errors"] += 1
            if row[4] and row[4] not in run["tools"]:
                run["tools"].append(row[4])
        elif row[2] == "step":
            run["steps"] += 1
            run["tokens"] += int((json.loads(row[9]).get("tokens") or {}).get("total") or 0)
    return list(runs.values())


async def run_detail(reach: Any, run_id: str) -> list[dict[str, Any]]:
    """Every record of one run, in order."""
    from reach_audit.storage import COLUMNS, TABLE

    store = await _store(reach)
    rows = await store.fetchall(f"SELECT {COLUMNS} FROM {TABLE} WHERE run_id = ? ORDER BY seq LIMIT 5000",
                                (run_id,))
    return [_entry(r) for r in rows]


async def audit_record(reach: Any, seq: int) -> dict[str, Any] | None:
    from reach_audit.storage import COLUMNS, TABLE

    store = await _store(reach)
    rows = await store.fetchall(f"SELECT {COLUMNS} FROM {TABLE} WHERE seq = ?", (seq,))
    return _entry(rows[0]) if rows else None


VERDICTS = {0: ("denied", "not offered, refused if called"), 1: ("runs", "runs without asking"),
            2: ("asks a person", "waits for an operator's approval")}


def agent_tools(reach: Any) -> list[dict[str, Any]]:
    """For each configured agent (and ``default``): every tool by tier, with its verdict and pin."""
    from reach_core.connectors import RISKS

    names = sorted({"default", *reach.config.agents})
    pins = reach.pins.pins
    tools = sorted(reach.all_tools(), key=lambda t: (RISKS.index(t.risk) if t.risk in RISKS else 99, t.name))
    out = []
    for agent in names:
        policy = reach.policy(agent)
        tiers: dict[str, list[dict[str, Any]]] = {}
        for tool in tools:
            description, cut_off = cut(tool.description, 140)
            verdict = policy.verdict(tool)
            if tool.blocked:
                pin = "blocked: definition changed since pinned"
            elif tool.name in pins:
                pin = "pinned, matches"
            else:
                pin = "not pinned"
            tiers.setdefault(tool.risk, []).append({
                "name": tool.name, "plugin": tool.plugin, "verdict": VERDICTS[verdict][0],
                "mode": policy.approval_mode(tool) if verdict == 2 else None, "pin": pin,
                # the provider's words (an MCP server, an OpenAPI file, a plugin): the page frames them
                # as such and says, in its own words, how much of them it leaves out
                "description": description, "description_cut": cut_off})
        out.append({"agent": agent, "tiers": tiers, "time": time.time()})
    return out
