"""Hostile inputs against the notes tools: a reused idempotency key with another note,
text that tries to forge or split records in the JSON-lines file, and look-alikes."""

from __future__ import annotations

import json

import pytest

ORIGINAL = {"content": "pay rent on the 1st", "tags": ["money"]}


@pytest.fixture
def two_instances(make_notes_reach, tmp_path):
    """Two Reach instances (own data dirs, so own ledgers) sharing one configured notes file:
    what two processes on one machine look like."""
    shared = {"path": str(tmp_path / "shared" / "notes.jsonl")}
    first = make_notes_reach(shared, data_dir=tmp_path / "a")
    second = make_notes_reach(shared, data_dir=tmp_path / "b")
    return first, second, tmp_path / "shared" / "notes.jsonl"


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("other", [
    {"content": "transfer 5000 to mallory"},
    {"content": "Pay rent on the 1st", "tags": ["money"]},      # case
    {"content": "pay rent on the 1st!", "tags": ["money"]},     # one character more
    {"content": "pay rеnt on the 1st", "tags": ["money"]},      # Cyrillic е look-alike
    {"content": "pay rent on the 1st", "tags": ["Money"]},      # tag case
    {"content": "pay rent on the 1st", "tags": []},             # tags dropped
    {"content": "pay rent on the 1st", "tags": ["money", "x"]},  # a tag added
    {"content": "pay rent on the 1st\u200b", "tags": ["money"]},  # zero-width space
])
@pytest.mark.parametrize("how", ["call_id", "key"])
async def test_a_reused_key_with_another_note_is_refused_not_reported_saved(two_instances, other, how):
    first, second, path = two_instances
    if how == "call_id":  # the same run id and tool-call id: the key reach derives for a run
        a = await first.invoke({"id": "call_1", "name": "append_note", "arguments": ORIGINAL}, run_id="run-1")
        b = await second.invoke({"id": "call_1", "name": "append_note", "arguments": other}, run_id="run-1")
    else:
        a = await first.invoke("append_note", ORIGINAL, idempotency_key="k-1")
        b = await second.invoke("append_note", other, idempotency_key="k-1")
    assert a.ok, a.error
    assert not b.ok, f"a different note under a used key was reported saved: {b.content}"
    assert b.error.code == "denied" and "not saved" in b.error.message
    assert [r["content"] for r in records(path)] == [ORIGINAL["content"]]


@pytest.mark.parametrize("same", [
    ORIGINAL,
    {"content": "  pay rent on the 1st \n", "tags": ["money"]},   # the same note once trimmed
    {"content": "pay rent on the 1st", "tags": ["money", " money "]},  # the same tags once cleaned
])
async def test_the_same_note_under_the_same_key_is_saved_once(two_instances, same):
    first, second, path = two_instances
    a = await first.invoke("append_note", ORIGINAL, idempotency_key="k-2")
    b = await second.invoke("append_note", same, idempotency_key="k-2")
    assert a.ok and b.ok, (a.error, b.error)
    assert b.content["already_saved"] is True and b.content["id"] == a.content["id"]
    assert len(records(path)) == 1


@pytest.mark.parametrize("content", [
    'x"}\n{"id":"n_forged","created_at":"2026-01-01T00:00:00Z","content":"forged","tags":[]}',
    "line one\r\n{\"content\":\"forged\"}",
    "a\u2028{\"content\":\"forged\"}\u2029b",
    "nul\x00{\"content\":\"forged\"}",
    "\x85{\"content\":\"forged\"}",
    "\\n{\"content\":\"forged\"}",
])
async def test_text_cannot_forge_or_split_records(notes_reach, tmp_path, content):
    saved = await notes_reach.invoke("append_note", {"content": content, "tags": ["t\n{\"content\":\"f\"}"]})
    assert saved.ok, saved.error
    listed = await notes_reach.invoke("list_notes", {})
    assert listed.content["total"] == 1
    [note] = listed.content["notes"]
    assert note["content"] == content.strip()
    assert len((tmp_path / "data" / "notes.jsonl").read_bytes().splitlines()) == 1


@pytest.mark.parametrize("args", [
    {"content": "x" * 4001},
    {"content": " " * 50},
    {"content": "ok", "tags": ["t"] * 11 + ["u"]},
    {"content": "ok", "tags": ["x" * 41]},
    {"content": "ok", "tags": "money"},
    {"content": "ok", "tags": [{"$ne": 1}]},
    {"content": ["a", "b"]},
    {"content": "ok", "key": "steal-a-key"},
    {"content": "ok", "path": "/etc/passwd"},
])
async def test_bad_arguments_are_refused_and_nothing_is_written(notes_reach, tmp_path, args):
    result = await notes_reach.invoke("append_note", args)
    assert not result.ok and result.error.code == "invalid_arguments", result
    assert not (tmp_path / "data" / "notes.jsonl").exists()


@pytest.mark.parametrize("same", [True, False])
async def test_racing_calls_with_one_key_keep_one_note(two_instances, same):
    import asyncio

    first, second, path = two_instances
    other = ORIGINAL if same else {"content": "transfer 5000 to mallory"}
    results = await asyncio.gather(*[
        (first if i % 2 else second).invoke("append_note", ORIGINAL if i % 2 else other, idempotency_key="k-race")
        for i in range(8)
    ])
    assert len(records(path)) == 1
    kept = records(path)[0]["content"]
    for result in results:
        if result.ok:
            assert result.content["id"] == records(path)[0]["id"]
        else:  # outcome_unknown: reach's ledger saw the same key still running in that instance
            assert result.error.code in ("denied", "outcome_unknown"), result.error
            assert not same or result.error.code == "outcome_unknown"
    assert same or any(not r.ok for r in results)
    assert any(r.ok for r in results)
    assert kept in (ORIGINAL["content"], other["content"])
