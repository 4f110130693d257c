"""Hostile model replies through the real adapter (a scripted server on 127.0.0.1):
tool names not offered or spelt like an offered one, duplicated call ids, arguments
that are not a JSON object, huge or deeply nested arguments. Nothing runs that the
run did not offer, each call runs at most once, and every refusal is a short error
the model can read."""

from __future__ import annotations

from typing import Any

import pytest
from reach_openai.scripted import Answer, Call, ToolCalls

from reach_core import connector

WRITES: list[dict[str, Any]] = []


@connector(risk="write", name="save")
def save(text: str) -> dict:
    """Save a text (a write: counted by the test).

    Args:
        text: what to save
    """
    WRITES.append({"text": text})
    return {"saved": text}


@pytest.fixture
def reach(make_reach, scripted):
    WRITES.clear()

    def make(script):
        server = scripted(script)
        r = make_reach(server.url)
        r.register(save)
        return r, server

    return make


def tool_replies(server) -> list[str]:
    last = server.requests[-1]["messages"]
    return [m["content"] for m in last if m.get("role") == "tool"]


@pytest.mark.parametrize("name", [
    "save",            # a real tool, but not offered in this run
    # case, spaces, zero-width, full-width, Cyrillic
    "Save", "SAVE", "save ", " save", "save\u200b", "ｓａｖｅ", "sаve",
    "functions.save", "save()", "", "add\x00save", "../save",
])
async def test_a_tool_not_offered_never_runs(reach, name):
    r, server = reach([ToolCalls([Call(name, {"text": "x"}, id="c1")]), Answer("ok")])
    await r.run("hi", tools=["add"])
    assert WRITES == []
    [reply] = tool_replies(server)
    assert '"error"' in reply and len(reply) < 2000
    await r.aclose()


@pytest.mark.parametrize("ids", [("c1", "c1"), ("", ""), ("c1", "c1", "c1"), ("x" * 5000, "x" * 5000)])
async def test_duplicated_call_ids_in_one_reply_each_run_once(reach, ids):
    calls = [Call("save", {"text": f"t{i}"}, id=cid) for i, cid in enumerate(ids)]
    r, server = reach([ToolCalls(calls), Answer("ok")])
    await r.run("hi")
    assert sorted(w["text"] for w in WRITES) == sorted(f"t{i}" for i in range(len(ids)))
    assert len(tool_replies(server)) == len(ids)
    await r.aclose()


@pytest.mark.parametrize("raw", [
    '"{\\"text\\": \\"x\\"}"',      # a JSON string holding JSON
    '["x"]', "1", "null", "true", '{"text": "x"', "{'text': 'x'}", '{"text": "x"}{"text": "y"}',
    '{"text": ' * 3000 + '"x"' + "}" * 3000,
    '{"text": "' + "y" * 3_000_000 + '"}',
    '{"text": "x", "text": "overwrite"}',
    '{"text": NaN}', '{"text": "\\ud800"}',
])
async def test_arguments_that_are_not_one_object_are_refused_before_running(reach, raw):
    r, server = reach([ToolCalls([Call("save", raw, id="c1")]), Answer("ok")])
    await r.run("hi")
    [reply] = tool_replies(server)
    if WRITES:  # only an object with a string text can have run
        assert raw == '{"text": "x", "text": "overwrite"}' and len(WRITES) == 1
    else:
        assert '"error"' in reply
    assert len(reply) < 4000, f"{len(reply)} characters echoed to the model"
    await r.aclose()
