"""Red-team families for the notes file and the notes themselves.

* A damaged notes file (garbage, bad UTF-8, wrong JSON types, nesting deep enough to
  overflow a recursive parser, huge numbers, NUL bytes, BOM, CR line ends): the bad lines
  are skipped with one log warning naming how many, the good notes around them are
  listed, searched and still deduplicated by key; no call fails.
* The notes path is a FIFO, a socket, a folder, a device or a link to one: every tool
  answers at once with a clear refusal (a FIFO must not hang the call).
* A note or tag that shows nothing (whitespace, zero-width, control, filler characters)
  is ``invalid_arguments`` and nothing is written.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from pathlib import Path

import pytest

GOOD = [{"id": "n_1", "created_at": "2026-01-01T00:00:00Z", "content": "buy tea", "tags": ["shop"]},
        {"id": "n_2", "created_at": "2026-01-02T00:00:00Z", "content": "call Ada", "tags": []}]

_BAD_LINES: dict[str, bytes] = {
    "garbage": b"this is not json",
    "half_record": b'{"id": "n_x", "content": "cut',
    "bad_utf8": b'{"id": "n_x", "content": "\xff\xfe caf\xe9"}',
    "array": b"[1, 2, 3]",
    "number": b"42",
    "string": b'"just text"',
    "null": b"null",
    "content_int": b'{"id": "n_x", "content": 5}',
    "content_list": b'{"id": "n_x", "content": ["a"]}',
    "tags_int": b'{"id": "n_x", "content": "tags int", "tags": 5}',
    "tags_str": b'{"id": "n_x", "content": "tags str", "tags": "abc"}',
    "tags_dict": b'{"id": "n_x", "content": "tags dict", "tags": {"a": 1}}',
    "tags_nested": b'{"id": "n_x", "content": "tags nested", "tags": [[1], {"x": 2}, null]}',
    "id_dict": b'{"id": {"a": 1}, "content": "odd id"}',
    "created_list": b'{"id": "n_x", "created_at": [1], "content": "odd time"}',
    "key_int": b'{"id": "n_x", "content": "odd key", "key": 7}',
    "deep_array": b"[" * 100_000 + b"]" * 100_000,
    "deep_object": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "deep_in_tags": b'{"id": "n_x", "content": "deep", "tags": ' + b"[" * 60_000 + b"]" * 60_000 + b"}",
    "huge_number": b'{"id": "n_x", "content": "num", "n": 1' + b"0" * 5000 + b"}",
    "huge_exponent": b'{"id": "n_x", "content": "exp", "n": 1e999999}',
    "nan": b'{"id": "n_x", "content": "nan", "n": NaN}',
    "nul_bytes": b'{"id": "n_x", \x00 "content": "nul"}',
    "only_nul": b"\x00\x00\x00",
    "bom": b'\xef\xbb\xbf{"id": "n_x", "content": "after bom"}',
    "cr_only": b'{"id": "n_a", "content": "cr one"}\r{"id": "n_b", "content": "cr two"}',
    "long_line": b"x" * 1_000_000,
    "surrogate_escape": b'{"id": "n_x", "content": "\\ud800 lone"}',
    "duplicate_keys": b'{"id": "n_x", "content": "a", "content": 3}',
}


def _write_notes(path: Path, bad: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(GOOD[0]).encode(), bad, json.dumps(GOOD[1]).encode()]
    path.write_bytes(b"\n".join(lines) + b"\n")


@pytest.mark.parametrize("case", sorted(_BAD_LINES))
async def test_a_damaged_notes_file_skips_bad_lines_and_warns(make_notes_reach, tmp_path, caplog, case):
    path = tmp_path / "data" / "notes.jsonl"
    _write_notes(path, _BAD_LINES[case])
    reach = make_notes_reach()
    with caplog.at_level(logging.WARNING, logger="reach.notes"):
        listed = await reach.invoke("list_notes", {"limit": 50})
        found = await reach.invoke("search_notes", {"query": "tea"})
        added = await reach.invoke("append_note", {"content": "new one"}, idempotency_key="k1")
        again = await reach.invoke("append_note", {"content": "new one"}, idempotency_key="k1")
    for r in (listed, found, added, again):
        assert r.ok, (case, r.error)
    contents = [n["content"] for n in listed.content["notes"]]
    assert "buy tea" in contents and "call Ada" in contents, contents
    assert all(isinstance(c, str) for c in contents)
    assert all(isinstance(t, str) for n in listed.content["notes"] for t in n["tags"])
    assert all(isinstance(n["id"], str) or n["id"] is None for n in listed.content["notes"])
    assert [n["content"] for n in found.content["notes"]] == ["buy tea"]
    assert again.content["id"] == added.content["id"]
    assert path.read_bytes().count(b'"new one"') == 1
    warned = [r for r in caplog.records if r.name == "reach.notes" and r.levelno == logging.WARNING]
    usable = case in ("cr_only", "bom", "tags_int", "tags_str", "tags_dict", "tags_nested", "id_dict",
                      "created_list", "key_int", "huge_number", "huge_exponent", "nan", "duplicate_keys",
                      "surrogate_escape")
    if not usable:
        assert warned, f"{case}: a skipped line was not reported in the log"
        assert str(path) in warned[0].getMessage() and "skipped" in warned[0].getMessage()


async def test_the_warning_is_not_repeated_for_every_call(make_notes_reach, tmp_path, caplog):
    path = tmp_path / "data" / "notes.jsonl"
    _write_notes(path, b"garbage")
    reach = make_notes_reach()
    with caplog.at_level(logging.WARNING, logger="reach.notes"):
        for _ in range(5):
            assert (await reach.invoke("list_notes", {})).ok
    assert len([r for r in caplog.records if r.name == "reach.notes"]) == 1


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _socket(p: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(p))
    return s


@pytest.mark.parametrize("kind", ["fifo", "socket", "directory", "dev_null", "dev_zero", "link_to_fifo",
                                  "link_to_dir", "link_to_zero"])
async def test_a_notes_path_that_is_not_a_regular_file_is_refused_at_once(make_notes_reach, tmp_path, kind):
    path = tmp_path / "n" / "notes.jsonl"
    path.parent.mkdir()
    keep = None
    if kind == "fifo":
        _fifo(path)
    elif kind == "socket":
        keep = _socket(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "dev_null":
        path = Path("/dev/null")
    elif kind == "dev_zero":
        path = Path("/dev/zero")
    elif kind == "link_to_fifo":
        _fifo(tmp_path / "n" / "pipe")
        path.symlink_to(tmp_path / "n" / "pipe")
    elif kind == "link_to_dir":
        (tmp_path / "n" / "d").mkdir()
        path.symlink_to(tmp_path / "n" / "d")
    elif kind == "link_to_zero":
        path.symlink_to("/dev/zero")
    reach = make_notes_reach({"path": str(path), "max_file_bytes": 4096})
    try:
        for tool, args in [("list_notes", {}), ("search_notes", {"query": "x"}), ("append_note", {"content": "x"})]:
            r = await asyncio.wait_for(reach.invoke(tool, args), 5)
            assert not r.ok, (kind, tool, r.content)
            assert r.error.code == "execution_failed", (kind, tool, r.error)
            assert "not a regular file" in r.error.message, r.error.message
            assert "internal error" not in r.error.message
    finally:
        if keep is not None:
            keep.close()
    if kind == "link_to_dir":
        assert list((tmp_path / "n" / "d").iterdir()) == []


_INVISIBLE = [" ", "   \t\n", "\u200b", "\u200b\u200c\u200d\ufeff", "\x00", "\x01\x02\x03", "\x7f", "\u0085",
              "\u00a0", "\u2028\u2029", "\u3000", "\u3164", "\u115f\u1160", "\uffa0", "\u2800", "\u00ad",
              "\u2060\u2061\u2062", "\u180e", "\ufe0f", "\u034f", "\U000e0041\U000e0042", "\u202e\u202d",
              "\u200e\u200f", " \u200b \u3164 \x00 \ufeff ", "\u1680", "\U0001d173\U0001d17a", "\u2800" * 50]


@pytest.mark.parametrize("content", _INVISIBLE, ids=range(len(_INVISIBLE)))
async def test_invisible_notes_are_refused(make_notes_reach, tmp_path, content):
    reach = make_notes_reach()
    r = await reach.invoke("append_note", {"content": content})
    assert not r.ok and r.error.code == "invalid_arguments", r
    assert "content" in r.error.message
    r = await reach.invoke("append_note", {"content": "visible", "tags": [content]})
    assert not r.ok and r.error.code == "invalid_arguments", r
    assert not (tmp_path / "data" / "notes.jsonl").exists()


@pytest.mark.parametrize("content", ["a\u200bb", "🙂", "👍🏽", "北京", "x\u0301", "\u0627\u0644\u0633", "ㄱ",
                                     "a\u3164", ".", "0", "\u2800a", "‏שלום", "👨‍👩‍👧"])
async def test_visible_notes_with_odd_characters_are_saved(make_notes_reach, tmp_path, content):
    reach = make_notes_reach()
    r = await reach.invoke("append_note", {"content": content, "tags": [content]})
    assert r.ok, r.error
    listed = await reach.invoke("list_notes", {})
    assert listed.content["notes"][0]["content"] == content
