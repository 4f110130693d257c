"""Show a run step by step in a terminal: rich when installed, plain text otherwise.

Used by ``reach demo`` and ``reach run --trace``: tools offered, the model's
calls, whether each call passed validation, timings, results, the answer.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from reach_core.loop import RunResult, RunStep
from reach_core.result import ToolResult, dumps

#: Error codes that mean the call was refused before running (the model must fix it).
_REJECTED = {"unknown_tool", "invalid_json", "invalid_arguments"}


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check(result: ToolResult) -> str:
    if result.error is not None and result.error.code in _REJECTED:
        return f"rejected ({result.error.code})"
    return "valid"


def _outcome(result: ToolResult) -> str:
    if result.ok:
        return f"ok {result.elapsed_ms:.0f} ms"
    assert result.error is not None
    return f"{result.error.code} {result.elapsed_ms:.0f} ms"


def _choice(choice: Any) -> str:
    if isinstance(choice, dict):
        return f"forced {choice['function']['name']}"
    return str(choice)


def _usage_line(step_or_run: Any) -> str:
    u = step_or_run.usage
    return f"tokens {u.prompt_tokens} prompt ({u.cached_tokens} cached) + {u.completion_tokens} completion"


class Trace:
    """Writes a run's header, steps and answer; ``rich`` output when available."""

    def __init__(self, file: TextIO | None = None, *, color: bool | None = None) -> None:
        self.file = file or sys.stdout
        self.console: Any = None
        try:
            from rich.console import Console

            self.console = Console(
                file=self.file, highlight=False, force_terminal=color, soft_wrap=True
            )
        except ImportError:
            pass

    # -- output primitives ---------------------------------------------------
    def _line(self, text: str, style: str | None = None) -> None:
        if self.console is not None:
            from rich.text import Text

            self.console.print(Text(text, style=style or ""))
        else:
            print(text, file=self.file)

    def rule(self, title: str) -> None:
        if self.console is not None:
            self.console.rule(title)
        else:
            print(f"── {title} " + "─" * max(0, 60 - len(title)), file=self.file)

    # -- run parts -----------------------------------------------------------
    def header(self, pairs: list[tuple[str, str]]) -> None:
        width = max(len(k) for k, _ in pairs)
        for key, value in pairs:
            self._line(f"{key.ljust(width)}  {value}", "bold" if key == "question" else None)

    def step(self, step: RunStep) -> None:
        self.rule(f"step {step.index}")
        self._line(
            f"tools offered  {', '.join(step.tools_offered) or '(none)'}  [tool_choice {_choice(step.tool_choice)}]",
            "dim",
        )
        self._line(f"model          {step.model_ms:.0f} ms · {_usage_line(step)}", "dim")
        if step.text and step.tool_calls:
            self._line(f"model says     {_short(step.text)}")
        if step.tool_calls:
            parallel = " in parallel" if len(step.tool_calls) > 1 else ""
            self._line(
                f"tool calls     {len(step.tool_calls)}{parallel} · {step.tools_ms:.0f} ms for all",
                "bold",
            )
            for call, result in zip(step.tool_calls, step.results, strict=False):
                fn = call["function"]
                self._line(f"  → {fn['name']}({_short(fn['arguments'], 120)})", "cyan")
                style = "green" if result.ok else "red"
                self._line(f"    {_check(result)} · {_outcome(result)}", style)
                self._line(f"    ← {_short(result.model_payload())}", style)
        for note in step.feedback:
            self._line(f"parser         {note}", "yellow")
        if step.error:
            self._line(f"stopped        {step.error}", "red")
        elif not step.tool_calls and not step.feedback:
            self._line("model answers without tool calls", "dim")

    def result(self, result: RunResult) -> None:
        self.rule("answer")
        if result.text:
            self._line(result.text, "bold")
        if result.error:
            self._line(f"{result.outcome}: {result.error}", "red")
        self._line(
            f"outcome {result.outcome} · {len(result.steps)} steps · {result.elapsed_ms:.0f} ms · "
            f"{_usage_line(result)} · run {result.run_id}",
            "dim",
        )
