"""The offline demo: the seed article's scenario end to end, no network needed.

``reach demo`` starts two local servers on 127.0.0.1, the reach-weather demo
weather service and a scripted OpenAI-compatible model (:mod:`.scripted`),
builds a Reach with reach-weather, reach-notes and this adapter, and runs the
question through the real loop, the real adapter and the real ``openai`` SDK
over HTTP. Only the model's decisions are scripted: the script asks for both
tools in one turn, and its answer is built from the tool results that come back
in the request, so the values quoted are the ones reach actually fetched.

With ``--base-url`` or ``OPENAI_API_KEY`` the same demo runs against a real model.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reach_core import Reach
from reach_core.loop import RunResult, RunStep, adapter_for

from .scripted import SCRIPTED_MODEL, Answer, Call, ScriptContext, Step, ToolCalls

QUESTIONS = {
    ("run", "en"): "Is today good for a run in Beijing? Afterwards note my running plan.",
    ("run", "zh"): "北京今天适合去跑步吗？跑完顺便帮我在笔记本里记一下跑步计划。",
    ("mofa", "zh"): "东京天气怎么样？还有计算 25 * 4",
    ("mofa", "en"): "What's the weather like in Tokyo? Also calculate 25 * 4.",
}

PLANS = {
    "en": "Running plan: easy 5 km in the park today; 10 min warm-up, steady pace, stretch and drink water afterwards.",
    "zh": "跑步计划：今天在公园轻松跑 5 公里；先热身 10 分钟，匀速跑，跑完拉伸并补水。",
}


def _degrees(value: Any) -> float | None:
    match = re.match(r"\s*(-?\d+(?:\.\d+)?)", str(value))
    return float(match.group(1)) if match else None


def _weather(ctx: ScriptContext) -> dict[str, Any] | None:
    w = ctx.results.get("get_weather")
    return w if isinstance(w, dict) and "error" not in w else None


def _error_text(value: Any) -> str:
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        return str(value["error"].get("message", "unknown error"))
    return "no answer"


def _run_answer(lang: str) -> Callable[[ScriptContext], str]:
    def answer(ctx: ScriptContext) -> str:
        w = _weather(ctx)
        note: Any = ctx.results.get("append_note")
        saved = isinstance(note, dict) and note.get("saved")
        if lang == "zh":
            if w is None:
                head = (f"抱歉，没能查到北京的天气（{_error_text(ctx.results.get('get_weather'))}），"
                        "暂时没法判断适不适合跑步。")
            else:
                t = _degrees(w.get("temperature"))
                good = not w.get("umbrella") and t is not None and 5 <= t <= 28
                verdict = "适合跑步" if good else "不太适合在户外跑步"
                head = (
                    f"北京今天{w.get('condition')}，气温 {w.get('temperature')}，湿度 {w.get('humidity')}，"
                    f"{verdict}。记得先热身，带上水。"
                )
            tail = (
                f"跑步计划已经记在你的笔记本里了（笔记 {note.get('id')}）。"
                if saved
                else f"不过跑步计划没能记下来（{_error_text(note)}）。"
            )
            return head + tail
        if w is None:
            head = (
                f"Sorry, I could not get Beijing's weather ({_error_text(ctx.results.get('get_weather'))}), "
                "so I can't tell whether today is good for a run."
            )
        else:
            t = _degrees(w.get("temperature"))
            good = not w.get("umbrella") and t is not None and 5 <= t <= 28
            verdict = (
                "Yes, today is good for a run" if good else "Today is not great for an outdoor run"
            )
            head = (
                f"{verdict} in Beijing: {w.get('condition')}, {w.get('temperature')}, humidity "
                f"{w.get('humidity')}. Warm up first and take water."
            )
        tail = (
            f" I saved your running plan in your notebook (note {note.get('id')})."
            if saved
            else f" But I could not save your running plan ({_error_text(note)})."
        )
        return head + tail

    return answer


def _mofa_answer(lang: str) -> Callable[[ScriptContext], str]:
    def answer(ctx: ScriptContext) -> str:
        w = _weather(ctx)
        calc = ctx.results.get("calculate")
        value = calc.get("result") if isinstance(calc, dict) and "error" not in calc else None
        if lang == "zh":
            head = (
                f"东京现在{w.get('condition')}，气温 {w.get('temperature')}，湿度 {w.get('humidity')}。"
                if w
                else f"没能查到东京的天气（{_error_text(ctx.results.get('get_weather'))}）。"
            )
            return head + (
                f"25 * 4 = {value}。" if value is not None else f"计算失败（{_error_text(calc)}）。"
            )
        head = (
            f"Tokyo right now: {w.get('condition')}, {w.get('temperature')}, humidity {w.get('humidity')}."
            if w
            else f"I could not get Tokyo's weather ({_error_text(ctx.results.get('get_weather'))})."
        )
        return head + (
            f" And 25 * 4 = {value}."
            if value is not None
            else f" The calculation failed ({_error_text(calc)})."
        )

    return answer


def script_for(scenario: str, lang: str) -> list[Step]:
    """The scripted model's steps for a scenario: both tool calls in one turn, then the answer."""
    if scenario == "run":
        city = "北京" if lang == "zh" else "Beijing"
        tags = ["跑步", "计划"] if lang == "zh" else ["running", "plan"]
        return [
            ToolCalls(
                [
                    Call("get_weather", {"city": city}),
                    Call("append_note", {"content": PLANS[lang], "tags": tags}),
                ]
            ),
            Answer(_run_answer(lang)),
        ]
    if scenario == "mofa":
        city = "东京" if lang == "zh" else "Tokyo"
        return [
            ToolCalls(
                [Call("get_weather", {"city": city}), Call("calculate", {"expression": "25 * 4"})]
            ),
            Answer(_mofa_answer(lang)),
        ]
    raise ValueError(f"unknown scenario {scenario!r}; use 'run' or 'mofa'")


@dataclass
class DemoReport:
    """What a demo run did, for the terminal and for ``--json``."""

    scenario: str
    lang: str
    question: str
    scripted: bool
    model: str
    model_url: str
    weather_url: str
    data_dir: Path
    result: RunResult

    @property
    def notes_file(self) -> Path:
        return self.data_dir / "notes.jsonl"

    def notes(self) -> list[str]:
        f = self.notes_file
        return f.read_text(encoding="utf-8").splitlines() if f.exists() else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "lang": self.lang,
            "question": self.question,
            "model": {"scripted": self.scripted, "name": self.model, "url": self.model_url},
            "weather_service": self.weather_url,
            "data_dir": str(self.data_dir),
            "notes_file": str(self.notes_file),
            "notes": self.notes(),
            "run": self.result.to_dict(),
        }


def build_reach(
    data_dir: Path, weather_url: str, openai_settings: dict[str, Any], *, calculator: bool
) -> Reach:
    """A Reach holding exactly the demo's plugins (whatever else is installed)."""
    import reach_notes.plugin
    import reach_weather.plugin

    from . import plugin as openai_plugin

    config = {
        "reach": {"data_dir": str(data_dir)},
        "plugins": {
            "reach-weather": {"geocoding_url": weather_url, "forecast_url": weather_url},
            "reach-openai": openai_settings,
        },
        "strategies": {"adapter": "openai"},
    }
    reach = Reach(
        config,
        plugins=[
            ("reach-weather", reach_weather.plugin),
            ("reach-notes", reach_notes.plugin),
            ("reach-openai", openai_plugin),
        ],
    )
    if calculator:
        from .calculator import calculate

        reach.register(calculate)
    return reach


async def run_demo(
    scenario: str = "run",
    lang: str = "en",
    *,
    base_url: str | None = None,
    model: str | None = None,
    offline: bool | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    on_step: Callable[[RunStep], Any] | None = None,
    on_start: Callable[[DemoReport], Any] | None = None,
    model_timeout: float = 60.0,
) -> DemoReport:
    """Run one demo scenario and return its report.

    ``offline`` None means: scripted unless ``base_url`` or ``OPENAI_API_KEY`` is given.
    ``on_start`` sees the report before the run (with ``result`` unset) to print a header.
    """
    from reach_weather.demo_server import start_demo_server

    from .scripted import ScriptedModelServer

    if (scenario, lang) not in QUESTIONS:
        raise ValueError(f"unknown scenario/language {scenario!r}/{lang!r}; use run|mofa and en|zh")
    question = QUESTIONS[(scenario, lang)]
    scripted = (
        offline if offline is not None else not (base_url or os.environ.get("OPENAI_API_KEY"))
    )
    folder = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="reach-demo-"))
    folder.mkdir(parents=True, exist_ok=True)

    weather = start_demo_server("127.0.0.1", port=0)
    server = ScriptedModelServer(script_for(scenario, lang)).start() if scripted else None
    try:
        if server is not None:
            settings: dict[str, Any] = {
                "base_url": server.url,
                "api_key": "scripted-demo",
                "model": SCRIPTED_MODEL,
                "max_retries": 0,
                "timeout": model_timeout,
            }
        else:
            settings = {"timeout": model_timeout}
            if base_url:
                settings["base_url"] = base_url
            if model:
                settings["model"] = model
        reach = build_reach(folder, weather.url, settings, calculator=scenario == "mofa")
        adapter: Any = adapter_for(reach)
        if scripted:
            adapter.client()  # import the SDK now, so step 1's timing shows the model, not the import
        report = DemoReport(
            scenario=scenario,
            lang=lang,
            question=question,
            scripted=scripted,
            model=adapter.settings.model,
            model_url=adapter.endpoint,
            weather_url=weather.url,
            data_dir=folder,
            result=None,  # type: ignore[arg-type]
        )
        if on_start is not None:
            on_start(report)
        try:
            report.result = await reach.run(
                question, max_steps=4, on_step=on_step, system_hint=True
            )
        finally:
            await adapter.aclose()
            await reach.aclose()
        return report
    finally:
        if server is not None:
            server.close()
        weather.close()
