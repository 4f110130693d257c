"""Turning an invocation (or an agent-loop step) into one audit record.

The call hook only lays out the fields of the call, its result and its context in
the writer's pending list (``FLAT_CALL`` values, read where they lie by
:func:`build_rows`); the expensive part, redaction, summarising and serialisation,
happens here, in the background writer, so the invoke path pays for one list extend.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from reach_core.calls import ToolCall
from reach_core.result import ToolResult

from .chain import canonical_json
from .redact import Redactor

RECORD_VERSION = 1
CONFIRMATION_META_KEYS = (
    "confirmation_id",
    "confirmation",
    "confirmed",
    "confirmed_by",
    "decision",
    "approver",
)


@dataclass(slots=True)
class Captured:
    """What the hook grabs on the hot path: references and a few ctx fields."""

    kind: str  # "call" | "step" | "confirmation"
    ts: float  # time.time() when the hook ran
    trace_id: str | None
    run_id: str | None
    parent_run_id: str | None
    agent: str | None
    idempotency_key: str | None
    call: Any = None
    tool: Any = None
    result: Any = None
    step: Any = None  # a RunStep, or the event dict of a confirmation
    model: str | None = None  # the adapter label of a step
    otel_ctx: Any = None  # the caller's OpenTelemetry context, when spans are on
    confirm: tuple[bool, str | None] | None = None  # (approved, reason) when a person had to decide
    call_id_hint: str | None = None  # ctx.call_id of a confirmation event


def context_fields(ctx: Any) -> tuple[Any, ...]:
    """``(trace_id, run_id, parent_run_id, agent, idempotency_key, confirm)`` of a call's
    context, each ``None`` when it lacks one; ``confirm`` is ``(approved, reason)`` when a
    person had to decide."""
    confirm = None
    if getattr(ctx, "needs_confirmation", False):
        confirm = (bool(getattr(ctx, "approved", False)), getattr(ctx, "confirm_reason", None))
    return (getattr(ctx, "trace_id", None), getattr(ctx, "run_id", None), getattr(ctx, "parent_run_id", None),
            getattr(ctx, "agent", None), getattr(ctx, "idempotency_key", None), confirm)


#: the number of values of the call hook's capture of the core's own ``ToolCall`` and
#: ``ToolResult``, laid out in the writer's pending list (:func:`build_rows` reads them
#: there): their fields in place of the objects, ``(ts, call_id, name, arguments, tool,
#: ok, content, error, meta, trace_id, run_id, parent_run_id, agent, idempotency_key, confirm,
#: elapsed_ms, otel_ctx)``, where ``call_id`` is the result's (else the call's), ``name`` likewise and
#: ``trace_id`` the context's (else the result's): what the record reads of each
FLAT_CALL = 17


def _call_of(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """The ``ToolCall`` the call hook captured the fields of, as it was (its ``id`` kept as
    is: the constructor would replace an empty one). Its idempotency key is the call
    context's, captured on its own; nothing reads the call's ``extra``."""
    call = ToolCall.__new__(ToolCall)
    call.name, call.arguments, call.id = name, arguments, call_id
    call.idempotency_key = call.extra = None
    return call


def unflattened(raw: tuple[Any, ...]) -> tuple[Any, ...]:
    """The call hook's capture as ``(ts, call, tool, result, trace_id, run_id,
    parent_run_id, agent, idempotency_key, confirm, otel_ctx)``, whichever form it took:
    a flat one (``FLAT_CALL``) gets a ``ToolCall`` and a ``ToolResult`` holding what the
    record reads of the originals."""
    if len(raw) != FLAT_CALL:
        return raw
    ts, call_id, name, args, tool, ok, content, error, meta, trace_id, run_id, parent_run_id, agent, key, \
        confirm, elapsed, otel_ctx = raw
    result = ToolResult(call_id, name, ok, content, error, elapsed, trace_id, meta)
    return (ts, _call_of(call_id, name, args), tool, result, trace_id, run_id, parent_run_id, agent, key, confirm,
            otel_ctx)


def captured_call(raw: tuple[Any, ...]) -> Captured:
    """Expand what the call hook enqueued, ``(ts, call, tool, result, trace_id, run_id,
    parent_run_id, agent, idempotency_key, confirm, otel_ctx)``, or the fields of the core's
    ``ToolCall`` and ``ToolResult`` in their place (``FLAT_CALL``; see ``AuditPlugin.reach_post_invoke``)."""
    ts, call, tool, result, trace_id, run_id, parent_run_id, agent, key, confirm, otel_ctx = unflattened(raw)
    if confirm is not None:
        confirm = (bool(confirm[0]), confirm[1])
    return Captured(
        "call", ts, trace_id, run_id, parent_run_id, agent, key, call, tool, result,
        otel_ctx=otel_ctx, confirm=confirm,
    )


@dataclass(slots=True)
class Row:
    """A built record ready for the chain: the canonical JSON plus indexed columns."""

    record: dict[str, Any]
    canonical: str  # set with ``seq`` when the row is chained
    ts: float  # exactly the instant ``record["ts"]`` names (see exact_ts)
    kind: str
    agent: str | None
    tool: str | None
    status: str | None
    elapsed_ms: float | None
    run_id: str | None
    call_id: str | None
    hash: str | None = None  # set when the row is chained
    seq: int | None = None  # its position in the log, set (and hashed) when the row is chained


def _micros(ts: float) -> tuple[int, int]:
    """``ts`` as whole seconds and rounded microseconds (0-999,999)."""
    whole = int(ts)
    micros = round((ts - whole) * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    return whole, micros


# (whole second, its text up to the ".", the second as a float): one tuple swapped in whole, so two
# writer threads never pair one second's number with another's text
_SECOND: list[tuple[int, str, float]] = [(-1, "", -1.0)]
#: ``"000"`` ... ``"999"``: the six digits of the microseconds are two of these
_DIGITS3 = [str(1000 + n)[1:] for n in range(1000)]
#: ``int(x)`` and ``round(x[, n])`` of a ``float`` without looking ``__trunc__``/``__round__`` up on it
#: (the builtins make a bound method object per call: ~500 instructions each under callgrind)
_trunc = float.__trunc__
_round = float.__round__


def stamp(ts: float) -> tuple[str, float]:
    """``(iso(ts), exact_ts(ts))`` in one go: the writer needs both for every record.

    The seconds part of the text is cached, with the second as a float: records arrive
    many per second. ``_micros`` is written out here, with ``float``'s own ``__trunc__``
    and ``__round__`` for a float ``ts`` (what ``int()`` and ``round()`` call, without
    making a bound method each time), and the six digits are two cuts of a table
    rather than formatted with ``:06d``: the writer stamps every record twice (``ts``
    and ``started``), and a call, a tuple and a format spec were a fair share of its time.
    ``cached[2] + micros / 1_000_000`` is ``whole + micros / 1_000_000``: the int
    ``whole`` (below 2**53) becomes that same float when added.
    """
    if type(ts) is float:
        whole = _trunc(ts)
        micros = _round((ts - whole) * 1e6)
    else:
        whole = int(ts)
        micros = round((ts - whole) * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    cached = _SECOND[0]
    if cached[0] != whole:
        cached = _SECOND[0] = (whole, datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S."),
                               float(whole))
    if micros < 0:  # before 1970 (int() truncates towards zero): the format it always had
        return f"{cached[1]}{micros:06d}Z", whole + micros / 1_000_000
    return cached[1] + _DIGITS3[micros // 1000] + _DIGITS3[micros % 1000] + "Z", cached[2] + micros / 1_000_000


def iso(ts: float) -> str:
    """UTC ISO-8601 with microseconds (``2026-05-01T08:00:00.123456Z``), the log's one format:
    ``stamp(ts)[0]``."""
    return stamp(ts)[0]


def exact_ts(ts: float) -> float:
    """The one float for the microsecond ``iso(ts)`` names: what the ``ts`` column holds.

    The column is then bound to the hashed record exactly: ``verify`` accepts a
    column value only when it is this canonical float of the record's ``ts``.
    """
    whole, micros = _micros(ts)
    return whole + micros / 1_000_000


def _rough_size(value: Any, budget: int) -> int:
    """A cheap upper-ish estimate of the JSON length of ``value``; stops past ``budget``."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, dict):
        size = 2
        for k, v in value.items():
            size += len(str(k)) + 4 + _rough_size(v, budget - size)
            if size > budget:
                return size
        return size
    if isinstance(value, list):
        size = 2
        for v in value:
            size += 1 + _rough_size(v, budget - size)
            if size > budget:
                return size
        return size
    return 24


_NOT_YET: Any = object()  # "not computed in advance" (see build_rows)


def _prepared(value: Any) -> Any:
    """What :func:`summarise` redacts: text holding a JSON object or array parsed, bytes as text."""
    if isinstance(value, str | bytes | bytearray):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else value
        parsed = None
        if text[:1] in ("{", "["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
        return parsed if isinstance(parsed, dict | list) else text
    return value


_PLAIN = frozenset((type(None), int, float, bool))  # values summarise returns as they are


def _plain(value: Any) -> bool:
    """Values that :func:`summarise` returns as they are."""
    return type(value) in _PLAIN


def summarise(value: Any, redactor: Redactor, cap: int, learned: list[str] | None = None) -> Any:
    """Redact, then cap the size: small values stay as they are, large ones become a preview.

    With ``learned``, the secrets found in ``value`` are added to it (only on the slow
    path: a value the fast scan passes holds none)."""
    if _plain(value):
        return value
    return _summary(_prepared(value), redactor, cap, learned)


def _summary(
    value: Any, redactor: Redactor, cap: int, learned: list[str] | None = None,
    dumped: Any = _NOT_YET, clean: Any = _NOT_YET,
) -> Any:
    """:func:`summarise` of a value already :func:`_prepared`; ``dumped`` (its
    ``redactor.scan``) and ``clean`` (a string's ``redactor.text``) when the caller
    computed them for many values at once."""
    if type(value) is not str:
        if dumped is _NOT_YET:
            dumped = redactor.scan(value)
        if dumped is not None:  # nothing to redact: measured by its dump, kept as is
            if len(dumped) <= cap:
                return value
            text = dumped.decode("utf-8", "replace")
            return {"truncated": True, "chars": len(text), "preview": text[:cap]}
    try:
        if clean is _NOT_YET:
            clean = redactor.value(value)  # also turns anything unusual into text
        if learned is not None:
            learned.extend(redactor.secrets_in(value))
    except Exception as exc:  # a summary must never cost the record
        clean = f"[unserialisable {type(exc).__name__}]"
    if _rough_size(clean, cap // 2) <= cap // 2:
        return clean  # clearly small: no need to serialise it just to measure
    text = canonical_json(clean) if isinstance(clean, dict) else json.dumps(
        clean, separators=(",", ":"), ensure_ascii=False, default=str
    )
    if len(text) <= cap:
        return clean
    return {"truncated": True, "chars": len(text), "preview": text[:cap]}


def _arguments_of(call: Any) -> Any:
    if call is None:
        return None
    if isinstance(call, dict):
        if "arguments" in call:
            return call["arguments"]
        return (call.get("function") or {}).get("arguments")
    args = getattr(call, "arguments", None)
    if args is None:
        fn = getattr(call, "function", None)
        args = getattr(fn, "arguments", None)
    return args


def _call_id_of(call: Any, result: Any) -> str | None:
    cid = getattr(result, "call_id", None)
    if cid:
        return cid
    if isinstance(call, dict):
        return call.get("id")
    return getattr(call, "id", None)


def _name_of(call: Any, tool: Any, result: Any) -> str | None:
    for candidate in (getattr(tool, "name", None), getattr(result, "name", None)):
        if candidate:
            return candidate
    if isinstance(call, dict):
        return call.get("name") or (call.get("function") or {}).get("name")
    return getattr(call, "name", None)


#: ``[reach_core.tool.Tool]`` once :func:`build_rows` has run (imported then, not with this module:
#: it brings pydantic, which ``reach audit`` commands do without)
_TOOL: list[Any] = [None]
#: the meta of a result that has none, and the usual record's empty confirmation: read only, so a
#: write to it (a bug) fails that record (``audit_error``) instead of leaking into every later one
_NO_META: Any = MappingProxyType({})
_EXTRA_META_KEYS = frozenset(("error_code", "receipt", "shaped", "exception", "fix", "retries"))
_CONFIRMATION_KEYS = frozenset(CONFIRMATION_META_KEYS)


def build_call(c: Captured, redactor: Redactor, cap: int) -> dict[str, Any]:
    """The audit record of one invocation (success, error, denial, confirmation, fallback).

    Written for the writer's throughput: plain attribute reads on the core's
    ToolResult and Tool, and only fields that are set end up in the record.
    """
    f = _flat_of(c.ts, c.call, c.tool, c.result, c.trace_id, c.run_id, c.parent_run_id, c.agent,
                 c.idempotency_key, c.confirm, c.otel_ctx)
    return _call_record(iso(c.ts), f, redactor, cap, None)


def _flat_of(ts: float, call: Any, tool: Any, result: Any, trace_id: Any, run_id: Any, parent_run_id: Any,
             agent: Any, key: Any, confirm: Any, otel_ctx: Any) -> list[Any]:
    """A capture of any call and result objects as the call hook lays out the core's own
    (``FLAT_CALL``), with ``ok`` already ``False`` when an error is set and ``name`` the
    result's (else the call's): what the record reads of them, read in the order the
    record always read them (a broken object fails the record the same way)."""
    meta: Any
    elapsed: Any
    if type(result) is ToolResult:
        meta, error = result.meta, result.error
        ok = error is None and result.ok
        elapsed = result.elapsed_ms
        trace_id = trace_id or result.trace_id
    else:
        meta = getattr(result, "meta", None)
        error = getattr(result, "error", None)
        ok = error is None and getattr(result, "ok", True)
        elapsed = getattr(result, "elapsed_ms", None)
        trace_id = trace_id or getattr(result, "trace_id", None)
    call_id = _call_id_of(call, result)
    name = _name_of(call, None, result)
    args = _arguments_of(call)
    content = getattr(result, "content", None) if ok else None
    return [ts, call_id, name, args, tool, ok, content, error, meta, trace_id, run_id, parent_run_id, agent, key,
            confirm, elapsed, otel_ctx]


def _call_record(ts_text: str, f: list[Any] | tuple[Any, ...], redactor: Redactor, cap: int,
                 pre: list[Any] | None) -> dict[str, Any]:
    """The record of a call from its capture's ``FLAT_CALL`` values ``f`` (``ts_text`` is
    ``iso(ts)``); ``pre`` holds what :func:`build_rows` read and redacted for the whole batch."""
    ts, call_id, name, args, tool, ok, content, error, meta, trace_id, run_id, parent_run_id, agent, \
        idempotency_key, confirm, elapsed, _ = f
    meta = meta or _NO_META
    ok = error is None and ok
    record: dict[str, Any] = {"v": RECORD_VERSION, "kind": "call", "ts": ts_text}
    if elapsed:  # 0.0 means "not measured yet" (see the docs on durability = "sync")
        record["started"] = stamp(ts - elapsed / 1000.0)[0]
        record["elapsed_ms"] = _round(elapsed, 3) if type(elapsed) is float else round(elapsed, 3)
    if trace_id:
        record["trace_id"] = trace_id
    if run_id is not None:
        record["run_id"] = run_id
    if parent_run_id is not None:
        record["parent_run_id"] = parent_run_id
    if pre is None:
        if call_id is not None:
            record["call_id"] = redactor.text(call_id) if type(call_id) is str else call_id
    elif pre[_CALL_ID] is not None:
        record["call_id"] = pre[_CALL_ID]
    record["agent"] = agent or "default"
    if type(tool) is _TOOL[0]:  # the core's own: plain reads
        record["tool"] = tool.name or name
        record["plugin"] = tool.plugin
        record["risk"] = tool.risk
    else:
        name = getattr(tool, "name", None) or name
        # an unknown tool's name is whatever the model sent, a pasted secret included
        record["tool"] = redactor.text(name) if tool is None and type(name) is str else name
        if tool is not None:
            record["plugin"] = getattr(tool, "plugin", None)
            record["risk"] = getattr(tool, "risk", None)
    record["status"] = "ok" if ok else getattr(error, "code", "error")
    attempts = meta.get("attempts")
    if attempts is not None:
        record["attempts"] = attempts
    if meta.get("fallback"):
        record["fallback"] = True
    if idempotency_key is not None:
        record["idempotency_key"] = redactor.text(idempotency_key)
    if pre is not None:
        args = pre[_ARGS]
    learned: list[str] | None = None  # secrets the arguments hold: masked wherever else they show up
    if args is not None:
        if pre is None:
            learned = []
            record["args"] = summarise(args, redactor, cap, learned)
        elif type(args) in _PLAIN:
            record["args"] = args
        else:
            dumped = pre[_ARGS_DUMPED]
            if type(dumped) is bytes and len(dumped) <= cap:  # _summary's first answer: a clean dump that fits
                record["args"] = args
            else:
                learned = []
                record["args"] = _summary(args, redactor, cap, learned, dumped)
    if ok:
        if pre is not None:
            content = pre[_CONTENT]
        if content is not None:
            if pre is None:
                record["result"] = summarise(content, redactor, cap)
            elif type(content) in _PLAIN:
                record["result"] = content
            else:
                dumped = pre[_CONTENT_DUMPED]
                record["result"] = content if type(dumped) is bytes and len(dumped) <= cap else _summary(
                    content, redactor, cap, None, dumped, pre[_CONTENT_CLEAN])
    else:
        err: dict[str, Any] = {
            "code": getattr(error, "code", None),
            "message": summarise(getattr(error, "message", None), redactor, cap),
        }
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            err["retry_after"] = retry_after
        record["error"] = err
    more = len(meta) > 1 or (meta and attempts is None)  # more meta than the usual {"attempts": n}
    # (read only when neither adds to it: the usual record makes no dict for it)
    confirmation: dict[str, Any] = {} if more or confirm is not None else _NO_META
    if more:
        for key, value in meta.items():
            if value is None:
                continue
            if key in _CONFIRMATION_KEYS:
                confirmation[key] = value
            elif key in _EXTRA_META_KEYS:
                record[key] = summarise(value, redactor, cap)
    if confirm is not None:
        confirmation["required"] = True
        confirmation["approved"] = confirm[0]
        if confirm[1]:
            confirmation["reason"] = confirm[1]
    if confirmation:
        record["confirmation"] = summarise(confirmation, redactor, cap)
    if learned:  # "`password` must be a string; you sent 98765432", a result that echoes it
        for key in ("result", "error", "fix", "confirmation", "tool", "idempotency_key", "call_id"):
            if key in record:
                record[key] = redactor.scrub(record[key], learned)
    return record


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _tool_names(items: Any) -> list[str]:
    names: list[str] = []
    for item in items or ():
        if isinstance(item, str):
            names.append(item)
            continue
        name = _get(item, "name") or _get(_get(item, "function") or {}, "name")
        if name:
            names.append(str(name))
    return names


def usage_of(step: Any) -> dict[str, int]:
    """Token usage of a step, whatever shape the adapter gave it (OpenAI or Anthropic names)."""
    usage = _get(step, "usage") or {}
    prompt = _get(usage, "prompt_tokens", None)
    if prompt is None:
        prompt = _get(usage, "input_tokens", 0)
    completion = _get(usage, "completion_tokens", None)
    if completion is None:
        completion = _get(usage, "output_tokens", 0)
    total = _get(usage, "total_tokens", None)
    cached = _get(usage, "cached_tokens", 0)
    prompt, completion = int(prompt or 0), int(completion or 0)
    out = {
        "prompt": prompt,
        "completion": completion,
        "total": int(total) if total is not None else prompt + completion,
    }
    if cached:
        out["cached"] = int(cached)
    return out


def build_step(c: Captured, redactor: Redactor, cap: int) -> dict[str, Any]:
    """The audit record of one agent-loop step: tools offered, tools chosen, tokens spent."""
    step = c.step
    offered = _get(step, "tools_offered")
    if offered is None:
        offered = _get(step, "offered", _get(step, "tools"))
    model_ms = _get(step, "model_ms")
    tools_ms = _get(step, "tools_ms")
    record: dict[str, Any] = {
        "v": RECORD_VERSION,
        "kind": "step",
        "ts": iso(c.ts),
        "trace_id": c.trace_id,
        "run_id": c.run_id or _get(step, "run_id"),
        "parent_run_id": c.parent_run_id,
        "agent": c.agent or "default",
        "step": _get(step, "index", _get(step, "step")),
        "model": c.model,
        "offered": _tool_names(offered),
        "called": [redactor.text(n) for n in _tool_names(_get(step, "tool_calls"))],
        "tool_choice": _get(step, "tool_choice") if isinstance(_get(step, "tool_choice"), str) else None,
        "tokens": usage_of(step),
        "model_ms": round(float(model_ms), 3) if model_ms is not None else None,
        "tools_ms": round(float(tools_ms), 3) if tools_ms is not None else None,
    }
    return {k: v for k, v in record.items() if v is not None}


def build_confirmation(c: Captured, redactor: Redactor, cap: int) -> dict[str, Any]:
    """The audit record of a confirmation event: requested, approved, rejected, expired, executed."""
    event = c.step or {}
    record: dict[str, Any] = {
        "v": RECORD_VERSION,
        "kind": "confirmation",
        "ts": iso(c.ts),
        "trace_id": c.trace_id,
        "run_id": c.run_id or _get(event, "run_id"),
        "call_id": _get(event, "call_id") or c.call_id_hint,
        "agent": _get(event, "agent") or c.agent or "default",
        "tool": _get(event, "tool"),
        "status": _get(event, "kind"),
        "confirmation_id": _get(event, "confirmation_id"),
        "summary": summarise(_get(event, "summary"), redactor, cap),
        "by": _get(event, "by"),
        "reason": summarise(_get(event, "reason"), redactor, cap),
    }
    return {k: v for k, v in record.items() if v is not None}


_BUILDERS = {"call": build_call, "step": build_step, "confirmation": build_confirmation}


def _error_record(kind: str, ts_text: str, agent: Any, exc: Exception, redactor: Redactor) -> dict[str, Any]:
    return {
        "v": RECORD_VERSION,
        "kind": kind,
        "ts": ts_text,
        "agent": agent or "default",
        "status": "audit_error",
        "audit_error": f"{type(exc).__name__}: {redactor.text(str(exc))[:200]}",
    }


_new_row = object.__new__


def _row(record: dict[str, Any], exact: float) -> Row:
    return Row(
        record=record,
        canonical="",
        ts=exact,
        kind=record["kind"],
        agent=record.get("agent"),
        tool=record.get("tool"),
        status=record.get("status"),
        elapsed_ms=record.get("elapsed_ms"),
        run_id=record.get("run_id"),
        call_id=record.get("call_id"),
    )


def build_row(c: Captured, redactor: Redactor, cap: int) -> Row:
    """Build, serialise and index one record; never raises (a broken record is still recorded)."""
    try:
        record = _BUILDERS[c.kind](c, redactor, cap)
    except Exception as exc:
        record = _error_record(c.kind, iso(c.ts), c.agent, exc, redactor)
    return _row(record, exact_ts(c.ts))


# What build_rows reads of one call before redacting the batch's values together: a list
# (cheaper to make than an object), its slots named here.
_ARGS, _CONTENT, _CALL_ID, _ARGS_DUMPED, _CONTENT_DUMPED, _CONTENT_CLEAN = range(6)


def build_rows(pending: list[Any], redactor: Redactor, cap: int, start: int = 0, stop: int | None = None) -> list[Row]:
    """``build_row`` of each record in ``pending[start:stop]``, laid out as in the writer's
    pending list (a :class:`Captured`, a call hook's tuple, see :func:`captured_call`, or
    the ``FLAT_CALL`` values of one in a row, the first a ``float``), the same rows, with
    the redaction the call records share done for the whole batch: one
    :meth:`~reach_core.redact.Redactor.scan_many` of the arguments and results, one
    :meth:`~reach_core.redact.Redactor.texts` of the call ids and text results. The flat
    values are read where they lie: no object is made again to read them back. Steps and
    confirmations, and a call whose fields cannot be read, take :func:`build_row`."""
    if _TOOL[0] is None:
        from reach_core.tool import Tool

        _TOOL[0] = Tool
    end = len(pending) if stop is None else stop
    rows: list[Row | None] = []
    items: list[Any] = []  # each record's item, or a flat one's position in pending: for the fallbacks
    calls: list[tuple[int, list[Any], list[Any]]] = []
    to_scan: list[Any] = []
    scan_of: list[tuple[list[Any], int]] = []
    to_text: list[Any] = []  # strings (the type test above is not one mypy follows)
    text_of: list[tuple[list[Any], int]] = []
    i = start
    while i < end:
        item = pending[i]
        n = len(rows)
        rows.append(None)
        if type(item) is float:  # the call hook's values of the core's ToolCall and ToolResult
            f = pending[i : i + FLAT_CALL]
            items.append(i)
            i += FLAT_CALL
            if f[14] is not None:  # (approved, reason), as captured_call makes it
                f[14] = (bool(f[14][0]), f[14][1])
        else:
            items.append(item)
            i += 1
            try:
                if type(item) is tuple:
                    ts, call, tool, result, trace_id, run_id, parent_run_id, agent, key, confirm, otel = item
                    if confirm is not None:
                        confirm = (bool(confirm[0]), confirm[1])
                elif item.kind == "call":
                    ts, call, tool, result, trace_id, run_id, parent_run_id, agent, key, confirm, otel = (
                        item.ts, item.call, item.tool, item.result, item.trace_id, item.run_id, item.parent_run_id,
                        item.agent, item.idempotency_key, item.confirm, item.otel_ctx)
                else:
                    rows[n] = build_row(item, redactor, cap)
                    continue
                f = _flat_of(ts, call, tool, result, trace_id, run_id, parent_run_id, agent, key, confirm, otel)
            except Exception:  # build_row records what went wrong, as it always did
                rows[n] = build_row(_as_captured(item), redactor, cap)
                continue
        args, call_id = f[3], f[1]
        content = f[6] if f[7] is None and f[5] else None
        try:
            kind = type(args)
            if not (kind is dict or kind is list or kind in _PLAIN):
                args = _prepared(args)
                kind = type(args)
            ckind = type(content)
            if not (ckind is dict or ckind is list or ckind in _PLAIN):
                content = _prepared(content)
                ckind = type(content)
        except Exception:  # build_row records what went wrong, as it always did
            rows[n] = build_row(_captured_at(pending, items[n]), redactor, cap)
            continue
        pre = [args, content, call_id, _NOT_YET, _NOT_YET, _NOT_YET]
        if kind is not str and kind not in _PLAIN:  # (text arguments: _summary also collects their secrets)
            to_scan.append(args)
            scan_of.append((pre, _ARGS_DUMPED))
        if ckind is str:
            to_text.append(content)
            text_of.append((pre, _CONTENT_CLEAN))
        elif ckind not in _PLAIN:
            to_scan.append(content)
            scan_of.append((pre, _CONTENT_DUMPED))
        if type(call_id) is str:
            to_text.append(call_id)
            text_of.append((pre, _CALL_ID))
        calls.append((n, f, pre))
    try:
        for (pre, slot), dumped in zip(scan_of, redactor.scan_many(to_scan), strict=True):
            pre[slot] = dumped
        for (pre, slot), clean in zip(text_of, redactor.texts(to_text), strict=True):
            pre[slot] = clean
    except Exception:  # one value the shared pass cannot take: each record on its own
        return [row if row is not None else build_row(_captured_at(pending, item), redactor, cap)
                for row, item in zip(rows, items, strict=True)]
    for n, f, pre in calls:
        ts_text, exact = stamp(f[0])
        try:
            record = _call_record(ts_text, f, redactor, cap, pre)
        except Exception as exc:
            rows[n] = _row(_error_record("call", ts_text, f[12], exc, redactor), exact)
            continue
        # Row(record, "", exact, "call", agent, tool, status, elapsed_ms, run_id, call_id), its fields
        # stored here: the dataclass's __init__ (a Python call) cost ~1,000 more instructions per record
        row = _new_row(Row)
        row.record, row.canonical, row.ts, row.kind = record, "", exact, "call"
        row.agent, row.tool, row.status = record["agent"], record["tool"], record["status"]
        row.elapsed_ms, row.run_id, row.call_id = record.get("elapsed_ms"), record.get("run_id"), record.get("call_id")
        row.hash = row.seq = None
        rows[n] = row
    return rows  # type: ignore[return-value]


def _captured_at(pending: list[Any], item: Any) -> Captured:
    """The :class:`Captured` of a record of ``pending``: ``item``, or a flat one's position."""
    return captured_call(tuple(pending[item : item + FLAT_CALL])) if type(item) is int else _as_captured(item)


def captures(pending: list[Any]) -> list[Captured]:
    """Each record of ``pending`` (laid out as :func:`build_rows` reads it) as a :class:`Captured`."""
    out: list[Captured] = []
    i, end = 0, len(pending)
    while i < end:
        item = pending[i]
        if type(item) is float:
            out.append(captured_call(tuple(pending[i : i + FLAT_CALL])))
            i += FLAT_CALL
        else:
            out.append(_as_captured(item))
            i += 1
    return out


def _as_captured(item: Any) -> Captured:
    return item if isinstance(item, Captured) else captured_call(item)
