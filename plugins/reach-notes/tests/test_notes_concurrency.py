"""Appends under concurrency and repeats: nothing interleaves, nothing is written twice."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap


async def test_concurrent_appends_all_land_whole(notes_reach, tmp_path):
    calls = [notes_reach.invoke("append_note", {"content": f"note {i} " + "x" * 500}) for i in range(60)]
    results = await asyncio.gather(*calls)
    assert all(r.ok for r in results)
    lines = (tmp_path / "data" / "notes.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 60
    assert {r["content"].split()[1] for r in records} == {str(i) for i in range(60)}
    assert len({r["id"] for r in records}) == 60


def test_appends_from_several_processes_never_interleave(tmp_path):
    path = tmp_path / "shared.jsonl"
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from reach_notes.settings import NotesSettings
        from reach_notes.store import NoteStore

        async def main(worker):
            store = NoteStore(Path({str(path)!r}), NotesSettings(fsync=False))
            for i in range(40):
                await store.append(f"w{{worker}}-{{i}} " + "y" * 3000, [], None)

        asyncio.run(main(sys.argv[1]))
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(w)]) for w in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 160
    assert len({r["content"].split()[0] for r in records}) == 160


async def test_same_run_and_call_id_does_not_append_twice(notes_reach, tmp_path):
    call = {"id": "call_7", "name": "append_note", "arguments": '{"content": "plan: 5 km"}'}
    first = await notes_reach.invoke(call, run_id="run-1")
    again = await notes_reach.invoke(call, run_id="run-1")
    assert first.ok and again.ok
    assert again.content["id"] == first.content["id"]
    lines = (tmp_path / "data" / "notes.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1


async def test_idempotency_key_holds_even_without_the_core_ledger(make_notes_reach, tmp_path):
    """Two Reach instances with separate state stores but one notes file: the
    key stored with the note still stops the second append."""
    notes = tmp_path / "notes.jsonl"
    one = make_notes_reach({"path": str(notes)}, data_dir=tmp_path / "a")
    two = make_notes_reach({"path": str(notes)}, data_dir=tmp_path / "b")
    first = await one.invoke("append_note", {"content": "plan"}, idempotency_key="k-1")
    second = await two.invoke("append_note", {"content": "plan"}, idempotency_key="k-1")
    other = await two.invoke("append_note", {"content": "plan"}, idempotency_key="k-2")
    assert second.ok and second.content["id"] == first.content["id"]
    assert second.content.get("already_saved") is True
    assert other.content["id"] != first.content["id"]
    assert len(notes.read_text(encoding="utf-8").splitlines()) == 2
