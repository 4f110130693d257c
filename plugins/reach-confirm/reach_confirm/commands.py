"""``reach confirm list | show | approve | reject``."""

from __future__ import annotations

import asyncio
import getpass
import json
import time
from typing import Any

import click

from reach_core.reveal import reveal_text

from .queue import ConfirmationError


def _queue(ctx: click.Context) -> Any:
    from reach_core.cli import reach_of

    from .plugin import queue_for

    return queue_for(reach_of(ctx))


def _run(ctx: click.Context, coro_fn: Any) -> Any:
    q = _queue(ctx)

    async def go() -> Any:
        try:
            return await coro_fn(q)
        finally:
            await q.reach.aclose()

    try:
        return asyncio.run(go())
    except ConfirmationError as exc:
        raise click.ClickException(str(exc)) from None


def _seen(value: Any) -> str:
    """A field as a person reads it in the terminal, on its line: hidden characters (and
    newlines) spelled ``⟨U+202E⟩``
    (the console's marking too: :mod:`reach_core.reveal`), so an ESC sequence or a bidi
    control in a name, a reason or a result cannot redraw what the person approves.
    ``--json`` output is data and is left exact."""
    return reveal_text(str(value), one_line=True)


def _shown(redactor: Any, c: Any) -> tuple[str, str]:
    """The summary and the arguments of ``c`` as a person is shown them: through the Reach's
    redactor (secret keys, token shapes, URL passwords; the secrets it finds in the arguments
    are masked in the summary too), the console's approval page's rule. A terminal keeps
    scrollback and is often recorded (CI logs, ``script``, shared sessions); the arguments
    that run are unchanged, and ``--json`` stays exact (data for scripts)."""
    learned = redactor.secrets_in(c.arguments)
    summary = redactor.scrub(redactor.text(c.summary), learned)
    arguments = redactor.scrub(redactor.value(c.arguments), learned)
    return summary, json.dumps(arguments, ensure_ascii=False, default=str)


def _result_shown(redactor: Any, result: Any, arguments: Any) -> str:
    """What ``approve`` prints of the call it ran: its result (or error message) through the
    Reach's redactor, the rule :func:`_shown` applies to the request, with the secrets found in
    the arguments and in the result masked wherever they recur (a tool that echoes the password
    it was given, a ``client_secret`` field repeated in a note). The result an upstream sends can
    hold credentials the person never needs on screen; ``--json`` stays exact."""
    learned = redactor.secrets_in(arguments)
    if not result.ok:
        error = result.error
        message = redactor.scrub(redactor.text(str(error.message)), learned)
        return f"{error.code}: {_seen(message)}"
    content = result.content
    learned += redactor.secrets_in(content)
    if isinstance(content, str):
        text = redactor.scrub(redactor.text(content), learned)
    else:
        text = json.dumps(redactor.scrub(redactor.value(content), learned), ensure_ascii=False,
                          separators=(",", ":"), default=str)
    return _seen(text)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) + " UTC" if ts else "-"


@click.group("confirm")
def confirm_group() -> None:
    """Decide on actions that wait for a person's approval."""


@confirm_group.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include decided and expired requests.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def list_cmd(ctx: click.Context, show_all: bool, as_json: bool) -> None:
    """Pending requests (oldest first)."""
    items = _run(ctx, lambda q: q.list(None if show_all else "pending"))
    if as_json:
        click.echo(json.dumps([c.to_dict() for c in items], ensure_ascii=False, indent=2))
        return
    if not items:
        click.echo("no pending confirmations")
    redactor = _queue(ctx).reach.redactor
    for c in items:
        summary, _ = _shown(redactor, c)
        click.echo(f"{c.id}  [{c.status}]  agent={_seen(c.agent)}  {_seen(summary)}  (expires {_when(c.expires_at)})")


@confirm_group.command("show")
@click.argument("cid")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def show_cmd(ctx: click.Context, cid: str, as_json: bool) -> None:
    """Everything about one request, including the exact arguments that would run."""
    c = _run(ctx, lambda q: q.get(cid))
    if as_json:
        click.echo(json.dumps(c.to_dict(), ensure_ascii=False, indent=2))
        return
    summary, arguments = _shown(_queue(ctx).reach.redactor, c)
    click.echo(f"{c.id}  [{c.status}]\n  tool: {_seen(c.tool)}\n  agent: {_seen(c.agent)}\n"
               f"  summary: {_seen(summary)}")
    click.echo("  arguments: " + _seen(arguments))
    click.echo(f"  requested: {_when(c.created_at)}  expires: {_when(c.expires_at)}")
    if c.decided_by:
        click.echo(f"  decided by {_seen(c.decided_by)} at {_when(c.decided_at)}"
                   + (f": {_seen(c.reason)}" if c.reason else ""))


@confirm_group.command("approve")
@click.argument("cid")
@click.option("--as", "by", default=None, help="Who approves (default: person:<login>).")
@click.option("--reason", default=None)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def approve_cmd(ctx: click.Context, cid: str, by: str | None, reason: str | None, as_json: bool) -> None:
    """Approve a request: its exact call runs now, once."""
    who = by or f"person:{getpass.getuser()}"

    async def approve(q: Any) -> tuple[Any, Any]:
        result = await q.approve(cid, by=who, reason=reason)
        return result, (await q.get(cid)).arguments

    result, arguments = _run(ctx, approve)
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        return
    shown = _result_shown(_queue(ctx).reach.redactor, result, arguments)
    click.echo(f"approved {_seen(cid)}; the call ran: " + ("ok" if result.ok else shown))
    if result.ok:
        click.echo(shown)


@confirm_group.command("reject")
@click.argument("cid")
@click.option("--as", "by", default=None)
@click.option("--reason", default=None)
@click.pass_context
def reject_cmd(ctx: click.Context, cid: str, by: str | None, reason: str | None) -> None:
    """Reject a request; the action never runs."""
    who = by or f"person:{getpass.getuser()}"
    _run(ctx, lambda q: q.reject(cid, by=who, reason=reason))
    click.echo(f"rejected {cid}")
