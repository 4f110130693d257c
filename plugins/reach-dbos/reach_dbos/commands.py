"""``reach runs list|show|resume|cancel [--json]``: the durable runs in PostgreSQL.

``list``, ``show`` and ``cancel`` only read or mark rows (no executor starts).
``resume`` starts reach here, which resumes this executor's unfinished runs,
resumes the named one too (a cancelled run continues from its last finished
step), and waits for it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from reach_core.reveal import reveal_text

__all__ = ["add_commands", "runs"]


def add_commands(cli: click.Group) -> None:
    cli.add_command(runs)


def _settings(ctx: click.Context) -> Any:
    from reach_core.cli import reach_of

    from .runner import settings_of

    return settings_of(reach_of(ctx))


def _client(ctx: click.Context) -> Any:
    from reach_core.errors import ReachError

    from .runs import RunsClient

    try:
        return RunsClient(_settings(ctx))
    except ReachError as exc:
        raise click.ClickException(str(exc)) from None


def _dump(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, default=str))


def _seen(value: Any) -> str:
    """A field as a person reads it on its line of the terminal: hidden characters (and newlines,
    tabs) spelled ``⟨U+001B⟩``, the rule of ``reach confirm list`` and the console
    (:mod:`reach_core.reveal`). A run's question is what a user typed, its tool names, answer and
    errors come from a model: an ESC sequence or a bidi control in them must not redraw what the
    operator reads. ``--json`` output is data and stays exact."""
    return reveal_text(str(value), one_line=True)


def _cost(row: dict[str, Any]) -> str:
    if row["cost"] is not None:
        return f"{row['cost']:.4f}"
    return "no price for " + ", ".join(_seen(m) for m in row["unpriced_models"]) if row["unpriced_models"] else "0"


@click.group("runs")
def runs() -> None:
    """Durable runs (reach-dbos): list, show, resume, cancel."""


@runs.command("list")
@click.option("--status", type=click.Choice(["PENDING", "ENQUEUED", "SUCCESS", "ERROR", "CANCELLED"],
                                            case_sensitive=False), default=None, help="Only runs in this state.")
@click.option("--limit", type=click.IntRange(1, 10000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def runs_list(ctx: click.Context, status: str | None, limit: int, as_json: bool) -> None:
    """Durable runs, newest first (PENDING: running, waiting, or left by a stopped instance)."""
    client = _client(ctx)
    try:
        rows = client.list(status=status.upper() if status else None, limit=limit)
    finally:
        client.close()
    if as_json:
        _dump(rows)
        return
    if not rows:
        click.echo("no durable runs" + (f" with status {status.upper()}" if status else "") + ".")
        return
    for r in rows:
        click.echo(f"{_seen(r['run_id'])}  {r['status']:<10} {_seen(r['executor'] or '-'):<12} "
                   f"{r['tokens']['total_tokens']:>8} tok {_cost(r):>10}  {_seen(r['question'][:60])}")


@runs.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def runs_show(ctx: click.Context, run_id: str, as_json: bool) -> None:
    """A run's status, its checkpointed steps, the tokens used so far and what it waits for."""
    client = _client(ctx)
    try:
        row = client.show(run_id)
    finally:
        client.close()
    if row is None:
        raise click.ClickException(f"no durable run {run_id!r}; `reach runs list` shows the run ids")
    if as_json:
        _dump(row)
        return
    click.echo(f"run {_seen(row['run_id'])}: {row['status']} (executor {_seen(row['executor'])})")
    click.echo(f"question: {_seen(row['question'])}")
    t = row["tokens"]
    click.echo(f"tokens so far: {t['total_tokens']} ({t['prompt_tokens']} prompt, {t['completion_tokens']} completion, "
               f"{t['cached_tokens']} cached)")
    click.echo(f"cost so far: {_cost(row)}")
    for s in row["steps"]:
        detail = ""
        if "tool_calls" in s:
            detail = ("calls " + (", ".join(s["tool_calls"]) or "none")
                      + (f"; says {s['text']!r}" if s.get("text") else ""))
        elif "results" in s:
            detail = ", ".join(f"{r['name']} {'ok' if r['ok'] else r['error']}" for r in s["results"])
        elif "approval" in s:
            detail = f"approval {s['approval']}"
        state = "done" if s["done"] else "running"
        click.echo(f"  {s['step']:>3} {_seen(s['kind']):<14} {state:<8} {_seen(detail)}")
    if row.get("pending_approval"):
        click.echo(f"waiting for approval: {_seen(row['pending_approval'])}")
    if row.get("outcome"):
        click.echo(f"outcome: {_seen(row['outcome'])}" + (f" ({_seen(row['error'])})" if row.get("error") else ""))


@runs.command("cancel")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def runs_cancel(ctx: click.Context, run_id: str, as_json: bool) -> None:
    """Stop a run before its next step (the step running now finishes and is kept)."""
    client = _client(ctx)
    try:
        found = client.cancel(run_id)
    finally:
        client.close()
    if not found:
        raise click.ClickException(f"no durable run {run_id!r}; `reach runs list` shows the run ids")
    if as_json:
        _dump({"run_id": run_id, "cancelled": True})
    else:
        click.echo(f"run {_seen(run_id)} cancelled; `reach runs resume {_seen(run_id)}` continues it from its last "
                   "finished step.")


@runs.command("resume")
@click.argument("run_id", required=False)
@click.option("--executor", "executors", multiple=True, metavar="NAME",
              help="Take over every unfinished run of this stopped instance (its executor_id); repeatable.")
@click.option("--timeout", type=float, default=None, help="Seconds to wait for the run(s) to finish.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def runs_resume(ctx: click.Context, run_id: str | None, executors: tuple[str, ...], timeout: float | None,
                as_json: bool) -> None:
    """Resume a run in this process (a cancelled one too), or take over a stopped instance's runs
    (--executor), and wait for the result(s)."""
    from reach_core.cli import reach_of

    if (run_id is None) == (not executors):
        raise click.ClickException("name a run (reach runs resume RUN_ID) or a stopped instance "
                                   "(reach runs resume --executor NAME), not both")
    reach = reach_of(ctx)
    if run_id is not None:
        client = _client(ctx)
        try:
            if client.show(run_id) is None:
                raise click.ClickException(f"no durable run {run_id!r}; `reach runs list` shows the run ids")
        finally:
            client.close()
        result = asyncio.run(_resume(reach, run_id, timeout))
        if as_json:
            _dump(result.to_dict())
        else:
            click.echo(reveal_text(result.text) if result.ok else f"{result.outcome}: {_seen(result.error)}")
        return
    results = asyncio.run(_take_over(reach, list(executors), timeout))
    if as_json:
        _dump({rid: r.to_dict() for rid, r in results.items()})
        return
    if not results:
        click.echo(f"no unfinished runs of {', '.join(_seen(e) for e in executors)}.")
    for rid, r in results.items():
        click.echo(f"{_seen(rid)}: " + (reveal_text(r.text) if r.ok else f"{r.outcome}: {_seen(r.error)}"))


async def _take_over(reach: Any, executors: list[str], wait: float | None) -> dict[str, Any]:
    from .runner import DurableRunner, shutdown, unshared_ledger, wait_for
    from .takeover import take_over

    try:
        problem = unshared_ledger(reach)
        if problem:
            click.echo(problem, err=True)
        await DurableRunner().ensure(reach)
        taken = await asyncio.to_thread(take_over, executors)
        return {rid: await wait_for(rid, wait) for rid in taken}
    finally:
        await reach.aclose()
        await asyncio.to_thread(shutdown)


async def _resume(reach: Any, run_id: str, wait: float | None) -> Any:
    from dbos import DBOS

    from .runner import DurableRunner, shutdown, wait_for

    try:
        await DurableRunner().ensure(reach)
        status = await DBOS.get_workflow_status_async(run_id)
        if status is not None and status.status in ("CANCELLED", "ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"):
            await DBOS.resume_workflow_async(run_id)
        return await wait_for(run_id, wait)
    finally:
        await reach.aclose()
        await asyncio.to_thread(shutdown)
