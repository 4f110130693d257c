"""A call whose arguments, call id, tool name or agent hold a lone UTF-16 surrogate (a
framework that parses the model's JSON itself, LangChain or the Python API, hands
reach such a ``str``) is refused by reach, and its record is still written, with the
surrogate kept as its ``\\uXXXX`` escape. Before, the record could not be encoded as
UTF-8: the writer kept retrying the batch, and every later record of the process
stayed unwritten behind it (an attacker's one call ended the audit log)."""

from __future__ import annotations

import json

import pytest
import reach_audit

LONE = [
    {"a": "1\ud800", "b": 2},                 # a high surrogate in a value
    {"a": "\udfff", "b": 2},                  # a low one
    {"a": "\ud83d\ude00", "b": 2},            # a pair spelt as two code points
    {"a\ud800": 1, "b": 2},                   # in a key
    {"a": ["x", {"y": "\udc00"}], "b": 2},    # nested
    {"a": "x" * 5000 + "\ud800", "b": 2},     # past the summary cap
]


@pytest.fixture
def records(db_rows):
    return lambda: [json.loads(r[1]) for r in db_rows()]


@pytest.mark.parametrize("arguments", LONE)
async def test_a_lone_surrogate_in_arguments_does_not_stop_the_audit_log(make_reach, records, arguments):
    reach = make_reach()
    bad = await reach.invoke({"id": "c1", "name": "add", "arguments": arguments})
    good = await reach.invoke({"id": "c2", "name": "add", "arguments": {"a": 2, "b": 3}})
    assert not bad.ok and good.ok
    await reach_audit.flush(reach)
    got = records()
    assert [r["call_id"] for r in got] == ["c1", "c2"]
    assert got[0]["status"] == "invalid_arguments" and got[1]["status"] == "ok"
    assert "\\ud" in json.dumps(got[0]["args"]).lower() or got[0]["args"].get("truncated")
    report = await reach_audit.verify(reach)  # the escaped record and its columns agree
    assert report.ok and report.checked == 2


@pytest.mark.parametrize("field", ["id", "name"])
@pytest.mark.parametrize("text", ["c\ud800", "\udfff", "add\ud83d\ude00"])
async def test_a_lone_surrogate_in_the_call_id_or_tool_name_is_recorded(make_reach, records, field, text):
    reach = make_reach()
    call = {"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}
    call[field] = text
    await reach.invoke(call)
    await reach.invoke({"id": "c2", "name": "add", "arguments": {"a": 2, "b": 3}})
    await reach_audit.flush(reach)
    got = records()
    assert len(got) == 2 and got[1]["call_id"] == "c2"


async def test_a_lone_surrogate_in_the_agent_name_is_recorded(make_reach, records):
    reach = make_reach()
    await reach.invoke({"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}, agent="x\ud800")
    await reach.invoke({"id": "c2", "name": "add", "arguments": {"a": 2, "b": 3}})
    await reach_audit.flush(reach)
    assert [r["call_id"] for r in records()] == ["c1", "c2"]
