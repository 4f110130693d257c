"""``reach audit ...``: tail, stats, export, verify.

The commands read the audit log of the Reach the ``reach`` command would build
(same config, same data directory), through the store's blocking methods.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

import click

from .query import Entry, head_seq_sync, iter_entries_sync, stats_sync, tail_sync, verify_sync
from .stats import Group, parse_since
from .storage import store_for


def _reach(ctx: click.Context) -> Any:
    """The Reach of this CLI invocation: the root command's, or one built from config."""
    root = ctx.find_root()
    obj = root.obj
    for candidate in (obj, getattr(obj, "reach", None), obj.get("reach") if isinstance(obj, dict) else None):
        if candidate is not None and hasattr(candidate, "store"):
            return candidate
    getter = getattr(obj, "get_reach", None)
    if callable(getter):
        return getter()
    from reach_core import Reach

    config = obj.get("config") if isinstance(obj, dict) else getattr(obj, "config", None)
    return Reach(config)


def _store(ctx: click.Context) -> Any:
    return store_for(_reach(ctx))


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def _line(entry: Entry) -> str:
    r = entry.record
    if r.get("kind") == "step":
        tok = r.get("tokens") or {}
        return (
            f"{r.get('ts', '')}  #{entry.seq:<6} step  agent={r.get('agent')} run={r.get('run_id')} "
            f"step={r.get('step')} offered={len(r.get('offered') or [])} "
            f"called={','.join(r.get('called') or []) or '-'} tokens={tok.get('total', 0)}"
        )
    if r.get("kind") == "confirmation":
        return (
            f"{r.get('ts', '')}  #{entry.seq:<6} confirm {r.get('status', '?'):<10} {r.get('tool')!s:<24} "
            f"agent={r.get('agent')} id={r.get('confirmation_id')} by={r.get('by') or '-'}"
        )
    elapsed = r.get("elapsed_ms")
    ms = f"{elapsed:.1f}ms" if isinstance(elapsed, int | float) else "-"
    return (
        f"{r.get('ts', '')}  #{entry.seq:<6} {r.get('status', '?'):<18} {r.get('tool')!s:<24} "
        f"agent={r.get('agent')} {ms} call={r.get('call_id')} run={r.get('run_id') or '-'}"
    )


@click.group("audit")
def audit_group() -> None:
    """The audit log: every tool call on the record (reach-audit)."""


@audit_group.command("tail")
@click.option("-n", "--limit", default=20, show_default=True, help="how many of the latest records")
@click.option("-f", "--follow", is_flag=True, help="keep printing new records as they arrive")
@click.option("--agent", default=None, help="only this agent")
@click.option("--tool", default=None, help="only this tool")
@click.option("--kind", type=click.Choice(["call", "step", "confirmation"]), default=None,
              help="only this kind of record")
@click.option("--json", "as_json", is_flag=True, help="one JSON record per line")
@click.option("--interval", default=0.5, show_default=True, hidden=True)
@click.pass_context
def tail_cmd(
    ctx: click.Context,
    limit: int,
    follow: bool,
    agent: str | None,
    tool: str | None,
    kind: str | None,
    as_json: bool,
    interval: float,
) -> None:
    """Show the latest audit records (oldest first)."""
    store = _store(ctx)
    show = (lambda e: _dump(e.to_dict())) if as_json else _line
    entries = tail_sync(store, limit=limit, agent=agent, tool=tool, kind=kind)
    for entry in entries:
        click.echo(show(entry))
    if not entries and not as_json:
        filters = ", ".join(f"{k}={v}" for k, v in (("agent", agent), ("tool", tool), ("kind", kind)) if v)
        click.echo(f"no audit records{' matching ' + filters if filters else ' yet'}"
                   + ("; waiting for new ones (Ctrl-C to stop)" if follow else ""))
    if not follow:
        return
    last = entries[-1].seq if entries else head_seq_sync(store)
    try:
        while True:
            time.sleep(interval)
            for entry in tail_sync(store, after=last, limit=1000, agent=agent, tool=tool, kind=kind):
                click.echo(show(entry))
                last = entry.seq
            last = max(last, head_seq_sync(store))
            sys.stdout.flush()
    except KeyboardInterrupt:
        return


def _fmt(value: float | None, pattern: str = "{:.1f}") -> str:
    return "-" if value is None else pattern.format(value)


def _group_line(g: Group, tools: bool) -> str:
    errors = ", ".join(f"{k}={v}" for k, v in g.errors.items()) or "-"
    base = (
        f"  {g.name:<24} calls={g.calls:<6} ok={_fmt(g.success_rate and g.success_rate * 100, '{:.1f}%')}"
        f" p50={_fmt(g.p50_ms)}ms p95={_fmt(g.p95_ms)}ms errors: {errors}"
    )
    if tools and g.offered:
        base += (f"  offered={g.offered} chosen={g.chosen} "
                 f"({_fmt(g.offered_called_rate and g.offered_called_rate * 100, '{:.0f}%')})")
    if not tools and g.steps:
        base += f"  steps={g.steps} tokens={g.tokens.get('total', 0)}"
    return base


@audit_group.command("stats")
@click.option("--since", default="24h", show_default=True, help="window start: 15m, 24h, 7d, an ISO date, or 'all'")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.pass_context
def stats_cmd(ctx: click.Context, since: str, as_json: bool) -> None:
    """Calls, success rates, latency, error codes, offered→called rates and tokens."""
    try:
        parse_since(since)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    figures = stats_sync(_store(ctx), since=since)
    if as_json:
        click.echo(_dump(figures.to_dict()))
        return
    window = ("all time" if figures.since is None
              else f"since {datetime.fromtimestamp(figures.since, UTC):%Y-%m-%d %H:%M:%S}Z")
    rate = _fmt(figures.success_rate and figures.success_rate * 100, "{:.1f}%")
    click.echo(f"{figures.calls} calls {window}, {rate} ok")
    click.echo("tools:")
    for g in figures.tools.values():
        click.echo(_group_line(g, tools=True))
    click.echo("agents:")
    for g in figures.agents.values():
        click.echo(_group_line(g, tools=False))
    if figures.never_chosen:
        click.echo("offered but never chosen: " + ", ".join(figures.never_chosen))
    if figures.tokens:
        click.echo("tokens: " + ", ".join(f"{k}={v}" for k, v in figures.tokens.items()))


CSV_FIELDS = (
    "seq", "ts", "kind", "trace_id", "run_id", "parent_run_id", "call_id", "agent", "tool", "plugin",
    "risk", "status", "attempts", "fallback", "elapsed_ms", "idempotency_key", "args", "result",
    "error", "hash",
)


@audit_group.command("export")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@click.option("--since", default=None, help="only records from then on (15m, 24h, 7d, ISO date)")
@click.option("-o", "--output", type=click.File("w", encoding="utf-8"), default="-", help="file (default stdout)")
@click.pass_context
def export_cmd(ctx: click.Context, fmt: str, since: str | None, output: Any) -> None:
    """Write the whole log (or a window of it) as JSON lines or CSV."""
    entries = iter_entries_sync(_store(ctx), since=since)
    if fmt == "jsonl":
        for entry in entries:
            output.write(_dump(entry.to_dict()) + "\n")
        return
    from .spreadsheet import cell

    writer = csv.writer(output)
    writer.writerow(CSV_FIELDS)
    for entry in entries:
        row = entry.to_dict()
        writer.writerow([cell(row.get(name)) for name in CSV_FIELDS])  # no cell runs as a formula


@audit_group.command("verify")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.pass_context
def verify_cmd(ctx: click.Context, as_json: bool) -> None:
    """Check the hash chain; exit 1 and name the first broken link if there is one."""
    report = verify_sync(_store(ctx))
    if as_json:
        click.echo(_dump(report.to_dict()))
    elif report.ok:
        click.echo(f"ok: {report.checked} records, chain intact; head {report.head}")
    else:
        click.echo(
            f"BROKEN at record #{report.broken_at}: {report.reason} "
            f"({report.checked} records before it are intact)"
        )
    if not report.ok:
        ctx.exit(1)
