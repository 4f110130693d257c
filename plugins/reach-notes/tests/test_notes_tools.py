"""append_note, list_notes and search_notes through a real Reach and a real file."""

from __future__ import annotations

import json
from datetime import UTC, datetime


def read_lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_append_writes_one_json_line_in_the_data_dir(notes_reach, tmp_path):
    result = await notes_reach.invoke(
        "append_note", {"content": "周六早上 7 点跑 5 公里", "tags": ["running", "plan"]}
    )
    assert result.ok, result.error
    assert result.content["saved"] is True
    assert result.content["tags"] == ["running", "plan"]
    path = tmp_path / "data" / "notes.jsonl"
    [record] = read_lines(path)
    assert record["content"] == "周六早上 7 点跑 5 公里"
    assert record["id"] == result.content["id"]
    # The file keeps Chinese readable, not \\u-escaped.
    assert "周六" in path.read_text(encoding="utf-8")


async def test_timestamps_are_utc_iso(notes_reach):
    before = datetime.now(UTC).replace(microsecond=0)
    result = await notes_reach.invoke("append_note", {"content": "stretch after the run"})
    created = result.content["created_at"]
    assert created.endswith("Z")
    when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    assert before <= when <= datetime.now(UTC)


async def test_list_is_newest_first_and_limited(notes_reach):
    for i in range(5):
        await notes_reach.invoke("append_note", {"content": f"note {i}"})
    result = await notes_reach.invoke("list_notes", {"limit": 2})
    assert result.ok, result.error
    assert result.content["total"] == 5
    assert [n["content"] for n in result.content["notes"]] == ["note 4", "note 3"]
    assert set(result.content["notes"][0]) == {"id", "created_at", "content", "tags"}  # no internal key


async def test_list_on_an_empty_notebook(notes_reach):
    result = await notes_reach.invoke("list_notes", {})
    assert result.ok and result.content == {"total": 0, "notes": []}


async def test_search_matches_every_word_in_text_or_tags_case_insensitively(notes_reach):
    await notes_reach.invoke("append_note", {"content": "Run 5 km on Saturday", "tags": ["Running"]})
    await notes_reach.invoke("append_note", {"content": "Buy running shoes"})
    await notes_reach.invoke("append_note", {"content": "北京今天适合跑步，计划跑 5 公里"})
    both = await notes_reach.invoke("search_notes", {"query": "RUNNING saturday"})
    assert [n["content"] for n in both.content["notes"]] == ["Run 5 km on Saturday"]
    running = await notes_reach.invoke("search_notes", {"query": "running"})
    assert running.content["matches"] == 2
    assert running.content["notes"][0]["content"] == "Buy running shoes"  # newest first
    chinese = await notes_reach.invoke("search_notes", {"query": "跑步"})
    assert chinese.content["matches"] == 1
    none = await notes_reach.invoke("search_notes", {"query": "swimming"})
    assert none.ok and none.content["matches"] == 0


async def test_too_long_note_is_refused_with_the_limit(make_notes_reach, tmp_path):
    reach = make_notes_reach({"max_note_chars": 20})
    result = await reach.invoke("append_note", {"content": "x" * 21})
    assert not result.ok
    assert result.error.code == "invalid_arguments"
    assert "content" in result.error.message and "20" in result.error.message
    assert not (tmp_path / "data" / "notes.jsonl").exists()


async def test_blank_note_is_refused(notes_reach):
    result = await notes_reach.invoke("append_note", {"content": "   "})
    assert not result.ok
    assert result.error.code == "invalid_arguments"
    assert "content" in result.error.message


async def test_too_many_tags_are_refused(make_notes_reach):
    reach = make_notes_reach({"max_tags": 2})
    result = await reach.invoke("append_note", {"content": "x", "tags": ["a", "b", "c"]})
    assert not result.ok and result.error.code == "invalid_arguments"
    assert "tags" in result.error.message


async def test_full_file_is_a_clear_business_error(make_notes_reach, tmp_path):
    reach = make_notes_reach({"max_file_bytes": 1024})
    results = [await reach.invoke("append_note", {"content": "n" * 100}) for _ in range(12)]
    saved = [r for r in results if r.ok]
    refused = [r for r in results if not r.ok]
    assert 5 <= len(saved) < 12
    assert refused and all(r.error.code == "execution_failed" for r in refused)
    assert "the notes file is full" in refused[0].error.message
    assert "max_file_bytes" in refused[0].error.message
    assert (tmp_path / "data" / "notes.jsonl").stat().st_size <= 1024
    # Reading still works on a full notebook.
    listed = await reach.invoke("list_notes", {"limit": 50})
    assert listed.content["total"] == len(saved)


async def test_path_from_settings_relative_to_the_data_dir(make_notes_reach, tmp_path):
    reach = make_notes_reach({"path": "journal/agent.jsonl"})
    await reach.invoke("append_note", {"content": "hello"})
    assert (tmp_path / "data" / "journal" / "agent.jsonl").exists()


async def test_absolute_path_from_settings(make_notes_reach, tmp_path):
    target = tmp_path / "elsewhere" / "notes.jsonl"
    reach = make_notes_reach({"path": str(target)})
    await reach.invoke("append_note", {"content": "hello"})
    assert read_lines(target)[0]["content"] == "hello"


async def test_a_damaged_line_is_skipped_and_the_next_note_starts_on_a_new_line(notes_reach, tmp_path):
    await notes_reach.invoke("append_note", {"content": "first"})
    path = tmp_path / "data" / "notes.jsonl"
    with path.open("ab") as handle:
        handle.write(b'{"id":"n_cut","content":"half a no')  # a crash mid-write
    await notes_reach.invoke("append_note", {"content": "second"})
    listed = await notes_reach.invoke("list_notes", {})
    assert [n["content"] for n in listed.content["notes"]] == ["second", "first"]
