"""OpenTelemetry spans follow the GenAI conventions; content only when opted in."""

from __future__ import annotations

import json

import pytest
import reach_audit
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def provider():
    """The global tracer provider can be set once per process: one for this module."""
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(tp)
    return tp


@pytest.fixture
def spans():
    _EXPORTER.clear()
    return _EXPORTER


async def test_execute_tool_spans_with_genai_attributes(make_reach, spans):
    reach = make_reach()
    parent_tracer = trace.get_tracer("test")
    with parent_tracer.start_as_current_span("agent turn") as parent:
        ok = await reach.invoke({"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}, agent="alpha")
        bad = await reach.invoke({"id": "c2", "name": "refuse", "arguments": {"reason": "no"}})
    await reach_audit.flush(reach)
    await reach.aclose()  # events and spans follow the commit; shutdown waits for them
    by_name = {s.name: s for s in spans.get_finished_spans()}
    span = by_name["execute_tool add"]
    attrs = dict(span.attributes)
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "add"
    assert attrs["gen_ai.tool.call.id"] == "c1"
    assert attrs["gen_ai.tool.type"] == "function"
    assert attrs["reach.agent"] == "alpha" and attrs["reach.trace_id"] == ok.trace_id
    assert "error.type" not in attrs
    assert "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs
    assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
    assert (span.end_time - span.start_time) / 1e6 == pytest.approx(ok.elapsed_ms, abs=0.01)
    failed = by_name["execute_tool refuse"]
    assert failed.attributes["error.type"] == bad.error.code == "execution_failed"
    assert failed.status.status_code == trace.StatusCode.ERROR


async def test_content_only_when_opted_in_and_redacted(make_reach, spans):
    reach = make_reach(otel_content=True)
    await reach.invoke("login", {"user": "ann", "password": "pw-very-secret-1"})
    await reach.aclose()
    (span,) = [s for s in spans.get_finished_spans() if s.name == "execute_tool login"]
    args = json.loads(span.attributes["gen_ai.tool.call.arguments"])
    result = json.loads(span.attributes["gen_ai.tool.call.result"])
    assert args == {"user": "ann", "password": "[REDACTED]", "note": ""}
    assert result["user"] == "ann" and result["token"] == "[REDACTED]"


async def test_spans_can_be_switched_off(make_reach, spans):
    reach = make_reach(otel=False)
    await reach.invoke("add", {"a": 1, "b": 2})
    await reach.aclose()
    assert spans.get_finished_spans() == ()


async def test_no_otel_work_until_a_tracer_provider_is_configured(make_reach, spans, monkeypatch):
    """OTel's default provider (the proxy) drops every span: until the application sets
    one, the hook captures no OTel context and the writer builds no span. A provider set
    later is seen at the next batch; from then on, spans have their parents again."""
    from reach_audit import get_audit

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())
    reach = make_reach()
    await reach.start()
    recorder = get_audit(reach).spans
    assert recorder is not None and not recorder.configured
    parent_tracer = trace.get_tracer("test")
    with parent_tracer.start_as_current_span("agent turn"):
        await reach.invoke({"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}})
        assert get_audit(reach).writer._take(10**6)[0][-1] is None  # no context captured (the last value)
        await reach_audit.flush(reach)
    assert not recorder.configured
    monkeypatch.undo()  # the application configures its provider (the module's one)
    with parent_tracer.start_as_current_span("next turn") as parent:
        await reach.invoke({"id": "c2", "name": "add", "arguments": {"a": 2, "b": 2}})
        await reach_audit.flush(reach)  # this batch's commit sees the provider
        await reach.invoke({"id": "c3", "name": "add", "arguments": {"a": 3, "b": 2}})
    await reach.aclose()
    assert recorder.configured
    by_id = {s.attributes["gen_ai.tool.call.id"]: s for s in spans.get_finished_spans()
             if s.name == "execute_tool add"}
    assert "c1" not in by_id  # made while no provider was configured: dropped, as OTel would
    assert by_id["c2"].parent is None  # captured before the provider was seen: a span, no parent
    assert by_id["c3"].parent is not None and by_id["c3"].parent.span_id == parent.get_span_context().span_id
