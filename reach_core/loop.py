"""``reach.run``: the agent loop (model ▸ tools in parallel ▸ model … ▸ answer).

One run drives one adapter (a model) over a canonical OpenAI-shaped transcript:

1. ask the model, offering the tools selected for the user's question;
2. if it asked for tools, run them all at once through ``invoke_many`` (the one
   invoke pipeline: validation, policy, retries, ledger) and append the results
   as ``tool`` messages, then ask again;
3. stop when the model answers without tool calls (``answered``), after
   ``max_steps`` model calls (``max_steps``), when the run's ``deadline`` passes
   (``deadline``) or when the model endpoint fails (``model_error``).

The loop never raises for those: it returns a :class:`RunResult` whose
``outcome`` and ``error`` say what happened. Only programming mistakes (a
forced tool that does not exist, a bad ``tool_choice``) raise at once.

A tool result whose ``meta["offer_tools"]`` names tools adds them to the offered
set from the next step on (policy still applies).

Why the offered tool set is stable within a run: a tool the model saw once stays
offered (a capped union in first-offered order), so the model never loses a tool
it just used and a provider's prompt cache keeps the tools prefix. A new user
message starts a new selection.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .adapter import (
    Adapter,
    ModelError,
    ModelRequest,
    ModelResponse,
    ToolChoice,
    Usage,
    forced_tool_name,
    normalize_tool_choice,
)
from .errors import ConfigError
from .hookspecs import Confirmer
from .result import ToolError, ToolResult, dumps
from .scope import run_scope
from .tokens import MAX_CLIENT_ID, client_id_problem

if TYPE_CHECKING:
    from .config import Config
    from .runtime import Provider, Runtime
    from .tool import Tool

__all__ = [
    "DEFAULT_SYSTEM_HINT",
    "AgentPort",
    "MAX_OFFERED_TOOLS",
    "RunContext",
    "RunResult",
    "RunStep",
    "adapter_for",
    "run_agent",
]


def _log(reach: Any) -> Any:
    """``reach.loop``, masked by the run's Reach (a failing adapter's traceback can quote its API key)."""
    from .logs import plugin_logger

    return plugin_logger("loop", getattr(reach, "redactor", None))


#: The hint used for ``system_hint=True``; ``[reach] system_hint = "..."`` sets a default text.
DEFAULT_SYSTEM_HINT = (
    "When a question needs current or external data, or an action in the world, "
    "call a tool instead of guessing. Answer in the user's language."
)

#: Upper bound of tools offered in one run (OpenAI accepts at most 128).
MAX_OFFERED_TOOLS = 64

Outcome = Literal["answered", "max_steps", "deadline", "model_error"]

#: Time the pipeline gets past a run's deadline to report cut-off calls itself.
_DEADLINE_GRACE = 0.25


@dataclass(slots=True)
class RunStep:
    """One model call and the tool calls it triggered; what ``reach_run_step`` observers get."""

    index: int
    run_id: str
    tools_offered: list[str]
    tool_choice: ToolChoice
    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model_ms: float = 0.0
    tools_ms: float = 0.0
    feedback: list[str] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "tools_offered": list(self.tools_offered),
            "tool_choice": self.tool_choice,
            "text": self.text,
            "tool_calls": list(self.tool_calls),
            "results": [r.to_dict() for r in self.results],
            "usage": self.usage.to_dict(),
            "model_ms": round(self.model_ms, 3),
            "tools_ms": round(self.tools_ms, 3),
            "feedback": list(self.feedback),
            "error": self.error,
        }


@dataclass(slots=True)
class RunResult:
    """Everything a run produced. ``error`` explains any outcome but ``answered``."""

    text: str
    outcome: Outcome
    messages: list[dict[str, Any]]
    results: list[ToolResult]
    steps: list[RunStep]
    usage: Usage
    run_id: str
    adapter: str = ""
    error: str | None = None
    elapsed_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.outcome == "answered"

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "outcome": self.outcome,
            "error": self.error,
            "text": self.text,
            "adapter": self.adapter,
            "usage": self.usage.to_dict(),
            "elapsed_ms": round(self.elapsed_ms, 3),
            "steps": [s.to_dict() for s in self.steps],
            "messages": self.messages,
        }


@dataclass(slots=True)
class RunContext:
    """What observers of ``reach_run_step`` learn about the run around a step."""

    reach: Any
    run_id: str
    agent: str | None
    query: str
    adapter: str
    max_steps: int


class _OfferedTools:
    """The tools offered in a run: a capped union that keeps first-offered order."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._entries: dict[str, dict[str, Any]] = {}

    def add(self, entries: Iterable[dict[str, Any]], *, force: bool = False) -> None:
        for entry in entries:
            name = _tool_name(entry)
            if name in self._entries:
                continue
            if force or len(self._entries) < self.cap:
                self._entries[name] = entry

    def names(self) -> list[str]:
        return list(self._entries)

    def entries(self) -> list[dict[str, Any]]:
        return list(self._entries.values())


def _tool_name(entry: dict[str, Any]) -> str:
    fn = entry.get("function")
    return str(fn.get("name") if isinstance(fn, dict) else entry.get("name"))


def _text_of(content: Any) -> str:
    """Plain text of a message's content (a string or a list of content parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content)


def _as_message(msg: Any) -> dict[str, Any]:
    if isinstance(msg, dict):
        return dict(msg)
    dump = getattr(msg, "model_dump", None)  # an OpenAI SDK message object
    if callable(dump):
        return {k: v for k, v in dump(exclude_none=True).items()}
    raise TypeError(
        f"a message must be a dict like {{'role': 'user', 'content': ...}}, not {type(msg).__name__}"
    )


def _initial_messages(messages_or_text: str | Sequence[Any]) -> list[dict[str, Any]]:
    if isinstance(messages_or_text, str):
        return [{"role": "user", "content": messages_or_text}]
    messages = [_as_message(m) for m in messages_or_text]
    if not messages:
        raise ValueError("reach.run needs a question: a string or a non-empty list of messages")
    return messages


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for msg in reversed(messages):
        if msg.get("role") == "user":
            return _text_of(msg.get("content"))
    return ""


def _config_value(reach: Any, name: str, default: Any = None) -> Any:
    """``[reach] NAME`` from the core config, tolerating configs without it."""
    section = getattr(getattr(reach, "config", None), "reach", None)
    value = getattr(section, name, None) if section is not None else None
    return default if value is None else value


def _resolve_hint(reach: Any, system_hint: str | bool | None) -> str | None:
    if system_hint is None:
        system_hint = _config_value(reach, "system_hint", None)
    if system_hint is True:
        return DEFAULT_SYSTEM_HINT
    if not system_hint:
        return None
    return str(system_hint)


def adapter_for(reach: Any, adapter: Adapter | str | None = None) -> Adapter:
    """The adapter a run uses: an object as given, or the named/configured provider.

    Plugins register adapter *factories* (``factory(reach, settings)``); the
    instance is built once per Reach and reused, so its connection pool is too.
    """
    if adapter is not None and not isinstance(adapter, str):
        return adapter
    obj = reach.provider("adapter", adapter)
    if obj is None:
        raise ConfigError(
            "no model adapter is installed: pip install reach-openai (or pass adapter=... to reach.run)"
        )
    if hasattr(obj, "complete"):
        return obj  # type: ignore[no-any-return]
    cache = reach.runtime.adapters
    found = [(n, p) for n, p in reach.providers("adapter").items() if p.obj is obj]
    name, plugin = found[0] if found else (str(adapter), None)
    if name not in cache:
        settings = reach.plugin_settings(plugin.plugin) if plugin is not None else None
        cache[name] = obj(reach, settings)
    return cache[name]


def _adapter_label(adapter: Any) -> str:
    describe = getattr(adapter, "describe", None)
    if callable(describe):
        try:
            return str(describe())
        except Exception:  # a label must never break a run
            pass
    return str(getattr(adapter, "name", type(adapter).__name__))


def _cut_off(call: dict[str, Any], deadline: float) -> ToolResult:
    """The result for a call cancelled by the run's deadline."""
    fn = call["function"]
    return ToolResult(
        call_id=call["id"],
        name=fn["name"],
        ok=False,
        error=ToolError(
            "outcome_unknown",
            f"the run's deadline ({deadline:g} s) passed while `{fn['name']}` was running; it may or "
            "may not have taken effect. Check before calling it again.",
        ),
    )


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


@runtime_checkable
class AgentPort(Protocol):
    """What the loop needs from the object it runs with: ``Reach`` satisfies it, and a
    runner plugin (reach-dbos) hands it the same ``Reach``. The loop reads nothing else,
    so it can be driven (and tested) by anything that offers these."""

    @property
    def runtime(self) -> Runtime: ...

    @property
    def config(self) -> Config: ...

    def provider(self, kind: str, name: str | None = None) -> Any: ...

    def providers(self, kind: str) -> dict[str, Provider]: ...

    def plugin_settings(self, plugin: str) -> Any: ...

    def all_tools(self) -> list[Tool]: ...

    def tools(self, *, agent: str | None = None, query: str | None = None, limit: int | None = None,
              strict: bool = False, names: Sequence[str] | None = None) -> list[dict[str, Any]]: ...

    async def invoke_many(self, calls: Sequence[Any], *, agent: str | None = None, run_id: str | None = None,
                          query: str | None = None, parent_run_id: str | None = None,
                          concurrency: int | None = None, allowed: Any = None,
                          deadline: float | None = None) -> list[ToolResult]: ...


async def run_agent(
    reach: AgentPort,
    messages_or_text: str | Sequence[Any],
    *,
    agent: str | None = None,
    adapter: Adapter | str | None = None,
    max_steps: int = 5,
    tool_choice: Any = "auto",
    force_every_step: bool = False,
    deadline: float | None = None,
    tools: Sequence[str] | None = None,
    system_hint: str | bool | None = None,
    run_id: str | None = None,
    on_step: Callable[[RunStep], Awaitable[Any] | Any] | None = None,
    parent_run_id: str | None = None,
    confirm_wait: float = 0.0,
) -> RunResult:
    """Run the agent loop; see the module docstring. Returns a :class:`RunResult`.

    ``deadline`` is the run's wall-time budget in seconds. ``tools`` restricts the
    run to those tool names (calls to others get ``unknown_tool``). ``on_step`` is
    called after each step, like the ``reach_run_step`` hook, for code that holds
    the run in hand (``reach run --trace``, the demo). ``parent_run_id`` marks a
    delegated run (``reach_core.builtin.delegation``): its calls are audited with it.

    Calls that wait for a person (``needs_confirmation``): with ``confirm_wait``
    seconds the loop waits that long for the decision (any process may take it)
    and hands the model the approved call's result or the rejection; otherwise
    the model hears that the action waits, and the run can end. Run again later
    with the returned messages (and a new user message): tool messages still
    marked ``needs_confirmation`` are replaced by the decision taken meanwhile.
    """
    if max_steps < 1:
        raise ValueError("max_steps must be at least 1")
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    ends_at = loop.time() + deadline if deadline is not None else None
    run_id = run_id or f"run_{uuid.uuid4().hex[:16]}"

    first_choice = normalize_tool_choice(tool_choice)
    forced = forced_tool_name(first_choice)
    is_forced = forced is not None or first_choice == "required"
    # a single string is one tool's name, not a list of its characters
    allowed = list(dict.fromkeys([tools] if isinstance(tools, str) else tools)) if tools is not None else None
    if allowed is not None and hasattr(reach, "all_tools"):
        known = {t.name for t in reach.all_tools()}
        missing = [n for n in allowed if n not in known]
        if missing:
            raise ConfigError(
                f"tools={allowed!r} names tools that are not registered: {', '.join(missing)}"
            )
    if forced and allowed is not None and forced not in allowed:
        raise ConfigError(
            f"tool_choice forces `{forced}`, but tools={allowed!r} does not include it"
        )

    model = adapter_for(reach, adapter)
    label = _adapter_label(model)
    messages = _initial_messages(messages_or_text)
    await _resume_confirmations(reach, messages, agent)
    hint = _resolve_hint(reach, system_hint)
    if hint and not any(m.get("role") == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": hint})

    query = _last_user_text(messages)
    offered = _OfferedTools(MAX_OFFERED_TOOLS)
    forced_entry: dict[str, Any] | None = None
    if forced:
        forced_entry = next(iter(reach.tools(agent=agent, names=[forced])), None)
        if forced_entry is None:
            raise ConfigError(
                f"tool_choice forces `{forced}`, which is not registered or not allowed for "
                f"agent {agent or 'default'!r}"
            )
    selections: dict[str, list[dict[str, Any]]] = {}
    ctx = RunContext(reach, run_id, agent, query, label, max_steps)
    steps: list[RunStep] = []
    results: list[ToolResult] = []
    seen_ids: set[str] = set()
    total = Usage()

    def finish(outcome: Outcome, text: str, error: str | None = None) -> RunResult:
        return RunResult(
            text=text,
            outcome=outcome,
            messages=messages,
            results=results,
            steps=steps,
            usage=total,
            run_id=run_id,
            adapter=label,
            error=error,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )

    async def stop(step: RunStep, outcome: Outcome, text: str, error: str) -> RunResult:
        """End the run early: the unfinished step is recorded and observers hear of it."""
        step.error = error
        steps.append(step)
        await _notify(reach, step, ctx, on_step)
        return finish(outcome, text, error)

    def remaining() -> float | None:
        return None if ends_at is None else ends_at - loop.time()

    has_selector = bool(reach.providers("selector"))
    for index in range(1, max_steps + 1):
        # -- which tools, which choice ---------------------------------------------
        query = _last_user_text(messages)
        if query not in selections:
            # with a selector installed, each question gets its few best tools; without
            # one, every allowed tool is offered (cutting by registration order would be arbitrary)
            limit = reach.config.reach.max_tools_per_step if has_selector else None
            selections[query] = list(reach.tools(agent=agent, query=query or None, names=allowed, limit=limit))
        selected = selections[query]
        if forced_entry is not None:
            offered.add([forced_entry], force=True)
        offered.add(selected)
        force_now = is_forced and (index == 1 or force_every_step)
        choice: ToolChoice = (
            first_choice if force_now else ("none" if first_choice == "none" else "auto")
        )
        step = RunStep(
            index=index, run_id=run_id, tools_offered=offered.names(), tool_choice=choice
        )

        # -- the model -------------------------------------------------------------
        left = remaining()
        if left is not None and left <= 0:
            return finish(
                "deadline", "", f"the run's deadline of {deadline:g} s passed before step {index}"
            )
        request = ModelRequest(
            messages=list(messages),
            tools=offered.entries(),
            tool_choice=choice,
            run_id=run_id,
            step=index,
            timeout=left,
            reach=reach,
        )
        t0 = time.perf_counter()
        try:
            async with asyncio.timeout(left):
                response: ModelResponse = await model.complete(request)
        except TimeoutError:
            step.model_ms = (time.perf_counter() - t0) * 1000
            return await stop(
                step,
                "deadline",
                "",
                f"the run's deadline of {deadline:g} s passed while waiting for the model ({label}) in step {index}",
            )
        except ModelError as exc:
            step.model_ms = (time.perf_counter() - t0) * 1000
            return await stop(step, "model_error", "", str(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an adapter bug must not become a traceback for the user
            _log(reach).exception("adapter %s failed in run %s", label, run_id)
            step.model_ms = (time.perf_counter() - t0) * 1000
            return await stop(
                step,
                "model_error",
                "",
                f"the model adapter ({label}) failed: {type(exc).__name__}: {exc}",
            )
        step.model_ms = (time.perf_counter() - t0) * 1000
        step.usage = response.usage
        step.text = response.text
        step.feedback = list(response.feedback)
        total = total + response.usage

        # Call ids must be unique within the run: the pipeline derives idempotency
        # keys from agent + run id + call id, and some servers number calls from 0 per message.
        calls: list[dict[str, Any]] = []
        # An id that is not 1-256 printable characters (reach_core.calls.call_id) is replaced
        # here, before the assistant message is written, so the result still answers to it.
        for n, c in enumerate(response.tool_calls):
            call_id = c.id
            if (problem := client_id_problem("id", call_id)) is not None:
                call_id = f"call_{index}_{n}"
                if c.id:
                    _log(reach).warning("run %s: the model's tool-call id %s replaced by %s: %s",
                                        run_id, ascii(c.id)[:80], call_id, problem)
            while call_id in seen_ids:
                call_id = f"{call_id}_s{index}"
                if len(call_id) > MAX_CLIENT_ID:
                    call_id = f"call_{index}_{n}_{len(seen_ids)}"
            seen_ids.add(call_id)
            c.id = call_id
            calls.append(c.to_openai())
        step.tool_calls = calls
        messages.append(response.assistant_message())

        if not calls and not response.feedback:
            steps.append(step)
            await _notify(reach, step, ctx, on_step)
            return finish("answered", response.text or "")

        # -- the tools, all at once ------------------------------------------------
        if calls:
            # Every call goes through the pipeline (so audit sees it): calls outside
            # `tools=[...]` come back as unknown_tool, and the run's deadline caps each
            # call's own deadline (a write cut off becomes outcome_unknown there).
            runnable = calls
            t1 = time.perf_counter()
            try:
                async with asyncio.timeout(None if ends_at is None else ends_at - loop.time() + _DEADLINE_GRACE):
                    with run_scope(reach, run_id=run_id, agent=agent, parent_run_id=parent_run_id,
                                   allowed=allowed, ends_at=ends_at, adapter=model, max_steps=max_steps):
                        ran = await reach.invoke_many(
                            runnable, agent=agent, run_id=run_id, query=query or None,
                            allowed=allowed, deadline=ends_at, parent_run_id=parent_run_id,
                        )
            except TimeoutError:
                # Keep the transcript well formed (every tool call answered) so the caller
                # can continue the conversation; what the cut-off calls did is unknown.
                step.tools_ms = (time.perf_counter() - t1) * 1000
                step.results = [_cut_off(c, deadline or 0.0) for c in calls]
                results.extend(step.results)
                messages.extend(r.to_message() for r in step.results)
                return await stop(
                    step,
                    "deadline",
                    response.text or "",
                    f"the run's deadline of {deadline:g} s passed while tools were running in step "
                    f"{index}; the calls still running then have an unknown outcome",
                )
            if confirm_wait > 0:
                ran = await _await_confirmations(reach, list(ran), confirm_wait)
            step.tools_ms = (time.perf_counter() - t1) * 1000
            step.results = list(ran)
            results.extend(ran)
            messages.extend(r.to_message() for r in ran)
            # A result may ask for tools to be offered from the next step on: shaping
            # offers read_result for its handle, find_tools the tools it found.
            wanted = [n for r in ran for n in (r.meta.get("offer_tools") or ())]
            if wanted:
                offered.add(reach.tools(agent=agent, names=[n for n in wanted if allowed is None or n in allowed]))
            if ends_at is not None and loop.time() >= ends_at:
                return await stop(
                    step,
                    "deadline",
                    response.text or "",
                    f"the run's deadline of {deadline:g} s passed while tools were running in step "
                    f"{index}; calls cut off report timeout (reads) or outcome_unknown (writes)",
                )
        if response.feedback:
            messages.append({"role": "user", "content": "\n".join(response.feedback)})
        steps.append(step)
        await _notify(reach, step, ctx, on_step)

    last_text = next((s.text for s in reversed(steps) if s.text), "") or ""
    return finish(
        "max_steps",
        last_text,
        f"stopped after {max_steps} model steps without a final answer (the model kept calling tools); "
        "raise max_steps or ask a narrower question",
    )


async def _notify(
    reach: Any, step: RunStep, ctx: RunContext, on_step: Callable[..., Any] | None
) -> None:
    """Tell observers about a finished step; an observer's failure never stops the run."""
    notify = getattr(reach, "notify", None)
    if notify is not None:
        try:
            await _maybe_await(notify("reach_run_step", step=step, ctx=ctx))
        except Exception:
            _log(reach).exception("a reach_run_step observer failed")
    if on_step is not None:
        try:
            await _maybe_await(on_step(step))
        except Exception:
            _log(reach).exception("the on_step callback failed")


def transcript_json(result: RunResult) -> str:
    """The run as compact JSON (non-ASCII kept), for ``--json`` output."""
    return dumps(result.to_dict())


# ---------------------------------------------------------------- confirmations


def _confirmer(reach: Any) -> Confirmer | None:
    """The installed confirmer, if it can resolve decisions (the :class:`Confirmer` protocol:
    ``resolve(reach, result, wait)``); the loop resumes waiting calls only through it."""
    try:
        provider = reach.provider("confirmer")
    except ConfigError:
        return None
    return provider if isinstance(provider, Confirmer) else None


async def _await_confirmations(reach: Any, ran: list[ToolResult], wait: float) -> list[ToolResult]:
    """Wait (together, up to ``wait`` s) for decisions on this turn's pending calls."""
    waiting = [i for i, r in enumerate(ran) if r.error is not None and r.error.code == "needs_confirmation"]
    confirmer = _confirmer(reach) if waiting else None
    if confirmer is None:
        return ran
    decided = await asyncio.gather(*(confirmer.resolve(reach, ran[i], wait) for i in waiting))
    for i, result in zip(waiting, decided, strict=True):
        ran[i] = result
    return ran


def _called_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Tool-call id -> the tool the assistant called under it, from the messages."""
    names: dict[str, str] = {}
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for tc in m.get("tool_calls") or ():
            fn = tc.get("function") if isinstance(tc, dict) else None
            if isinstance(fn, dict) and isinstance(tc.get("id"), str) and isinstance(fn.get("name"), str):
                names[tc["id"]] = fn["name"]
    return names


async def _resume_confirmations(reach: Any, messages: list[dict[str, Any]], agent: str | None = None) -> None:
    """Replace tool messages still waiting for a person with the decision taken since.

    A tool message is text a tool returned: a fetched page or another service's JSON
    can read ``{"error": {"code": "needs_confirmation", "confirmation_id": …}}`` too.
    So the stub handed to the confirmer names the tool the assistant called under that
    id and this run's agent (``meta["agent"]``): a confirmer gives back only a decision
    on that tool's call by that agent, never another call's stored result."""
    pending = []
    called: dict[str, str] | None = None
    for i, m in enumerate(messages):
        if m.get("role") != "tool" or "needs_confirmation" not in str(m.get("content", "")):
            continue
        try:
            err = json.loads(m["content"]).get("error") or {}
        except (ValueError, AttributeError):
            continue
        cid = err.get("confirmation_id") if err.get("code") == "needs_confirmation" else None
        if cid:
            pending.append((i, m, cid))
    confirmer = _confirmer(reach) if pending else None
    if confirmer is None:
        return
    for i, m, cid in pending:
        if called is None:
            called = _called_names(messages)
        call_id = m.get("tool_call_id", "")
        stub = ToolResult(call_id=call_id, name=called.get(call_id, "") if isinstance(call_id, str) else "",
                          ok=False, error=ToolError("needs_confirmation", ""),
                          meta={"confirmation_id": cid, "agent": agent or "default"})
        result = await confirmer.resolve(reach, stub, 0.0)
        if result is not stub:
            messages[i] = result.to_message()
