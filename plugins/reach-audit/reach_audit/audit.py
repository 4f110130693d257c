"""``Audit``: the per-Reach object that ties redaction, the writer, events and spans.

One per ``Reach``, held by reach-audit's plugin object in that Reach
(``reach_audit.plugin.AuditPlugin``); :func:`get_audit` asks the Reach for it.
"""

from __future__ import annotations

import atexit
import time
import weakref
from typing import Any

from .events import EventLog
from .record import Captured, Row
from .redact import Redactor
from .settings import AuditSettings
from .spans import SpanRecorder, otel_available
from .storage import Store, store_for
from .writer import AuditWriter

# Every open audit of this process, whatever its Reach: what the exit flush writes and
# what ``only_audit`` looks at. Weak, so a dropped Reach's audit is not kept alive; not
# a map per Reach (the plugin object holds that), a process-wide set like atexit's.
_OPEN: weakref.WeakSet[Audit] = weakref.WeakSet()


class Audit:
    """Everything reach-audit holds for one Reach."""

    def __init__(self, reach: Any, settings: AuditSettings | None = None) -> None:
        self.settings = settings or AuditSettings()
        s = self.settings
        self.redactor = _shared_redactor(reach, s)
        self._reach = weakref.ref(reach)
        self._store: Store | None = None
        self.events = EventLog(s.log, self.redactor)
        self.spans: SpanRecorder | None = None
        if s.otel and otel_available():
            self.spans = SpanRecorder(content=s.otel_content)
        self.sync = s.durability == "sync"
        self.writer = AuditWriter(
            _LazyStore(self),
            self.redactor,
            summary_chars=s.summary_chars,
            interval=s.flush_interval_ms / 1000.0,
            batch_size=s.batch_size,
            on_written=self._after_commit if (self.events.enabled or self.spans) else None,
            wants_written=self._wants_after_commit,
        )
        _OPEN.add(self)

    @property
    def store(self) -> Store:
        """The state store (``reach.store``), resolved on first use."""
        if self._store is None:
            reach = self._reach()
            if reach is None:
                raise RuntimeError("the Reach of this audit log is gone")
            self._store = store_for(reach)
        return self._store

    # -- hooks -------------------------------------------------------------
    # The call hook's capture (the hot path) is written out in ``AuditPlugin.reach_post_invoke``
    # (reach_audit.plugin): a method call per invoke is a fair share of what it costs.
    def on_step(self, step: Any, ctx: Any) -> None:
        """Capture one agent-loop step (tools offered, chosen, tokens)."""
        self.writer.enqueue(
            Captured(
                "step",
                time.time(),
                getattr(ctx, "trace_id", None),
                getattr(ctx, "run_id", None) or getattr(step, "run_id", None),
                getattr(ctx, "parent_run_id", None),
                getattr(ctx, "agent", None),
                None,
                step=step,
                model=getattr(ctx, "adapter", None) or None,
            )
        )

    def on_confirmation(self, event: Any, ctx: Any) -> None:
        """Capture a confirmation request or decision (``ctx`` is None outside a call)."""
        self.writer.enqueue(
            Captured(
                "confirmation",
                time.time(),
                getattr(ctx, "trace_id", None),
                getattr(ctx, "run_id", None),
                getattr(ctx, "parent_run_id", None),
                getattr(ctx, "agent", None),
                None,
                step=dict(event) if isinstance(event, dict) else event,
                call_id_hint=getattr(ctx, "call_id", None),
            )
        )

    # -- control ------------------------------------------------------------
    async def flush(self) -> None:
        """Make every record captured so far durable (the acknowledgement point)."""
        await self.writer.flush()

    async def aclose(self) -> None:
        _OPEN.discard(self)
        await self.writer.aclose()
        self.events.close()

    def _wants_after_commit(self) -> bool:
        """Would ``_after_commit`` emit anything now? (The default: events to the stdlib
        logger, which nobody listens to, and no tracer provider: no.)"""
        return (self.spans is not None and self.spans.refresh()) or self.events.active()

    def _after_commit(self, items: list[Captured], rows: list[Row]) -> None:
        """Runs in a worker thread once ``rows`` are durable: log lines, then spans (once
        the application configured a tracer provider: OTel's default one drops them)."""
        self.events.emit(rows)
        if self.spans is not None and self.spans.refresh():
            for item, row in zip(items, rows, strict=True):
                try:
                    self.spans.record(item, row)
                except Exception as exc:  # telemetry must never cost a record
                    self.writer.log.warning("reach-audit: span failed: %r", exc)


def _shared_redactor(reach: Any, settings: AuditSettings) -> Redactor:
    """The Reach's own redactor (also used by the core's log events), with this plugin's
    ``redact_keys``/``redact_patterns`` added; a private one for a Reach that has none."""
    redactor = getattr(reach, "redactor", None)
    if not isinstance(redactor, Redactor):
        return Redactor(settings.redact_keys, settings.redact_patterns)
    redactor.add(keys=settings.redact_keys, patterns=settings.redact_patterns)
    return redactor


class _LazyStore:
    """Defers ``store_for(reach)`` to the first write (the core opens its store lazily too)."""

    def __init__(self, audit: Audit) -> None:
        self._audit = audit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._audit.store, name)


def get_audit(reach: Any) -> Audit | None:
    """The audit of ``reach``, or ``None`` when reach-audit is not active on it."""
    from reach_core import plugin_instance

    plugin = plugin_instance(reach, "reach-audit")
    return getattr(plugin, "audit", None)


def _flush_all_at_exit() -> None:
    """Interpreter exit: write what scripts left pending (``asyncio.run`` without
    ``aclose()``, ``reach.run_sync``). The core's store thread is a daemon and still
    alive while atexit handlers run."""
    for audit in list(_OPEN):
        if not audit.writer.pending:
            continue
        try:
            audit.writer.flush_sync()
        except Exception as exc:  # the store may already be closed
            audit.writer.log.warning("reach-audit: %d audit records could not be written at exit: %r",
                                     audit.writer.pending, exc)


atexit.register(_flush_all_at_exit)


def only_audit() -> Audit | None:
    """The one active audit of this process, if there is exactly one.

    ``reach_confirmation`` events decided outside a call (``ctx`` is None) do not
    say which Reach they belong to; in a CLI process there is only one.
    """
    active = list(_OPEN)
    return active[0] if len(active) == 1 else None
