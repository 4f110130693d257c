"""Numbers to steer by, computed from the audit log over a time window.

Per tool and per agent: calls, success rate, p50/p95 latency, error codes; from
the agent-loop steps: how often each offered tool was actually called, tools
never chosen, and tokens per agent. Other plugins (a preselector weighting by
success rate) use :func:`reach_audit.stats` / :func:`reach_audit.success_rates`.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

# This module is imported with the package, so with the entry point (``reach plugins``
# imports it to list the plugin): datetime, math and the regex wait for first use.
if TYPE_CHECKING:
    from datetime import datetime, timedelta

    Since = float | int | str | datetime | timedelta | None

_UNIT_S = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def __getattr__(name: str) -> Any:
    """``Since`` (a window bound's type: ``float | int | str | datetime | timedelta | None``),
    built on first access."""
    if name == "Since":
        from datetime import datetime, timedelta

        value = float | int | str | datetime | timedelta | None
        globals()["Since"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _duration() -> re.Pattern[str]:
    return re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w)\s*$", re.IGNORECASE)


def parse_since(value: Since, *, now: float | None = None) -> float | None:
    """A window start as epoch seconds: ``"15m"``, ``"24h"``, ``"7d"``, an ISO date
    or datetime, a ``timedelta`` (ago), a ``datetime``, epoch seconds, or ``None`` (all)."""
    from datetime import datetime, timedelta

    now = time.time() if now is None else now
    if value is None or value == "" or value == "all":
        return None
    if isinstance(value, timedelta):
        return now - value.total_seconds()
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, int | float):
        return float(value)
    match = _duration().match(value)
    if match:
        return now - float(match.group(1)) * _UNIT_S[match.group(2).lower()]
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"`since` must look like 15m, 24h, 7d or 2026-05-01T00:00:00; got {value!r}"
        ) from None
    return parsed.timestamp()


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an already sorted list (``None`` when empty)."""
    if not sorted_values:
        return None
    import math

    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return round(sorted_values[rank - 1], 3)


@dataclass
class Group:
    """Call figures of one tool or one agent."""

    name: str
    calls: int = 0
    ok: int = 0
    success_rate: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    errors: dict[str, int] = field(default_factory=dict)
    # tools: how often offered in a step, and how often chosen when offered
    offered: int = 0
    chosen: int = 0
    offered_called_rate: float | None = None
    # agents: agent-loop steps and the tokens they burned
    steps: int = 0
    tokens: dict[str, int] = field(default_factory=dict)


@dataclass
class AuditStats:
    """What ``reach audit stats`` shows; ``to_dict()`` is its ``--json`` output."""

    since: float | None
    until: float | None
    calls: int
    success_rate: float | None
    tools: dict[str, Group]
    agents: dict[str, Group]
    never_chosen: list[str]
    tokens: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["tools"] = {k: _trim(v, "tool") for k, v in out["tools"].items()}
        out["agents"] = {k: _trim(v, "agent") for k, v in out["agents"].items()}
        return out


def _trim(group: dict[str, Any], kind: str) -> dict[str, Any]:
    drop = ("steps", "tokens") if kind == "tool" else ("offered", "chosen", "offered_called_rate")
    return {k: v for k, v in group.items() if k not in drop}


def query(since: float | None, until: float | None) -> tuple[str, tuple[Any, ...]]:
    """The one SELECT the figures need; step records are the only JSON it parses."""
    from .storage import TABLE

    sql = (
        f"SELECT kind, agent, tool, status, elapsed_ms, "
        f"CASE WHEN kind = 'step' THEN record END FROM {TABLE} WHERE 1 = 1"
    )
    params: list[Any] = []
    if since is not None:
        sql += " AND ts >= ?"
        params.append(since)
    if until is not None:
        sql += " AND ts < ?"
        params.append(until)
    return sql, tuple(params)


def compute(rows: list[tuple], since: float | None = None, until: float | None = None) -> AuditStats:
    """Fold rows of :func:`query` into :class:`AuditStats`."""
    tools: dict[str, Group] = {}
    agents: dict[str, Group] = {}
    lat_tool: dict[str, list[float]] = {}
    lat_agent: dict[str, list[float]] = {}
    err_tool: dict[str, Counter[str]] = {}
    err_agent: dict[str, Counter[str]] = {}
    tokens_all: Counter[str] = Counter()
    calls = ok_all = 0
    for kind, agent, tool, status, elapsed, record in rows:
        agent = agent or "default"
        ga = agents.get(agent) or agents.setdefault(agent, Group(agent))
        if kind == "step":
            data = json.loads(record) if record else {}
            ga.steps += 1
            tok = data.get("tokens") or {}
            for key in ("prompt", "completion", "total", "cached"):
                if tok.get(key):
                    ga.tokens[key] = ga.tokens.get(key, 0) + int(tok[key])
                    tokens_all[key] += int(tok[key])
            called = set(data.get("called") or ())
            for name in data.get("offered") or ():
                gt = tools.get(name) or tools.setdefault(name, Group(name))
                gt.offered += 1
                if name in called:
                    gt.chosen += 1
            continue
        if kind != "call":
            continue
        name = tool or "?"
        gt = tools.get(name) or tools.setdefault(name, Group(name))
        calls += 1
        good = status == "ok"
        ok_all += good
        for g, lat, errs in ((gt, lat_tool, err_tool), (ga, lat_agent, err_agent)):
            g.calls += 1
            g.ok += good
            if elapsed is not None:
                lat.setdefault(g.name, []).append(float(elapsed))
            if not good:
                errs.setdefault(g.name, Counter())[status or "error"] += 1
    for groups, lat, errs in ((tools, lat_tool, err_tool), (agents, lat_agent, err_agent)):
        for g in groups.values():
            if g.calls:
                g.success_rate = round(g.ok / g.calls, 4)
            values = sorted(lat.get(g.name, ()))
            g.p50_ms, g.p95_ms = percentile(values, 50), percentile(values, 95)
            g.errors = dict(errs.get(g.name, Counter()).most_common())
            if g.offered:
                g.offered_called_rate = round(g.chosen / g.offered, 4)
    never = sorted(n for n, g in tools.items() if g.offered and not g.chosen)
    return AuditStats(
        since=since,
        until=until,
        calls=calls,
        success_rate=round(ok_all / calls, 4) if calls else None,
        tools=dict(sorted(tools.items())),
        agents=dict(sorted(agents.items())),
        never_chosen=never,
        tokens=dict(tokens_all),
    )


def table_exists_sql() -> str:
    from .storage import TABLE

    return f"SELECT name FROM sqlite_master WHERE type = 'table' AND name = '{TABLE}'"
