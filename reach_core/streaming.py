"""Streaming tools: progress and partial items while a call runs, one result at the end.

A connector may implement ``async def execute_stream(self, params, ctx)`` as an
async generator. What it yields:

* ``Progress(done, total=None, message=None)``: how far it is (a progress event);
* ``Final(content)``: the result of the whole call (the last one wins);
* anything else: a partial item. Without a ``Final``, the call's result is the
  list of every item, in order.

The stream is aggregated into one ordinary result, so a streaming tool runs
through the same pipeline as any other (decode, validate, policy,
``reach_pre_invoke``, guard rails, ``reach_post_invoke`` shaping and audit);
``reach.invoke`` simply waits for it. ``reach.invoke_stream(call)`` additionally
yields the events as they happen and then the final ``ToolResult``. Plain
connectors get the same events by calling ``ctx.report_progress(...)``.

Why a stream has two clocks: ``tool.timeout`` stays the deadline of the whole
call, and ``idle_timeout`` (connector attribute or ``[connectors.NAME]
idle_timeout``) bounds the silence between two events, so a long stream that
keeps talking may run long while a stuck one is stopped early. When a stream
stops (idle, deadline, error, cancellation) the generator is closed (``aclose``),
so its ``finally`` blocks release upstream work, and the failure says how much
had been delivered (``ToolFailure.details["delivered"]``; ``invoke_stream`` puts
it in the final result's ``meta``).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ToolFailure
from .result import ToolResult, dumps, to_jsonable

if TYPE_CHECKING:
    from .context import CallContext
    from .runtime import Runtime

__all__ = ["Final", "Progress", "StreamEvent", "invoke_stream", "prepare_connector"]

#: events shown to the model in a failure message, at most this many characters
_DELIVERED_PREVIEW = 600
#: gives the stream's own deadline check the edge over the executor's outer timer
_DEADLINE_EDGE = 0.005


@dataclass(slots=True)
class Progress:
    """Yield this from ``execute_stream`` to report how far the call is."""

    done: float
    total: float | None = None
    message: str | None = None


@dataclass(slots=True)
class Final:
    """Yield this from ``execute_stream`` to set the result of the whole call."""

    content: Any


class StreamEvent(dict):  # type: ignore[type-arg]
    """An event of ``invoke_stream``: ``{"type": "progress" | "item", "call_id", "tool", ...}``.

    Progress events carry ``done``, ``total``, ``message``; item events carry
    ``index`` and ``item`` (JSON-ready). A dict so it serialises as is.
    """


# ------------------------------------------------------------------ the channel


class _Channel:
    """Where the events of one ``invoke_stream`` call go.

    The channel travels in a context variable into the pipeline task; the first
    call context with the streamed call's id and tool name claims it, so calls
    a connector makes itself (a delegated run, a nested invoke) do not leak
    their events into this stream.
    """

    __slots__ = ("call_id", "name", "push", "ctx", "delivered")

    def __init__(self, call_id: str, name: str, push: Callable[[Any], None]) -> None:
        self.call_id, self.name, self.push = call_id, name, push
        self.ctx: Any = None
        self.delivered: list[Any] = []

    def claim(self, ctx: CallContext) -> bool:
        if self.ctx is None:
            if ctx.call_id != self.call_id or ctx.tool is None or ctx.tool.name != self.name:
                return False
            self.ctx = ctx
        return self.ctx is ctx


_CHANNEL: contextvars.ContextVar[_Channel | None] = contextvars.ContextVar("reach_stream_channel", default=None)


def sink_for(ctx: CallContext) -> Callable[[Any], None] | None:
    """The event sink of the ``invoke_stream`` this call belongs to, if any."""
    channel = _CHANNEL.get()
    if channel is None or not channel.claim(ctx):
        return None
    ctx.progress_sink = channel.push
    return channel.push


def detach() -> contextvars.Token[_Channel | None]:
    """Hide the current stream from work started now (``reset`` the token after)."""
    return _CHANNEL.set(None)


def reattach(token: contextvars.Token[_Channel | None]) -> None:
    _CHANNEL.reset(token)


# ------------------------------------------------------------------ running a stream


def prepare_connector(obj: Any) -> Any:
    """Make a streaming connector runnable by the ordinary executor.

    Called once at registration. A connector with ``execute_stream`` (or an
    ``@connector`` async generator function) gets an ``execute`` that runs and
    aggregates the stream; every other connector is returned untouched, so
    non-streaming calls pay nothing for this feature.
    """
    from .connectors import FunctionConnector

    if getattr(obj, "_reach_stream", False):
        return obj
    if isinstance(obj, FunctionConnector) and inspect.isasyncgenfunction(obj.fn):
        fn = obj.fn

        def execute_stream(params: Any, ctx: Any = None) -> Any:
            return fn(**obj._kwargs(params, ctx))

        obj.execute_stream = execute_stream  # type: ignore[attr-defined]
        obj._is_async = True
    stream = getattr(obj, "execute_stream", None)
    if stream is None or not callable(stream):
        return obj
    if not inspect.isasyncgenfunction(stream) and not isinstance(obj, FunctionConnector):
        from .errors import ConnectorError

        raise ConnectorError(
            f"{type(obj).__name__}.execute_stream must be an async generator (`async def` with `yield`)"
        )

    async def execute(params: Any, ctx: Any) -> Any:
        return await run_stream(obj, params, ctx)

    obj.execute = execute
    obj._reach_stream = True
    return obj


def _idle_timeout(obj: Any, ctx: CallContext) -> float | None:
    tool = ctx.tool
    name = tool.name if tool is not None else getattr(obj, "name", "")
    ccfg = ctx.rt.config.connectors.get(name) if ctx.rt is not None else None
    value = getattr(ccfg, "idle_timeout", None) if ccfg is not None else None
    if value is None:
        value = getattr(obj, "idle_timeout", None)
    return float(value) if value is not None else None


def _preview(items: list[Any]) -> str:
    text = dumps(items)
    return text if len(text) <= _DELIVERED_PREVIEW else text[: _DELIVERED_PREVIEW - 1] + "…"


def _delivered_note(items: list[Any]) -> str:
    if not items:
        return "nothing had been delivered"
    return f"{len(items)} item(s) had been delivered: {_preview(items)}"


async def run_stream(obj: Any, params: Any, ctx: CallContext) -> Any:
    """Run ``obj.execute_stream`` to its end and return the aggregated content.

    Forwards progress to ``ctx.report_progress`` (hook, stream, MCP) and items to
    the caller's stream; enforces the idle timeout and the call's deadline
    between events; always closes the generator.

    One watchdog timer serves both clocks: it is re-armed only when it fires
    early (events arrived meanwhile), so a fast stream pays a clock read per
    event, not a timer.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    name = ctx.tool.name if ctx.tool is not None else getattr(obj, "name", "?")
    push = ctx.progress_sink or sink_for(ctx)
    idle = _idle_timeout(obj, ctx)
    hard = ctx.deadline - _DEADLINE_EDGE if ctx.deadline is not None else None
    items: list[Any] = []
    final: Any = _NO_FINAL
    last = loop.time()
    fired: str | None = None
    handle: asyncio.TimerHandle | None = None
    cancelling = task.cancelling()

    def limit() -> float | None:
        idle_at = last + idle if idle is not None else None
        if idle_at is None:
            return hard
        return idle_at if hard is None else min(idle_at, hard)

    def watchdog() -> None:
        nonlocal handle, fired
        handle = None
        now = loop.time()
        if hard is not None and now >= hard:
            fired = "deadline"
        elif idle is not None and now >= last + idle:
            fired = "idle"
        else:
            when = limit()
            if when is not None:
                handle = loop.call_at(when, watchdog)
            return
        task.cancel()

    def timed_out() -> ToolFailure:
        if fired == "deadline":
            total = ctx.tool.timeout if ctx.tool is not None else 0.0
            msg = (f"{name} did not finish within {total:g} s; {_delivered_note(items)}. "
                   "Use what arrived, or ask for less.")
        else:
            msg = (f"{name} sent nothing for {idle:g} s and was stopped (idle timeout); "
                   f"{_delivered_note(items)}. Try again later or ask for less.")
        return ToolFailure(msg, code="timeout", details={"delivered": items, "idle": fired == "idle"})

    first = limit()
    if first is not None:
        handle = loop.call_at(first, watchdog)
    agen = obj.execute_stream(params, ctx)
    try:
        while True:
            try:
                event = await agen.__anext__()
            except StopAsyncIteration:
                break
            except ToolFailure as exc:
                exc.details.setdefault("delivered", items)
                if items:
                    exc.message = f"{exc.message} (the stream failed midway; {_delivered_note(items)})"
                    exc.args = (exc.message,)
                    exc.retryable = False  # a re-run would deliver the same items twice
                raise
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                ctx.log.error("reach.stream_failed", error_type=type(exc).__name__, error=str(exc),
                              delivered=len(items))
                raise ToolFailure(
                    f"{name} failed midway: internal error after {_delivered_note(items)}. "
                    "Do not resend the same arguments; use what arrived or tell the user.",
                    code="execution_failed",
                    details={"delivered": items, "exception": type(exc).__name__},
                ) from exc
            last = loop.time()
            if hard is not None and last >= hard:  # a generator that never waits still meets its deadline
                fired = "deadline"
                raise timed_out()
            if isinstance(event, Progress):
                await ctx.report_progress(event.done, event.total, event.message)
            elif isinstance(event, Final):
                final = event.content
            else:
                item = to_jsonable(event)
                items.append(item)
                if push is not None:
                    res = push(StreamEvent(type="item", call_id=ctx.call_id, tool=name,
                                           index=len(items) - 1, item=item))
                    if res is not None and inspect.isawaitable(res):
                        await res
    except asyncio.CancelledError:
        if fired is not None and task.uncancel() <= cancelling:
            raise timed_out() from None
        raise
    finally:
        if handle is not None:
            handle.cancel()
        # runs on success, failure, timeout and cancellation: the generator's own
        # finally blocks (closing sockets, killing processes) must run now, not at GC
        await agen.aclose()
    if fired is not None:  # the watchdog's cancel raced with the end of the stream: absorb it here
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            if task.uncancel() > cancelling:
                raise
    return items if final is _NO_FINAL else final


_NO_FINAL: Any = object()


# ------------------------------------------------------------------ invoke_stream

_DONE: Any = object()


async def invoke_stream(rt: Runtime, call: Any, arguments: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
    """Run one call through the pipeline, yielding its events, then its ``ToolResult``.

    Events are :class:`StreamEvent` dicts (``type`` ``progress`` or ``item``), in
    the order the tool produced them. Leaving the loop early (``break``,
    ``aclose()``, cancellation) cancels the call and closes the tool's stream.
    """
    from .calls import to_call
    from .pipeline import invoke

    try:
        call = to_call(call, arguments)
        arguments = None
    except TypeError:
        pass  # the pipeline reports it as a failed result
    queue: asyncio.Queue[Any] = asyncio.Queue()
    channel = _Channel(getattr(call, "id", ""), getattr(call, "name", ""), queue.put_nowait)
    token = _CHANNEL.set(channel)
    try:
        task = asyncio.create_task(invoke(rt, call, arguments, **kwargs))
    finally:
        _CHANNEL.reset(token)
    task.add_done_callback(lambda _t: queue.put_nowait(_DONE))
    delivered: list[Any] = []
    try:
        while True:
            event = await queue.get()
            if event is _DONE:
                break
            if rt.redactor.known.values:  # configured secrets never reach the caller (known_secrets)
                event = StreamEvent(rt.redactor.known.mask_data(event))
            if event.get("type") == "item":
                delivered.append(event.get("item"))
            yield event
        result: ToolResult = task.result()
        if not result.ok and delivered and "delivered" not in result.meta:
            result.meta["delivered"] = delivered
        yield result
    finally:
        if not task.done():
            task.cancel()
            try:
                await task
            except BaseException:  # noqa: BLE001 - we asked for the cancellation
                pass
