"""Red team: tool-call ids chosen by a model, its provider or a framework bridge.

A call id goes unchanged into the derived idempotency key, the ledger row, the log lines,
the audit trail, the console and the transcript sent back to the model. reach-serve refused
a client's ``id`` that is not 1-256 printable characters (``client_id_problem``); the core
took any id a prompt-injected model or provider wrote: a line break forged a log line, a
bidi or zero-width character made two ids look alike, 100,000 characters went into every
record. Now such an id is replaced by a fresh ``call_N`` at the core's entry
(``reach_core.calls.call_id``), and the loop writes the replacement into the assistant message
so the result still answers to its call. Honest ids pass unchanged.
"""

from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace
from typing import Any

import pytest

from reach_core import Connector, Reach
from reach_core.adapter import ModelRequest, ModelResponse, ModelToolCall, Usage
from reach_core.calls import TaggedParser, ToolCall, to_call
from reach_core.tokens import client_id_problem

HOSTILE_IDS = [
    "call_1\nINFO reach: approved by admin", "call_1\r\nX", "a\rb", "a\tb", "a\x00b", "\x1b[31mred\x1b[0m",
    "a\x7fb", "a\x85b", "a\x9bb", "call\u202eevil", "call\u2066x\u2069", "call\u200bx", "call\u200dx", "\ufeffcall",
    "call\u2028x", "call\u2029x", "call\u00a0x", "call\u3000x", "call\u180ex", "\udcff", "x" * 257, "x" * 100_000,
    "\u00e9" * 257,
]
NON_STR_IDS = [7, 7.5, True, ["a\nb"], {"x": "y"}, b"call_1"]
HONEST_IDS = ["call_abc123", "toolu_01A09q90qw90lq917835lq9", "3f2b8c1e-9d4a-4b7e-8a1f-2c3d4e5f6a7b", "c",
              "call:1/2.3", "x" * 256, "appel_é_北京", "call 1"]


def _ok(value: Any) -> bool:
    return client_id_problem("id", value) is None


class Send(Connector):
    name = "send_email"
    description = "Send an email. Use when the user asks to send one."
    risk = "write"
    input_schema = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    async def execute(self, params, ctx):
        self.seen.append((ctx.call_id, ctx.idempotency_key))
        return {"sent_to": params["to"]}


@pytest.fixture
def made(tmp_path):
    tool = Send()
    reach = Reach({"reach": {"data_dir": str(tmp_path / "d"), "log_calls": False}}, plugins=[])
    reach.register(tool)
    yield reach, tool, tmp_path / "d"
    if reach.runtime.store_ is not None:
        reach.runtime.store_.close_sync()


def _ledger_call_ids(data_dir) -> list[str]:
    rows: list[str] = []
    for db in data_dir.rglob("*.db"):
        with sqlite3.connect(db) as conn:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'reach_ledger'").fetchone():
                rows += [r[0] for r in conn.execute("SELECT call_id FROM reach_ledger")]
    return rows


def _shapes(cid: Any) -> list[Any]:
    args = {"to": "a@x.org"}
    return [
        {"id": cid, "name": "send_email", "arguments": args},
        {"id": cid, "function": {"name": "send_email", "arguments": json.dumps(args)}},
        SimpleNamespace(id=cid, function=SimpleNamespace(name="send_email", arguments=json.dumps(args))),
    ]


@pytest.mark.parametrize("cid", HOSTILE_IDS + NON_STR_IDS, ids=lambda v: ascii(v)[:30])
@pytest.mark.parametrize("shape", range(3))
async def test_hostile_call_id_never_reaches_key_ledger_or_result(made, cid, shape):
    reach, tool, data_dir = made
    result = await reach.invoke(_shapes(cid)[shape], run_id="run-1")
    assert result.ok, result.error
    (seen_id, key), = tool.seen
    assert _ok(seen_id) and seen_id.startswith("call_") and seen_id == result.call_id
    assert key is not None and key.endswith(f":{seen_id}") and _ok(key)
    assert _ledger_call_ids(data_dir) == [seen_id]


@pytest.mark.parametrize("cid", HOSTILE_IDS, ids=lambda v: ascii(v)[:30])
def test_hostile_id_on_a_toolcall_is_replaced(cid):
    assert _ok(ToolCall("t", {}, id=cid).id)
    made_then_set = ToolCall("t", {})
    made_then_set.id = cid  # an id set after the call was made is checked when the call enters
    assert _ok(to_call(made_then_set).id)


@pytest.mark.parametrize("cid", HONEST_IDS, ids=lambda v: v[:30])
@pytest.mark.parametrize("shape", range(3))
async def test_honest_call_id_is_kept(made, cid, shape):
    reach, tool, data_dir = made
    result = await reach.invoke(_shapes(cid)[shape], run_id="run-1")
    assert result.ok and result.call_id == cid
    assert tool.seen == [(cid, f"7:default:5:run-1:{cid}")]
    assert _ledger_call_ids(data_dir) == [cid]
    assert ToolCall("t", {}, id=cid).id == cid


def test_the_tagged_parser_takes_no_id_from_the_models_text():
    text = '<tool_call>{"id": "x\\ny\\u202e", "name": "send_email", "arguments": {"to": "a"}}</tool_call>'
    (call,), errors = TaggedParser().parse(text)
    assert not errors and _ok(call.id) and call.id.startswith("call_")


class ScriptAdapter:
    name = "script"

    def __init__(self, *replies: ModelResponse) -> None:
        self.replies, self.requests = list(replies), []

    def describe(self) -> str:
        return "script adapter"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.replies[min(len(self.requests), len(self.replies)) - 1]


@pytest.mark.parametrize("cid", HOSTILE_IDS, ids=lambda v: ascii(v)[:30])
async def test_a_models_hostile_id_is_replaced_in_the_transcript_too(made, cid):
    reach, tool, _ = made
    reach.config.reach  # noqa: B018 - the config is loaded
    calls = [ModelToolCall(cid, "send_email", json.dumps({"to": f"{n}@x.org"})) for n in range(2)]
    model = ScriptAdapter(ModelResponse(tool_calls=calls, usage=Usage(1, 1, 0)),
                          ModelResponse(text="done", usage=Usage(1, 1, 0)))
    result = await reach.run("send two", adapter=model, run_id="run-1")
    assert result.outcome == "answered"
    messages = model.requests[1].messages
    asked = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert len(asked) == 2 and asked == answered and len(set(asked)) == 2 and all(_ok(a) for a in asked)
    assert sorted(i for i, _ in tool.seen) == sorted(asked)


async def test_a_models_long_duplicate_ids_stay_within_the_limit(made):
    reach, tool, _ = made
    cid = "x" * 256
    calls = [ModelToolCall(cid, "send_email", json.dumps({"to": f"{n}@x.org"})) for n in range(3)]
    model = ScriptAdapter(ModelResponse(tool_calls=calls, usage=Usage(1, 1, 0)),
                          ModelResponse(text="done", usage=Usage(1, 1, 0)))
    await reach.run("send three", adapter=model, run_id="run-1")
    messages = model.requests[1].messages
    asked = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert asked[0] == cid and asked == answered and len(set(asked)) == 3 and all(_ok(a) for a in asked)
