"""The writer's batch builder against the per-record builder it replaced, over generated calls.

``build_rows`` reads a batch's calls once and redacts their arguments, results and call
ids together (``Redactor.scan_many``/``texts``); ``chain.link`` hashes the encoder's bytes.
Neither may change a record, a column or a hash: the previous ``summarise``,
``build_call`` and ``build_row`` are kept here verbatim as the reference, and every
generated call (ok, error, denied, confirmed, fallback, unknown tool, text/JSON/bytes
arguments and results, secrets in every place, non-JSON values, broken objects) must
give the same row through both. (The redactor's own fast paths are checked against
its previous algorithm in the core's ``tests/test_redact_reference.py``.)
"""

from __future__ import annotations

import json
import random
from types import SimpleNamespace
from typing import Any

import pytest
from reach_audit.chain import canonical_json, link, link_hash
from reach_audit.record import (
    _CONFIRMATION_KEYS,
    _EXTRA_META_KEYS,
    FLAT_CALL,
    RECORD_VERSION,
    Captured,
    Row,
    _arguments_of,
    _call_id_of,
    _name_of,
    _rough_size,
    build_confirmation,
    build_rows,
    build_step,
    captured_call,
    exact_ts,
    iso,
)
from reach_audit.storage import chain

from reach_core import ToolCall, ToolError, ToolResult, connector
from reach_core.redact import Redactor
from reach_core.tool import Tool

# -- the previous per-record builder, verbatim -------------------------------------------


def summarise(value: Any, redactor: Redactor, cap: int, learned: list[str] | None = None) -> Any:
    """Redact, then cap the size: small values stay as they are, large ones become a preview.

    With ``learned``, the secrets found in ``value`` are added to it (only on the slow
    path: a value the fast scan passes holds none)."""
    kind = type(value)
    if value is None or kind is int or kind is float or kind is bool:
        return value
    if isinstance(value, str | bytes | bytearray):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else value
        parsed = None
        if text[:1] in ("{", "["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
        value = parsed if isinstance(parsed, dict | list) else text
    if type(value) is not str:
        dumped = redactor.scan(value)
        if dumped is not None:  # nothing to redact: measured by its dump, kept as is
            if len(dumped) <= cap:
                return value
            text = dumped.decode("utf-8", "replace")
            return {"truncated": True, "chars": len(text), "preview": text[:cap]}
    try:
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


def build_call(c: Captured, redactor: Redactor, cap: int) -> dict[str, Any]:
    """The audit record of one invocation (success, error, denial, confirmation, fallback).

    Written for the writer's throughput: plain attribute reads on the core's
    ToolResult and Tool, and only fields that are set end up in the record.
    """
    result, tool, call = c.result, c.tool, c.call
    meta = getattr(result, "meta", None) or {}
    error = getattr(result, "error", None)
    ok = error is None and getattr(result, "ok", True)
    elapsed = getattr(result, "elapsed_ms", None)
    record: dict[str, Any] = {"v": RECORD_VERSION, "kind": "call", "ts": iso(c.ts)}
    if elapsed:  # 0.0 means "not measured yet" (see the docs on durability = "sync")
        record["started"] = iso(c.ts - elapsed / 1000.0)
        record["elapsed_ms"] = round(elapsed, 3)
    trace_id = c.trace_id or getattr(result, "trace_id", None)
    if trace_id:
        record["trace_id"] = trace_id
    if c.run_id is not None:
        record["run_id"] = c.run_id
    if c.parent_run_id is not None:
        record["parent_run_id"] = c.parent_run_id
    call_id = _call_id_of(call, result)
    if call_id is not None:
        record["call_id"] = redactor.text(call_id) if type(call_id) is str else call_id
    record["agent"] = c.agent or "default"
    name = _name_of(call, tool, result)
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
    if c.idempotency_key is not None:
        record["idempotency_key"] = redactor.text(c.idempotency_key)
    args = _arguments_of(call)
    learned: list[str] = []  # secrets the arguments hold: masked wherever else they show up
    if args is not None:
        record["args"] = summarise(args, redactor, cap, learned)
    if ok:
        content = getattr(result, "content", None)
        if content is not None:
            record["result"] = summarise(content, redactor, cap)
    else:
        err: dict[str, Any] = {
            "code": getattr(error, "code", None),
            "message": summarise(getattr(error, "message", None), redactor, cap),
        }
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            err["retry_after"] = retry_after
        record["error"] = err
    confirmation: dict[str, Any] = {}
    if len(meta) > 1 or (meta and attempts is None):  # more than the usual {"attempts": n}
        for key, value in meta.items():
            if value is None:
                continue
            if key in _CONFIRMATION_KEYS:
                confirmation[key] = value
            elif key in _EXTRA_META_KEYS:
                record[key] = summarise(value, redactor, cap)
    if c.confirm is not None:
        confirmation["required"] = True
        confirmation["approved"] = c.confirm[0]
        if c.confirm[1]:
            confirmation["reason"] = c.confirm[1]
    if confirmation:
        record["confirmation"] = summarise(confirmation, redactor, cap)
    if learned:  # "`password` must be a string; you sent 98765432", a result that echoes it
        for key in ("result", "error", "fix", "confirmation", "tool", "idempotency_key", "call_id"):
            if key in record:
                record[key] = redactor.scrub(record[key], learned)
    return record


_BUILDERS = {"call": build_call, "step": build_step, "confirmation": build_confirmation}


def build_row(c: Captured, redactor: Redactor, cap: int) -> Row:
    """Build, serialise and index one record; never raises (a broken record is still recorded)."""
    try:
        record = _BUILDERS[c.kind](c, redactor, cap)
    except Exception as exc:
        record = {
            "v": RECORD_VERSION,
            "kind": c.kind,
            "ts": iso(c.ts),
            "agent": c.agent or "default",
            "status": "audit_error",
            "audit_error": f"{type(exc).__name__}: {redactor.text(str(exc))[:200]}",
        }
    return Row(
        record=record,
        canonical="",
        ts=exact_ts(c.ts),
        kind=record["kind"],
        agent=record.get("agent"),
        tool=record.get("tool"),
        status=record.get("status"),
        elapsed_ms=record.get("elapsed_ms"),
        run_id=record.get("run_id"),
        call_id=record.get("call_id"),
    )


# -- generated calls ----------------------------------------------------------------------

SECRET = "Zq7x9Sekr3tVal"
TEXTS = [
    "Paris", "c1", "call_8f3a", "", " ", "ok", "the weather in Paris is sunny", "my password is " + SECRET,
    "Authorization: Bearer " + SECRET, "postgres://app:" + SECRET + "@db/x", "AKIAIOSFODNN7EXAMPLE", "PIN 1234",
    "`password` must be a string; you sent 98765432", "hello " + SECRET, "spinner", "max_tokens=100",
    "{not json", "[1, 2", '{"token": "' + SECRET + '"}', '[{"a": 1}]', '{"a": 1, "b": 2}', "  {\"pw\": 1}",
    "x" * 700, "Paris " * 150, "пароль: " + SECRET, "密码是" + SECRET, "ｐａｓｓｗｏｒｄ=" + SECRET, "Zq7x\\n9",
]
KEYS = ["a", "b", "city", "query", "limit", "password", "api_key", "token", "max_tokens", "name", "value",
        "db_pass", "Authorization", "author", "id", "note"]


class Unjsonable:
    def __str__(self) -> str:
        return "an object with password=" + SECRET


class Broken:
    """A call whose arguments cannot be read."""

    name = "broken"

    @property
    def arguments(self) -> Any:
        raise RuntimeError("no arguments here, password=" + SECRET)


def _value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth > 2 or pick < 0.35:
        return rng.choice([*TEXTS, 3, 98765432, 1.5, True, None, 2**70])
    if pick < 0.7:
        return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if pick < 0.8:
        return [rng.choice(KEYS), _value(rng, depth + 1)]
    if pick < 0.85:
        return json.dumps(_value(rng, depth + 1), default=str)
    if pick < 0.88:
        return rng.choice([b'{"a": 1}', b"raw bytes", bytearray(b"password=" + SECRET.encode()), Unjsonable()])
    if pick < 0.9:
        return {"big": "Paris " * rng.randint(50, 300)}
    return [_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def _typical(rng: random.Random) -> Any:
    return rng.choice([{"a": rng.randint(0, 9), "b": 2}, {"city": "Paris"}, {"query": "weather", "limit": 5}, "{}"])


@connector(risk="read")
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


_TOOL = Tool.build(add, plugin="user")
_TOOL_UNNAMED = Tool.build(add, plugin="user")
_TOOL_UNNAMED.name = ""  # the record falls back to the result's name, then the call's


def _capture(rng: random.Random, n: int, typical: float) -> tuple[Any, ...]:
    ts = 1_790_000_000 + n * 0.000731 + rng.choice([0.0, 0.9999996, 0.4999995])
    plain = rng.random() < typical
    args = _typical(rng) if plain else _value(rng)
    cid = rng.choice(["c1", f"call_{n}", "", None, "token=" + SECRET, 42]) if not plain else f"call_{n}"
    # the core's own Tool (build_rows reads its fields directly) or a stand-in (read with getattr)
    tool = rng.choice([_TOOL, _TOOL_UNNAMED, SimpleNamespace(name="add", plugin="user", risk="read")]) if (
        plain or rng.random() < 0.7) else None
    name = rng.choice(["add", "get_weather", "my password is " + SECRET, ""])
    shape = 0 if plain else rng.randint(0, 3)
    if shape == 0:
        call: Any = ToolCall(name, args, id=cid if isinstance(cid, str) else "")
        if rng.random() < 0.1:
            call.id = ""  # set after construction (the constructor would make one up)
    elif shape == 1:
        call = {"id": cid, "name": name, "arguments": args}
    elif shape == 2:
        call = {"id": cid, "function": {"name": name, "arguments": args}}
    else:
        call = rng.choice([Broken(), None, SimpleNamespace(function=SimpleNamespace(name=name, arguments=args))])
    ok = plain or rng.random() < 0.6
    meta: dict[str, Any] = {"attempts": 1} if plain else rng.choice([
        {}, {"attempts": 2}, {"attempts": 1, "fallback": True}, {"receipt": {"id": "r1", "token": SECRET}},
        {"confirmation_id": "cf1", "confirmed_by": "ann", "decision": "approved"}, {"fix": "send pw " + SECRET},
        {"shaped": True, "exception": "ValueError: password=" + SECRET, "retries": None}])
    error = None if ok else ToolError(rng.choice(["invalid_arguments", "denied", "timeout"]),
                                      rng.choice(TEXTS), rng.choice([None, 1.5]))
    content = (rng.randint(0, 9) if rng.random() < 0.5 else {"temp": 21, "city": "Paris"}) if plain else _value(rng)
    result: Any = ToolResult(
        # the result's call id and name may differ from the call's (its own win); a failed result
        # may still hold content, and say ok with an error set (neither is recorded as a result)
        call_id=rng.choice([cid if isinstance(cid, str) else "", "", "r9"]), name=rng.choice([name, name, "", "sum"]),
        ok=ok or rng.random() < 0.1, content=content if ok else rng.choice([None, "left over"]), error=error,
        elapsed_ms=rng.choice([0.0, 16.991358002997003, 0.0004, 1234.5]), trace_id=rng.choice(["", "t1"]), meta=meta,
    )
    if not plain and rng.random() < 0.1:
        result = SimpleNamespace(ok=True, content=content, name=name)  # not the core's ToolResult
    confirm = None if plain or rng.random() < 0.7 else (rng.choice([True, False, 1, 0]), rng.choice([None, "", "ok"]))
    return (ts, call, tool, result, rng.choice(["t0", None]), rng.choice([None, "run1"]), None,
            rng.choice(["default", "bot", None]), rng.choice([None, "idem-" + SECRET, "k1"]), confirm, None)


def _flat(raw: tuple[Any, ...]) -> tuple[Any, ...]:
    """The call hook's capture of the core's own ``ToolCall`` and ``ToolResult``: their fields in place of them."""
    ts, call, tool, result, trace_id, *rest = raw
    return (ts, result.call_id or call.id, result.name or call.name, call.arguments, tool, result.ok, result.content,
            result.error, result.meta, trace_id or result.trace_id, *rest[:-1], result.elapsed_ms, rest[-1])


def _rows_equal(new: Row, old: Row) -> None:
    assert new.record == old.record
    assert json.dumps(new.record, sort_keys=True, default=repr) == json.dumps(old.record, sort_keys=True, default=repr)
    for f in ("ts", "kind", "agent", "tool", "status", "elapsed_ms", "run_id", "call_id", "canonical", "hash", "seq"):
        assert getattr(new, f) == getattr(old, f), f
    assert type(new) is Row and new == old  # every field set (build_rows stores them without Row's __init__)


@pytest.mark.parametrize("typical", [1.0, 0.9, 0.3, 0.0])
@pytest.mark.parametrize("redactor", ["default", "extra"])
def test_build_rows_equals_build_row_one_by_one(typical: float, redactor: str) -> None:
    rng = random.Random(f"{typical}-{redactor}")

    def make() -> Redactor:
        if redactor == "default":
            return Redactor()
        return Redactor(extra_keys=["city"], extra_patterns=[r"Pa(?P<secret>ris)"])

    new_r, old_r = make(), make()
    for batch_no in range(12):
        batch: list[Any] = [_capture(rng, batch_no * 100 + i, typical) for i in range(rng.choice([1, 5, 64]))]
        if rng.random() < 0.3:  # steps and confirmations in between
            batch.insert(0, Captured("step", 1.0, None, "r", None, "a", None, step={"index": 1, "tool_calls": []}))
            batch.append(Captured("confirmation", 2.0, "t", None, None, None, None,
                                  step={"kind": "approved", "tool": "x", "reason": "pw " + SECRET}))
        if rng.random() < 0.3:  # a Captured call, as flush_sync and tests hand them over
            batch.append(captured_call(_capture(rng, 99, typical)))
        # the hook captures a ToolCall's and a ToolResult's fields, not the objects: each record must
        # come out the same as from the objects themselves (the reference below builds from the originals)
        flat = [_flat(i) if type(i) is tuple and type(i[1]) is ToolCall and type(i[3]) is ToolResult
                and rng.random() < 0.6 else i for i in batch]
        if rng.random() < 0.3:  # flattened captures expanded, as flush_sync's on_written gets them
            flat = [captured_call(i) if type(i) is tuple and len(i) == FLAT_CALL else i for i in flat]
        pending: list[Any] = []  # laid out as in the writer's pending list: a flat capture's values in a row
        for i in flat:
            pending += i if type(i) is tuple and len(i) == FLAT_CALL else (i,)
        new = build_rows(pending, new_r, 64 if batch_no % 3 == 0 else 512)
        # the writer builds a batch a slice at a time (at record boundaries): the same rows
        starts = [0]
        while starts[-1] < len(pending):
            starts.append(starts[-1] + (FLAT_CALL if type(pending[starts[-1]]) is float else 1))
        cut = starts[rng.randrange(len(starts))]
        parts = build_rows(pending, make(), 64 if batch_no % 3 == 0 else 512, 0, cut) + build_rows(
            pending, make(), 64 if batch_no % 3 == 0 else 512, cut)
        assert [r.record for r in parts] == [r.record for r in new]
        old = [build_row(i if isinstance(i, Captured) else captured_call(i), old_r, 64 if batch_no % 3 == 0 else 512)
               for i in batch]
        assert len(new) == len(old)
        for a, b in zip(new, old, strict=True):
            _rows_equal(a, b)
        prev = "0" * 64
        for a, b in zip(chain(new, prev, 0), chain(old, prev, 0), strict=True):
            assert a == b
        for row in new:
            assert row.hash == link_hash(prev, row.canonical) and row.canonical == canonical_json(row.record)
            prev = row.hash


@pytest.mark.parametrize("seed", range(3))
def test_summarise_is_unchanged(seed: int) -> None:
    from reach_audit.record import summarise as new_summarise

    rng = random.Random(seed)
    r = Redactor()
    for _ in range(600):
        value = _value(rng)
        cap = rng.choice([16, 64, 512])
        learned_new: list[str] = []
        learned_old: list[str] = []
        assert new_summarise(value, r, cap, learned_new) == summarise(value, r, cap, learned_old), value
        assert learned_new == learned_old


def test_link_equals_canonical_json_and_link_hash() -> None:
    for record in ({"v": 1, "b": [1, "é", {"z": None}], "a": 2.5}, {"n": 2**70}, {}):
        canonical, digest = link("f" * 64, record)
        assert canonical == canonical_json(record)
        assert digest == link_hash("f" * 64, canonical)


# -- timestamps: stamp/iso written out, against the previous helper ----------------------------


def _old_micros(ts: float) -> tuple[int, int]:
    whole = int(ts)
    micros = round((ts - whole) * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    return whole, micros


def _old_stamp(ts: float) -> tuple[str, float]:
    from datetime import UTC, datetime

    whole, micros = _old_micros(ts)
    text = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{micros:06d}Z", whole + micros / 1_000_000


@pytest.mark.parametrize("base", [-86_400.0, -2.0, -1.0, 0.0, 1.0, 59.0, 1_790_000_000.0, 1_790_000_059.0,
                                  4_102_444_799.0])
@pytest.mark.parametrize("frac", [0.0, 1e-7, 4.9e-7, 5e-7, 5.1e-7, 0.4999995, 0.5, 0.9999994, 0.9999995,
                                  0.9999996, 0.99999999, 0.123456789])
def test_stamp_and_iso_equal_the_previous_helper(base: float, frac: float) -> None:
    from reach_audit.record import stamp

    ts = base + frac
    for _ in range(2):  # a cold and a warm second cache
        assert stamp(ts) == _old_stamp(ts)
        assert iso(ts) == _old_stamp(ts)[0]
        assert exact_ts(ts) == _old_stamp(ts)[1]


def test_stamp_and_iso_over_generated_times_with_the_cache_switching_seconds() -> None:
    from reach_audit.record import stamp

    rng = random.Random(7)
    for _ in range(3000):
        ts = rng.choice([1_790_000_000, 1_790_000_001, 1_700_000_000]) + rng.choice(
            [rng.random(), 0.9999995 + rng.random() * 1e-6, rng.random() * 1e-6])
        assert stamp(ts) == _old_stamp(ts)
        assert iso(ts) == _old_stamp(ts)[0]


class _Seconds(float):
    """A float subclass (a host's own clock type): stamped through the builtins, as before."""


@pytest.mark.parametrize("ts", [0, 1, -1, -86_401, 1_790_000_000, 4_102_444_799, True,
                                _Seconds(1_790_000_000.9999995), _Seconds(-0.25), -0.0, 0.0, 2.0 ** 31 + 0.5])
def test_stamp_of_ints_and_float_subclasses_equals_the_previous_helper(ts: float) -> None:
    from reach_audit.record import stamp

    for _ in range(2):
        text, exact = stamp(ts)
        old_text, old_exact = _old_stamp(ts)
        assert (text, repr(exact), type(exact)) == (old_text, repr(old_exact), type(old_exact))
