"""OpenTelemetry spans for tool calls, following the GenAI semantic conventions.

Optional: active when ``opentelemetry`` is importable (``pip install
reach-audit[otel]``), ``otel = true`` and the application configured a tracer
provider (with OTel's default, the proxy, a span goes nowhere, yet building it and
capturing the context on every call would still cost). The hook only captures the
current OTel context (so the span gets the caller's parent); the span itself is
made from the finished audit record, off the hot path, with the call's real start
and end times. Arguments and results go on the span only with ``otel_content = true``,
and then as the record has them: redacted and size-capped.
"""

from __future__ import annotations

import json
from typing import Any

from .record import Captured, Row


def otel_available() -> bool:
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        return False
    return True


class SpanRecorder:
    """Turns one audit record of a call into one ``execute_tool {name}`` span."""

    def __init__(self, *, content: bool = False) -> None:
        from opentelemetry import context, trace

        self._trace = trace
        self._context = context
        self._unset = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
        self.content = content
        #: a tracer provider is configured: read by the hot path, kept up to date by ``refresh``
        self.configured = False
        self.refresh()

    def refresh(self) -> bool:
        """Has the application configured a tracer provider (yet)?

        Asked when the audit opens and again with every batch the writer commits, off
        the hot path; OTel sets the global provider once, so a yes is final. A call
        captured before the provider was seen gets its span without the caller's parent.
        """
        if not self.configured:
            self.configured = not isinstance(self._trace.get_tracer_provider(), self._unset)
        return self.configured

    def current(self) -> Any:
        """The caller's OTel context, captured on the hot path (a context-var read)."""
        return self._context.get_current()

    def record(self, item: Captured, row: Row) -> None:
        rec = row.record
        if rec.get("kind") != "call":
            return
        trace = self._trace
        tracer = trace.get_tracer("reach-audit")
        name = rec.get("tool") or "unknown"
        end_ns = int(item.ts * 1e9)
        start_ns = end_ns - int((rec.get("elapsed_ms") or 0) * 1e6)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
        }
        if rec.get("call_id"):
            attrs["gen_ai.tool.call.id"] = rec["call_id"]
        description = getattr(item.tool, "description", None)
        if description:
            attrs["gen_ai.tool.description"] = description[:512]
        for key, field in (
            ("reach.agent", "agent"),
            ("reach.run_id", "run_id"),
            ("reach.trace_id", "trace_id"),
            ("reach.plugin", "plugin"),
            ("reach.risk", "risk"),
            ("reach.attempts", "attempts"),
            ("reach.audit.hash", None),
        ):
            value = row.hash if field is None else rec.get(field)
            if value is not None and value != "":
                attrs[key] = value
        failed = rec.get("status") not in (None, "ok")
        if failed:
            attrs["error.type"] = rec["status"]
        if self.content:
            attrs["gen_ai.tool.call.arguments"] = _text(rec.get("args"))
            attrs["gen_ai.tool.call.result"] = _text(rec.get("error") if failed else rec.get("result"))
        span = tracer.start_span(
            f"execute_tool {name}",
            # not captured (no provider yet when the call ran): a root span, not a child of
            # whatever was current when the writer's task started
            context=item.otel_ctx if item.otel_ctx is not None else self._context.Context(),
            kind=trace.SpanKind.INTERNAL,
            attributes=attrs,
            start_time=start_ns,
        )
        if failed:
            span.set_status(trace.Status(trace.StatusCode.ERROR, rec["status"]))
        span.end(end_time=end_ns)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
