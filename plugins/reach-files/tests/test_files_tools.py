"""What a model gets from the file tools: content, caps with markers, descriptions of binaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any


async def test_read_text_file(box: Any) -> None:
    r = await box.call("read_file", path="notes/todo.md")
    assert r.ok, r.error
    assert r.content == {"path": "notes/todo.md", "size": 21, "content": "- buy tea\n- call Ada\n"}


async def test_large_file_is_truncated_with_a_marker_and_can_be_continued(box: Any) -> None:
    text = "".join(f"line {i}: 北京天气\n" for i in range(300))
    (box.root / "big.txt").write_text(text, encoding="utf-8")
    r = await box.call("read_file", path="big.txt")
    assert r.ok and r.content["truncated"] is True
    assert "call read_file again with offset=" in r.content["note"]
    parts = [r.content["content"]]
    while r.content.get("truncated"):
        r = await box.call("read_file", path="big.txt", offset=r.content["next_offset"], max_bytes=777)
        assert r.ok, r.error
        parts.append(r.content["content"])
    assert "".join(parts) == text  # no character split, nothing lost or repeated
    assert "\ufffd" not in "".join(parts)


async def test_binary_file_is_described_not_dumped(box: Any) -> None:
    (box.root / "logo.dat").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10)
    r = await box.call("read_file", path="logo.dat")
    assert r.ok
    assert r.content["binary"] is True and r.content["type"] == "image/png"
    assert r.content["size"] == 8 + 2560 and "content" not in r.content


async def test_reading_a_folder_points_to_list_dir(box: Any) -> None:
    r = await box.call("read_file", path="notes")
    assert not r.ok and "list_dir" in r.error.message


async def test_missing_file_is_not_found(box: Any) -> None:
    r = await box.call("read_file", path="notes/nope.md")
    assert not r.ok and r.error.code == "not_found" and "search_files" in r.error.message


async def test_list_dir(box: Any) -> None:
    r = await box.call("list_dir")
    assert r.ok
    assert r.content["entries"] == [
        {"name": "notes", "type": "dir"},
        {"name": "readme.txt", "type": "file", "size": 6},
    ]
    r = await box.call("list_dir", path="notes")
    assert [e["name"] for e in r.content["entries"]] == ["todo.md", "北京.txt"]


async def test_list_dir_cap_says_how_many_more(box: Any) -> None:
    for i in range(60):
        (box.root / "notes" / f"n{i:02}.txt").write_text("x")
    r = await box.call("list_dir", path="notes")
    assert len(r.content["entries"]) == 50 and r.content["more_entries"] == 12
    assert "truncated" in r.content["note"]


async def test_search_by_glob_and_by_text(box: Any) -> None:
    r = await box.call("search_files", pattern="*.md")
    assert r.ok and r.content["files"] == [{"path": "notes/todo.md", "size": 21}]
    r = await box.call("search_files", text="ada", ignore_case=True)
    assert r.content["matches"] == [{"path": "notes/todo.md", "line": 2, "text": "- call Ada"}]
    r = await box.call("search_files", text="晴朗", path="notes")
    assert r.content["matches"] == [{"path": "notes/北京.txt", "line": 1, "text": "天气晴朗"}]
    r = await box.call("search_files", pattern="notes/*.txt")
    assert [f["path"] for f in r.content["files"]] == ["notes/北京.txt"]


async def test_search_skips_binaries_and_caps_results(box: Any) -> None:
    (box.root / "blob.bin").write_bytes(b"\x00needle\x00")
    (box.root / "many.txt").write_text("needle\n" * 100)
    r = await box.call("search_files", text="needle", max_results=5)
    assert r.ok and len(r.content["matches"]) == 5 and r.content["truncated"] is True
    assert all(m["path"] == "many.txt" for m in r.content["matches"])


async def test_write_create_refuses_to_replace(box: Any) -> None:
    r = await box.call("write_file", path="journal/2024/may.md", content="第一天\n")
    assert r.ok and r.content == {"path": "journal/2024/may.md", "mode": "create", "bytes_written": 10}
    assert (box.root / "journal/2024/may.md").read_text() == "第一天\n"
    again = await box.call("write_file", path="journal/2024/may.md", content="other")
    assert not again.ok and "overwrite" in again.error.message
    assert (box.root / "journal/2024/may.md").read_text() == "第一天\n"


async def test_write_overwrite_is_atomic_and_append_appends(box: Any) -> None:
    r = await box.call("write_file", path="readme.txt", content="new\n", mode="overwrite")
    assert r.ok
    r = await box.call("write_file", path="readme.txt", content="more\n", mode="append")
    assert r.ok
    assert (box.root / "readme.txt").read_text() == "new\nmore\n"
    assert sorted(p.name for p in box.root.iterdir()) == ["notes", "readme.txt"]  # no temp files left


async def test_write_limits_and_folders(box: Any, tmp_path: Path, files_reach: Any) -> None:
    reach = files_reach(tmp_path, {"roots": [str(box.root)], "max_write_bytes": 10})
    r = await reach.invoke("write_file", {"path": "x.txt", "content": "x" * 11})
    assert not r.ok and r.error.code == "invalid_arguments" and "append" in r.error.message
    r = await box.call("write_file", path="notes", content="x", mode="overwrite")
    assert not r.ok and "folder" in r.error.message
    r = await box.call("write_file", path=".", content="x")
    assert not r.ok


async def test_default_root_is_files_in_the_data_dir(tmp_path: Path, files_reach: Any) -> None:
    reach = files_reach(tmp_path)
    r = await reach.invoke("write_file", {"path": "hello.txt", "content": "hi"})
    assert r.ok
    assert (tmp_path / "data" / "files" / "hello.txt").read_text() == "hi"
