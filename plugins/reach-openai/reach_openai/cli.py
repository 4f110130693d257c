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
    type=click.Choice(["run", "mofa"]),
    default="run",
    show_default=True,
    help="run: weather + a note in Beijing; mofa: Tokyo weather + a calculation.",
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
    help="Where notes go (default: a new temp dir).",
)
def demo_command(
    as_json: bool,
    lang: str,
    scenario: str,
    base_url: str | None,
    model: str | None,
    offline: bool,
    data_dir: str | None,
) -> None:
    """Run the seed scenario end to end: weather + a note, tools in parallel, offline."""
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
        if exc.name and exc.name.split(".")[0] in ("reach_weather", "reach_notes"):
            raise click.ClickException(
                "reach demo needs the reach-weather and reach-notes plugins: "
                "pip install reach-weather reach-notes (in this repo: pip install -e plugins/reach-weather "
                "-e plugins/reach-notes)"
            ) from None
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
) -> None:
    """Ask QUESTION with the configured model adapter and every installed connector."""
    from reach_core import ReachError
    from reach_core.loop import adapter_for

    from .trace import Trace

    reach = _root_reach(ctx)
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
