"""``reach demo`` and ``reach run``, added to the ``reach`` CLI by this plugin."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import click

SCRIPTED_NOTICE = (
    "A scripted model is answering: an OpenAI-compatible server on 127.0.0.1 replays a fixed "
    "script (tool calls, then an answer built from the tool results). No LLM is involved; "
    "set OPENAI_API_KEY or pass --base-url to use a real model."
)


GUARDRAILS_NOTICE = (
    "A scripted model is answering: an OpenAI-compatible server on 127.0.0.1 replays a fixed "
    "script that makes a mistake, oversteps and meets a failing weather service on purpose. "
    "No LLM is involved; everything reach does about it is real. With OPENAI_API_KEY or "
    "--base-url, `reach demo` runs the seed scenario (--scenario run) with that model."
)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


@click.command("demo")
@click.option("--json", "as_json", is_flag=True, help="Print the whole run as JSON.")
@click.option(
    "--lang",
    type=click.Choice(["en", "zh"]),
    default="en",
    show_default=True,
    help="Question language.",
)
@click.option(
    "--scenario",
    type=click.Choice(["guardrails", "run", "mofa"]),
    default=None,
    help="guardrails (default with the scripted model): every guard rail once; "
    "run: the seed scenario, weather + a note in Beijing (default with a real model); "
    "mofa: Tokyo weather + a calculation.",
)
@click.option(
    "--yes/--no",
    "approve",
    default=None,
    help="guardrails: approve (--yes) or reject (--no) the payment that waits for a person, "
    "instead of asking at the prompt. With no terminal and neither flag it is rejected.",
)
@click.option(
    "--base-url", default=None, help="Use a real OpenAI-compatible model at this URL (ends in /v1)."
)
@click.option(
    "--model",
    default=None,
    help="Model name for --base-url / OPENAI_API_KEY (default gpt-4o-mini).",
)
@click.option(
    "--offline", is_flag=True, help="Use the scripted model even if OPENAI_API_KEY is set."
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where notes, audit records and confirmations go (default: a new temp dir).",
)
def demo_command(
    as_json: bool,
    lang: str,
    scenario: str | None,
    approve: bool | None,
    base_url: str | None,
    model: str | None,
    offline: bool,
    data_dir: str | None,
) -> None:
    """Show what reach is for, offline: a scripted model meets every guard rail once
    (--scenario guardrails, the default), or the seed scenario (--scenario run)."""
    import os

    real_model = not offline and bool(base_url or os.environ.get("OPENAI_API_KEY"))
    if scenario is None:
        scenario = "run" if real_model else "guardrails"
    if scenario == "guardrails":
        if base_url:
            raise click.ClickException(
                "the guardrails scenario is scripted (the model's mistakes and the upstream's failures "
                "are its plot); with a real model use --scenario run"
            )
        _guardrails_demo(as_json, lang, approve, data_dir)
        return
    _seed_demo(as_json, lang, scenario, base_url, model, offline, data_dir)


def _missing_plugins(exc: ModuleNotFoundError, needed: dict[str, str], hint: str = "") -> None:
    """Turn a missing demo plugin into a sentence that says what to install."""
    top = (exc.name or "").split(".")[0]
    if top in needed:
        names = " ".join(needed.values())
        local = " ".join(f"-e plugins/{n}" for n in needed.values())
        raise click.ClickException(
            f"reach demo needs the {', '.join(needed.values())} plugins ({needed[top]} is missing): "
            f"pip install {names} (in this repo: pip install {local}){hint}"
        ) from None


def _seed_demo(
    as_json: bool,
    lang: str,
    scenario: str,
    base_url: str | None,
    model: str | None,
    offline: bool,
    data_dir: str | None,
) -> None:
    from .demo import DemoReport, run_demo
    from .trace import Trace

    trace = None if as_json else Trace()

    def start(report: DemoReport) -> None:
        if trace is None:
            return
        trace.rule(f"reach demo · scenario {report.scenario} · {report.lang}")
        if report.scripted:
            trace._line(SCRIPTED_NOTICE, "yellow")
        trace.header(
            [
                (
                    "model",
                    f"{'scripted ' if report.scripted else ''}{report.model} at {report.model_url}",
                ),
                ("weather", f"local demo weather service at {report.weather_url}"),
                ("data dir", str(report.data_dir)),
                ("question", report.question),
            ]
        )

    try:
        report = asyncio.run(
            run_demo(
                scenario,
                lang,
                base_url=base_url,
                model=model,
                offline=True if offline else None,
                data_dir=data_dir,
                on_step=trace.step if trace else None,
                on_start=start,
            )
        )
    except ModuleNotFoundError as exc:
        _missing_plugins(exc, {"reach_weather": "reach-weather", "reach_notes": "reach-notes"})
        raise
    except Exception as exc:  # a demo failure must read as a sentence, not a traceback
        from reach_core import ReachError

        if isinstance(exc, ReachError | ValueError | OSError):
            raise click.ClickException(str(exc)) from None
        raise
    if as_json:
        _echo_json(report.to_dict())
    else:
        assert trace is not None
        trace.result(report.result)
        notes = report.notes()
        if notes:
            trace._line(
                f"notes file {report.notes_file} ({len(notes)} note{'s' if len(notes) != 1 else ''})",
                "dim",
            )
    if not report.result.ok:
        sys.exit(1)


_GUARD_PLUGINS = {
    "reach_weather": "reach-weather",
    "reach_notes": "reach-notes",
    "reach_confirm": "reach-confirm",
    "reach_audit": "reach-audit",
}


def _guardrails_demo(as_json: bool, lang: str, approve: bool | None, data_dir: str | None) -> None:
    from .guardrails import (
        AGENT,
        AGENT_POLICY,
        Decision,
        GuardReport,
        auto_decision,
        explain,
        offer_line,
        run_guardrails,
    )
    from .trace import Trace

    trace = None if as_json else Trace()
    line = trace._line if trace is not None else (lambda text, style=None: None)
    decided: list[tuple[dict[str, Any], Decision]] = []
    interactive = approve is None and not as_json and sys.stdin.isatty()
    auto = auto_decision(approve)

    async def decide(event: dict[str, Any]) -> Decision:
        ask = (
            f"  ⏸ {event.get('tool')}: risk dangerous, so reach-confirm holds the call for a person "
            f"({event.get('confirmation_id')}): {event.get('summary')}"
        )
        if interactive:
            line(ask, "yellow")
            try:
                yes = await asyncio.to_thread(click.confirm, "    Approve?", default=False)
                decision = Decision(yes, "person:you", "asked at the prompt", None if yes else "you said no")
            except click.Abort:  # end of input: nobody to approve, so the safe default
                click.echo()
                decision = Decision(False, "person:you", "no answer at the prompt, so the safe default",
                                    "nobody answered")
        else:
            decision = await auto(event)
            line(f"{ask}; {'approved' if decision.approve else 'rejected'}: {decision.how}", "yellow")
        decided.append((event, decision))
        return decision

    shown: list[GuardReport] = []

    def start(report: GuardReport) -> None:
        shown.append(report)
        if trace is None:
            return
        trace.rule(f"reach demo · scenario guardrails · {report.lang}")
        trace._line(GUARDRAILS_NOTICE, "yellow")
        trace.header(
            [
                ("model", f"scripted {report.model} at {report.model_url}"),
                ("weather", f"local demo weather service at {report.weather_url} "
                            "(it fails once and hangs once, on cue)"),
                ("agent", f"{AGENT}: [agents.{AGENT}] deny = {json.dumps(AGENT_POLICY['deny'])}; "
                          "dangerous tools wait for a person (reach-confirm); every call audited (reach-audit)"),
                ("data dir", str(report.data_dir)),
                ("question", report.question),
            ]
        )

    refused: set[str] = set()  # tools refused for their arguments, until a call of them passes

    def step(s: Any) -> None:
        if trace is None:
            return
        if s.index == 1 and shown:
            trace._line(f"  ☰ step 1 · {offer_line(shown[0], list(s.tools_offered))}", "dim")
        calls = {c.get("id"): c["function"]["arguments"] for c in s.tool_calls}
        for result in s.results:
            mark, text = explain(result, decided, calls.get(result.call_id), corrected=result.name in refused)
            if result.error is not None and result.error.code == "invalid_arguments":
                refused.add(result.name)
            elif result.ok:
                refused.discard(result.name)
            style = {"✓": "green", "↻": "cyan", "~": "yellow"}.get(mark, "red")
            trace._line(f"  {mark} step {s.index} · {text}", style)
        if s.error:
            trace._line(f"  stopped: {s.error}", "red")

    try:
        report = asyncio.run(
            run_guardrails(lang, decide=decide, data_dir=data_dir, on_step=step if trace else None,
                           on_start=start)
        )
    except ModuleNotFoundError as exc:
        _missing_plugins(exc, _GUARD_PLUGINS, "; or run the seed scenario, which needs only the first two: "
                         "reach demo --scenario run")
        raise
    except Exception as exc:  # a demo failure must read as a sentence, not a traceback
        from reach_core import ReachError

        if isinstance(exc, ReachError | ValueError | OSError):
            raise click.ClickException(str(exc)) from None
        raise
    if as_json:
        _echo_json(report.to_dict())
    else:
        assert trace is not None
        trace.result(report.result)
        _audit_tail(trace, report)
        _tokens_saved(trace, report)
    if not report.result.ok:
        sys.exit(1)


def _audit_tail(trace: Any, report: Any) -> None:
    """``reach audit tail`` of this run, run as the command itself against the demo's data dir."""
    from reach_core.cli import cli

    count = max(1, report.audit_to - report.audit_from)
    args = ["--config", str(report.config_file), "audit", "tail", "-n", str(count)]
    trace.rule(f"reach audit tail -n {count} · this run's records")
    sys.stdout.flush()
    cli.main(args, standalone_mode=False)
    trace._line(f"again, after the demo: reach {' '.join(args)}", "dim")


def _tokens_saved(trace: Any, report: Any) -> None:
    from .guardrails import declaration_tokens

    trace.rule("tokens the preselector saved")
    counted, how = declaration_tokens(report.all_tools, report.sent_tools)
    trace._line(counted, "bold")
    trace._line(how, "dim")


def _root_reach(ctx: click.Context) -> Any:
    """The CLI's Reach (built once by the root command from --config), or a new one."""
    from reach_core import Reach, ReachError

    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    if obj.get("reach") is None:
        try:
            obj["reach"] = Reach(obj.get("config"))
        except ReachError as exc:
            raise click.ClickException(str(exc)) from None
        root.obj = obj
    return obj["reach"]


@click.command("run")
@click.argument("question")
@click.option(
    "--trace",
    "show_trace",
    is_flag=True,
    help="Show each step: tools offered, calls, results, timings.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole run as JSON.")
@click.option("--agent", default=None, help="Agent name from [agents.NAME] (default: default).")
@click.option(
    "--max-steps", type=int, default=5, show_default=True, help="Most model calls in the run."
)
@click.option(
    "--tool-choice",
    default="auto",
    show_default=True,
    help="auto | none | required | a tool name (first step).",
)
@click.option(
    "--deadline", type=float, default=None, help="Wall-time budget of the run in seconds."
)
@click.option(
    "--durable",
    is_flag=True,
    help="Run it as a durable run (reach-dbos): it survives a crash; `reach runs` shows and resumes it.",
)
@click.option("--run-id", default=None, help="Name the run (with --durable: the id `reach runs` knows it by).")
@click.pass_context
def run_command(
    ctx: click.Context,
    question: str,
    show_trace: bool,
    as_json: bool,
    agent: str | None,
    max_steps: int,
    tool_choice: str,
    deadline: float | None,
    durable: bool,
    run_id: str | None,
) -> None:
    """Ask QUESTION with the configured model adapter and every installed connector."""
    from reach_core import ReachError
    from reach_core.loop import adapter_for

    from .trace import Trace

    reach = _root_reach(ctx)
    if durable and reach.provider("runner") is None:
        raise click.ClickException(
            "--durable needs a runner plugin: pip install reach-dbos, and set [plugins.reach-dbos] database_url "
            "(or run without --durable: the run then lives in this process only)"
        )
    trace = Trace() if show_trace and not as_json else None

    async def go() -> Any:
        try:
            adapter = adapter_for(reach)
        except ReachError as exc:
            raise click.ClickException(str(exc)) from None
        if trace is not None:
            describe = getattr(adapter, "describe", None)
            trace.header(
                [
                    ("model", describe() if callable(describe) else str(adapter)),
                    ("question", question),
                ]
            )
        try:
            return await reach.run(
                question,
                agent=agent,
                max_steps=max_steps,
                tool_choice=tool_choice,
                deadline=deadline,
                on_step=trace.step if trace else None,
                **({"durable": True} if durable else {}),
                **({"run_id": run_id} if run_id else {}),
            )
        except (ReachError, ValueError) as exc:
            raise click.ClickException(str(exc)) from None
        finally:
            aclose = getattr(adapter, "aclose", None)
            if aclose is not None:
                await aclose()
            await reach.aclose()

    result = asyncio.run(go())
    if as_json:
        _echo_json(result.to_dict())
    elif trace is not None:
        trace.result(result)
    else:
        if result.text:
            click.echo(result.text)
        if result.error:
            click.echo(f"{result.outcome}: {result.error}", err=True)
    if not result.ok:
        sys.exit(1)
