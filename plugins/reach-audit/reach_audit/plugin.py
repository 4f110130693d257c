"""Hook implementations of reach-audit (the module the ``reach`` entry point names).

reach-audit's state in a ``Reach`` is one :class:`AuditPlugin`, built by
``reach_plugin_instance`` with that Reach's validated settings; its runtime hooks
are methods, deliberately tiny: read ``self.audit``, append a capture, return
(the call hook's capture is written out in the method, not a call away).
Everything else happens in the background writer.
"""

from __future__ import annotations

from time import perf_counter as _clock
from time import time as _now
from typing import Any

from reach_core import hookimpl

# Only reach_core.hookimpl at import: listing plugins (``reach plugins``) imports this
# module, and the audit machinery (writer, store, structlog) loads when a Reach starts.

# Audit runs after shaping (50), so it records what the model actually received.
REACH_PLUGIN_NAME = "reach-audit"
REACH_HOOK_PRIORITY = {"reach_post_invoke": 90}


def _settings_or_default(settings: Any) -> Any:
    from .settings import AuditSettings

    return settings if isinstance(settings, AuditSettings) else AuditSettings()


class AuditPlugin:
    """reach-audit in one ``Reach``: its settings and its ``Audit`` (``None`` while off).

    ``audit`` is created at once (when enabled) and again on the first start after a
    shutdown; ``[plugins.reach-audit] enabled = false`` keeps it ``None`` for good.

    Slotted: the core lists this object's attributes (``dir``) when it registers its
    hooks, which gives an ordinary instance a ``__dict__`` that CPython 3.11 no longer
    reads at the specialised speed; every ``self.audit`` of the call hook then took
    ~300 instructions instead of ~30.
    """

    __slots__ = ("settings", "audit", "_writer", "_pending", "_spans", "_sync", "_context", "_result", "_call")

    def __init__(self, reach: Any, settings: Any) -> None:
        from reach_core.calls import ToolCall  # (imported when a Reach is built: see the module's imports)
        from reach_core.context import CallContext
        from reach_core.result import ToolResult

        self.settings = _settings_or_default(settings)
        #: the core's own types, whose captures the call hook lays out flat (record.FLAT_CALL)
        self._context, self._result, self._call = CallContext, ToolResult, ToolCall
        self._use(None)
        self._open(reach)

    def _use(self, audit: Any) -> None:
        """Make ``audit`` the current one (``None``: off), with what the call hook reads of it
        kept on this object: one attribute read each instead of a chain."""
        self.audit = audit
        self._writer: Any = audit.writer if audit is not None else None
        self._pending: Any = audit.writer._pending if audit is not None else None  # (the writer keeps this list)
        self._spans: Any = audit.spans if audit is not None else None
        self._sync: bool = audit.sync if audit is not None else False

    def _open(self, reach: Any) -> None:
        if self.audit is None and self.settings.enabled:
            from .audit import Audit

            self._use(Audit(reach, self.settings))

    @hookimpl
    def reach_startup(self, reach: Any) -> None:
        self._open(reach)  # a no-op unless a shutdown closed the previous one
        spans = self.audit.spans if self.audit is not None else None
        if spans is not None:
            spans.refresh()  # a tracer provider the host set after building this Reach

    @hookimpl
    async def reach_shutdown(self, reach: Any) -> None:
        audit = self.audit
        self._use(None)
        if audit is not None:
            await audit.aclose()

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: Any, ctx: Any) -> Any:
        """Capture one finished invocation: its values added to a list (the hot path).

        A plain method, so the call pays no coroutine; with ``durability = "sync"`` it
        returns the flush, which the core awaits before the invoke returns.

        For the core's own ``CallContext``, ``ToolCall`` and ``ToolResult`` the capture is
        their fields, not the objects, laid out in the writer's pending list itself
        (``record.FLAT_CALL``; the writer builds the same record from them): a capture
        stays alive until the writer runs (up to ``flush_interval_ms``), and every
        container it makes that the garbage collector tracks (the ToolResult, a tuple
        holding the arguments dict) made the calls trigger collections that walked every
        pending capture (see ``docs/architecture.md``, "What each plugin costs a call").
        The result's ``meta`` dict is kept as it is, so what a later hook adds to it
        (reach-confirm's confirmation id) is recorded as before. The call's time is read
        last, from ``ctx.started``: the core sets the result's final ``elapsed_ms`` only
        after the hooks, and this hook runs last (priority 90).
        Written for CPython's bytecode: each value read straight into the one tuple added
        to the list, the writer woken when the count reaches the one number it keeps for
        that (``AuditWriter._kick_at``; ``AuditWriter.enqueue`` is this, written out).
        """
        writer = self._writer
        if writer is None:
            return None
        if type(ctx) is not self._context or type(result) is not self._result or type(call) is not self._call:
            return self._capture(writer, call, tool, result, ctx)
        enqueued = writer._enqueued = writer._enqueued + 1
        if enqueued >= writer._kick_at:  # woken first (nothing runs in between), so that the
            writer._kicked()  # call's time is read last
        spans = self._spans
        otel = spans.current() if spans is not None and spans.configured else None
        self._pending += (
            _now(), result.call_id or call.id, result.name or call.name, call.arguments, tool,
            result.ok, result.content, result.error, result.meta, ctx.trace_id or result.trace_id,
            ctx.run_id, ctx.parent_run_id, ctx.agent, ctx.idempotency_key,
            (ctx.approved, ctx.confirm_reason) if ctx.needs_confirmation else None,
            (_clock() - ctx.started) * 1000.0 if ctx.started else result.elapsed_ms, otel)
        return _flushed(self.audit) if self._sync else None

    def _capture(self, writer: Any, call: Any, tool: Any, result: Any, ctx: Any) -> Any:
        """``reach_post_invoke`` of anything but the core's own context, call and result
        (a test's stand-ins, another framework's objects): what they have."""
        from .record import context_fields

        trace_id, run_id, parent_run_id, agent, key, confirm = context_fields(ctx)
        started = getattr(ctx, "started", 0.0)
        spans = self._spans
        otel = spans.current() if spans is not None and spans.configured else None
        writer._enqueued += 1
        if writer._enqueued >= writer._kick_at:
            writer._kicked()
        pending = writer._pending
        if type(result) is self._result and type(call) is self._call:  # see record.FLAT_CALL
            pending += (_now(), result.call_id or call.id, result.name or call.name, call.arguments, tool,
                        result.ok, result.content, result.error, result.meta, trace_id or result.trace_id,
                        run_id, parent_run_id, agent, key, confirm,
                        (_clock() - started) * 1000.0 if started else result.elapsed_ms, otel)
        else:
            pending.append((_now(), call, tool, result, trace_id, run_id, parent_run_id, agent, key, confirm, otel))
        return _flushed(self.audit) if self._sync else None

    @hookimpl
    def reach_run_step(self, step: Any, ctx: Any) -> None:
        if self.audit is not None:
            self.audit.on_step(step, ctx)

    @hookimpl
    def reach_confirmation(self, event: Any, ctx: Any, reach: Any) -> None:
        if self.audit is not None:
            self.audit.on_confirmation(event, ctx)


async def _flushed(audit: Any) -> None:
    await audit.writer.flush()


@hookimpl
def reach_plugin_settings() -> Any:
    from .settings import AuditSettings

    return AuditSettings


@hookimpl
def reach_plugin_instance(reach: Any, settings: Any) -> AuditPlugin:
    return AuditPlugin(reach, settings)


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .cli import audit_group

    cli.add_command(audit_group)
