"""``CallContext``: what a connector and every runtime hook knows about one call."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .runtime import Runtime
    from .tool import Tool

__all__ = ["CallContext", "ProgressEvent"]


class ProgressEvent(dict):  # type: ignore[type-arg]
    """``{"type": "progress", "call_id", "tool", "done", "total", "message"}`` — a dict so it serialises as is."""


class CallContext:
    """Per-call facts and helpers. Cheap to build: plain slots, no I/O.

    ``deadline`` is an event-loop time (``loop.time()``) by which the whole call,
    retries included, must end. ``state`` is a scratch dict hooks may share
    within one call. ``needs_confirmation``/``approved`` are set by the core's
    policy and by a confirmer's ``reach_pre_invoke``.
    """

    # Plain attributes with class-level defaults: a context is built for every
    # call, so only the per-call facts are assigned here.
    deadline: float | None = None
    attempt: int = 0
    idempotency_key: str | None = None
    query: str | None = None
    parent_run_id: str | None = None
    #: ``time.perf_counter()`` when the pipeline began the call (0.0: a context built
    #: elsewhere). An observer reads the call's time so far from it without keeping the
    #: result (reach-audit: its capture then holds nothing the garbage collector tracks).
    started: float = 0.0
    needs_confirmation: bool = False
    approved: bool = False
    confirm_reason: str | None = None
    arguments: dict[str, Any] | None = None
    progress_sink: Any = None
    _log: Any = None
    _state: dict[str, Any] | None = None
    _guard_pending: Any = None  # what the guard rails must settle after this call (reach_core.guard)
    _guard_counted: Any = None  # (run, key, times) once the call is counted in its run

    def __init__(
        self,
        rt: Runtime,
        tool: Tool | None,
        agent: str,
        run_id: str | None,
        call_id: str,
        trace_id: str,
        idempotency_key: str | None = None,
        query: str | None = None,
        parent_run_id: str | None = None,
        started: float = 0.0,
    ) -> None:
        self.rt = rt  # a ``Reach`` is tolerated (plugins' tests build contexts from one): see ``reach``, ``log``
        self.tool = tool
        self.agent = agent
        self.run_id = run_id
        self.call_id = call_id
        self.trace_id = trace_id
        self.idempotency_key = idempotency_key
        self.query = query
        self.parent_run_id = parent_run_id
        self.started = started
        self.needs_confirmation = False

    @property
    def state(self) -> dict[str, Any]:
        """A scratch dict hooks may share within one call (created on first use)."""
        if self._state is None:
            self._state = {}
        return self._state

    @property
    def settings(self) -> Any:
        """The validated settings of the plugin that provides this tool (or ``None``)."""
        return self.tool.settings if self.tool is not None else None

    @property
    def reach(self) -> Any:
        """The ``Reach`` this call runs in (for plugins; the core reads ``rt``)."""
        return getattr(self.rt, "facade", self.rt)

    @property
    def log(self) -> Any:
        if self._log is None:
            self._log = getattr(self.rt, "runtime", self.rt).log.bind(
                tool=self.tool.name if self.tool else None, call_id=self.call_id, trace_id=self.trace_id
            )
        return self._log

    async def report_progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Tell observers (``reach_tool_progress``, streams, MCP) how far the call is."""
        known = getattr(self.rt, "runtime", self.rt).redactor.known
        if known.values and isinstance(message, str):  # configured secrets never reach an observer
            message = known.mask(message)
        event = ProgressEvent(
            type="progress", call_id=self.call_id, tool=self.tool.name if self.tool else None,
            done=done, total=total, message=message,
        )
        sink = self.progress_sink
        if sink is None:  # inside reach.invoke_stream? (see reach_core.streaming)
            from .streaming import sink_for

            sink = sink_for(self)
        if sink is not None:
            res = sink(event)
            if inspect.isawaitable(res):
                await res
        await getattr(self.rt, "runtime", self.rt).notify("reach_tool_progress", event=event, ctx=self)
