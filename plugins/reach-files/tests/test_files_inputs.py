"""Odd inputs get ``invalid_arguments`` with a message the model can act on, never "internal error".

Families: numbers (huge, negative, fractional, NaN/inf, through JSON text and
through a direct call that skips the schema), names and paths over the OS
limits, lone surrogates in every text field of every tool.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from reach_core import InvalidArguments


def _refused(r: Any, field: str, *, json_ok: bool = False) -> None:
    """Refused as the field's fault. ``json_ok``: text that is not JSON at all (NaN, Infinity)
    may be refused earlier by the core's decoder as ``invalid_json``."""
    assert not r.ok, r.content
    codes = ("invalid_arguments", "invalid_json") if json_ok else ("invalid_arguments",)
    assert r.error.code in codes, r.error
    assert "internal error" not in r.error.message
    if r.error.code == "invalid_arguments":
        assert f"`{field}`" in r.error.message, r.error.message
    else:
        assert "not a JSON number" in r.error.message


async def _raw(box: Any, tool: str, arguments: str) -> Any:
    """Arguments as the model sends them: JSON text (NaN, Infinity and 1e30 survive json.loads)."""
    return await box.reach.invoke({"id": "c1", "name": tool, "arguments": arguments})


# -- numbers -------------------------------------------------------------------------------

OFFSETS = ["1e30", "-1e30", "1e300", "9223372036854775807", "9223372036854775808", "18446744073709551616",
           str(10**40), "1e18", "22", "-1", "-0.5", "2.5", "NaN", "Infinity", "-Infinity", '"5"', "true",
           "null-ish", "[1]", "{}"]


@pytest.mark.parametrize("offset", OFFSETS)
async def test_read_offsets(box: Any, offset: str) -> None:
    if offset == "null-ish":
        offset = '"null"'
    r = await _raw(box, "read_file", f'{{"path": "notes/todo.md", "offset": {offset}}}')
    _refused(r, "offset", json_ok="Infinity" in offset or offset == "NaN")


@pytest.mark.parametrize("offset", [0, 21, 20.0, 5])
async def test_read_offsets_inside_the_file_work(box: Any, offset: Any) -> None:
    r = await box.call("read_file", path="notes/todo.md", offset=offset)
    assert r.ok, r.error
    assert r.content["content"] == "- buy tea\n- call Ada\n"[int(offset):]


@pytest.mark.parametrize("offset", [22, 10**12, 1e6])
async def test_offset_past_the_end_says_the_size(box: Any, offset: Any) -> None:
    r = await box.call("read_file", path="notes/todo.md", offset=offset)
    _refused(r, "offset")
    assert "21 bytes" in r.error.message and "from 0 to 21" in r.error.message


async def test_an_offset_too_large_to_be_exact_is_refused(box: Any) -> None:
    # 1e30 is a float that no longer holds the integer written: the core refuses it
    # before the tool runs (reach_core.schema), naming the field
    r = await box.call("read_file", path="notes/todo.md", offset=1e30)
    _refused(r, "offset")
    assert "too large to be exact" in r.error.message


MAX_BYTES = ["0", "-5", "1e30", "1001", "2.5", "NaN", "Infinity", "-Infinity", "1e-300", '"10"', "false"]


@pytest.mark.parametrize("value", MAX_BYTES)
async def test_read_max_bytes(box: Any, value: str) -> None:
    r = await _raw(box, "read_file", f'{{"path": "notes/todo.md", "max_bytes": {value}}}')
    _refused(r, "max_bytes", json_ok="Infinity" in value or value == "NaN")


MAX_RESULTS = ["0", "-1", "51", "1e30", "-1e30", "1.5", "NaN", "Infinity", '"3"', "true", str(2**70)]


@pytest.mark.parametrize("value", MAX_RESULTS)
async def test_search_max_results(box: Any, value: str) -> None:
    r = await _raw(box, "search_files", f'{{"pattern": "*", "max_results": {value}}}')
    _refused(r, "max_results", json_ok="Infinity" in value or value == "NaN")


DIRECT = [
    ("read_file", {"path": "notes/todo.md", "offset": 1e30}, "offset"),
    ("read_file", {"path": "notes/todo.md", "offset": 2**64}, "offset"),
    ("read_file", {"path": "notes/todo.md", "offset": -1}, "offset"),
    ("read_file", {"path": "notes/todo.md", "offset": float("nan")}, "offset"),
    ("read_file", {"path": "notes/todo.md", "offset": float("inf")}, "offset"),
    ("read_file", {"path": "notes/todo.md", "offset": float("-inf")}, "offset"),
    ("read_file", {"path": "notes/todo.md", "offset": 1.5}, "offset"),
    ("read_file", {"path": "notes/todo.md", "offset": True}, "offset"),
    ("read_file", {"path": "notes/todo.md", "offset": "3"}, "offset"),
    ("read_file", {"path": "notes/todo.md", "max_bytes": 0}, "max_bytes"),
    ("read_file", {"path": "notes/todo.md", "max_bytes": 10**9}, "max_bytes"),
    ("read_file", {"path": "notes/todo.md", "max_bytes": float("nan")}, "max_bytes"),
    ("search_files", {"max_results": 0}, "max_results"),
    ("search_files", {"max_results": 1e30}, "max_results"),
    ("search_files", {"max_results": -7}, "max_results"),
    ("write_file", {"path": "x.txt", "content": "x", "mode": "truncate"}, "mode"),
]


DIRECT += [
    (tool, {**params, field: bad}, field)
    for bad in ("\ud800", "a\udfffb", "北京\udbff")
    for tool, params, field in [
        ("read_file", {"path": "x"}, "path"),
        ("list_dir", {"path": "x"}, "path"),
        ("search_files", {"pattern": "*"}, "pattern"),
        ("search_files", {"text": "x"}, "text"),
        ("search_files", {"path": "x"}, "path"),
        ("write_file", {"path": "x.txt", "content": "x"}, "content"),
        ("write_file", {"path": "x.txt", "content": "x"}, "path"),
    ]
]
DIRECT += [
    (tool, {**params, "path": bad}, "path")
    for bad in ("n" * 256, "/".join(["d" * 200] * 25), "é" * 128)
    for tool, params in [("read_file", {}), ("list_dir", {}), ("search_files", {}),
                         ("write_file", {"content": "x"})]
]
DIRECT += [("search_files", {"pattern": p}, "pattern") for p in ("[z-a]", "*a" * 200, "x" * 2000, "../*")]


@pytest.mark.parametrize(("tool", "params", "field"), DIRECT)
def test_direct_calls_that_skip_the_schema(box: Any, tool: str, params: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidArguments) as info:
        box.reach.get(tool).execute(params, None)
    assert info.value.field == field and "internal error" not in str(info.value)


# -- names and paths over the OS limits ------------------------------------------------------

LONG_NAMES = {
    "ascii_256": "a" * 256,
    "ascii_300": "b" * 300,
    "ascii_10k": "c" * 10_000,
    "cjk_86_chars_258_bytes": "北" * 86,
    "emoji_64_chars_256_bytes": "😀" * 64,
    "mixed": "é" * 100 + "x" * 60,
    "dotted": "." + "d" * 255,
    "inner_spaces": "s" * 120 + " " * 20 + "s" * 120,
}

POSITIONS = {
    "alone": "{n}",
    "first": "{n}/x.txt",
    "middle": "notes/{n}/x.txt",
    "last": "notes/{n}",
    "absolute": "{root}/notes/{n}",
    "with_dot": "./notes/./{n}",
}


def _tool_calls(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read_file", {"path": path}),
        ("list_dir", {"path": path}),
        ("search_files", {"path": path, "pattern": "*"}),
        ("write_file", {"path": path, "content": "x"}),
        ("write_file", {"path": path, "content": "x", "mode": "overwrite"}),
        ("write_file", {"path": path, "content": "x", "mode": "append"}),
    ]


@pytest.mark.parametrize("position", list(POSITIONS))
@pytest.mark.parametrize("name", list(LONG_NAMES))
async def test_names_over_name_max(box: Any, name: str, position: str) -> None:
    path = POSITIONS[position].format(n=LONG_NAMES[name], root=box.root)
    for tool, args in _tool_calls(path):
        r = await box.call(tool, **args)
        _refused(r, "path")
        assert "255 bytes" in r.error.message, (tool, r.error.message)
        assert len(r.error.message) < 500  # the name is not echoed back whole


@pytest.mark.parametrize("name", ["a" * 255, "北" * 85, "😀" * 63 + "abc"])
async def test_names_at_the_limit_work(box: Any, name: str) -> None:
    r = await box.call("write_file", path=f"notes/{name}", content="edge")
    assert r.ok, r.error
    r = await box.call("read_file", path=f"notes/{name}")
    assert r.ok and r.content["content"] == "edge"


LONG_PATHS = {
    "a_slash_2100": "a/" * 2100 + "x",
    "abc_slash_1100": "abc/" * 1100 + "x",
    "max_names_17": "/".join(["n" * 255] * 17),
    "cjk_folders": "/".join(["北京" * 40] * 20),
    "one_char_4096": "/".join("z" * 2048),
    "dots_dont_count_twice": "./" * 3000 + "x",
    "huge": "q/" * 100_000,
}


@pytest.mark.parametrize("case", list(LONG_PATHS))
async def test_paths_over_path_max(box: Any, case: str) -> None:
    for tool, args in _tool_calls(LONG_PATHS[case]):
        r = await box.call(tool, **args)
        _refused(r, "path")
        assert "4095 bytes" in r.error.message or "255 bytes" in r.error.message, r.error.message
        assert len(r.error.message) < 500
    assert not (box.root / "a").exists() and not (box.root / "abc").exists()


async def test_a_path_just_under_path_max_works(box: Any) -> None:
    room = 4095 - len(str(box.root).encode()) - 1
    path = "/".join(["p" * 200] * (room // 201)) + "/f.txt"
    path = path[: room - 10] if len(path) > room else path
    r = await box.call("write_file", path=path, content="deep")
    assert r.ok, r.error
    r = await box.call("read_file", path=path)
    assert r.ok and r.content["content"] == "deep"


async def test_a_symlink_that_makes_the_real_path_too_long(box: Any) -> None:
    folder = "/".join(["s" * 250] * 15)
    (box.root / folder).mkdir(parents=True)
    (box.root / "short").symlink_to(box.root / folder, target_is_directory=True)
    r = await box.call("read_file", path="short/" + "t" * 250 + "/" + "u" * 250)
    _refused(r, "path")
    assert "4095 bytes" in r.error.message


# -- lone surrogates -----------------------------------------------------------------------

SURROGATES = ["\ud800", "\udfff", "\udc80", "\ud83d", "a\ud800b", "notes/\udcff.txt", "\ud800\ud800",
              "\udc00\ud800", "北京\udbff", "😀\ude00"]


@pytest.mark.parametrize("bad", SURROGATES)
async def test_surrogates_in_paths(box: Any, bad: str) -> None:
    for tool, args in _tool_calls(bad):
        r = await box.call(tool, **args)
        _refused(r, "path")
        assert "surrogate" in r.error.message
    assert sorted(p.name for p in box.root.iterdir()) == ["notes", "readme.txt"]


@pytest.mark.parametrize("bad", SURROGATES)
async def test_surrogates_in_content(box: Any, bad: str) -> None:
    for mode in ("create", "overwrite", "append"):
        r = await box.call("write_file", path="notes/s.txt", content="before " + bad + " after", mode=mode)
        _refused(r, "content")
        assert "surrogate" in r.error.message
    assert not (box.root / "notes" / "s.txt").exists()


@pytest.mark.parametrize("bad", SURROGATES)
@pytest.mark.parametrize("field", ["pattern", "text"])
async def test_surrogates_in_search_fields(box: Any, bad: str, field: str) -> None:
    r = await box.call("search_files", **{field: bad})
    _refused(r, field)
    assert "surrogate" in r.error.message


@pytest.mark.parametrize("field", ["path", "content"])
@pytest.mark.parametrize("escaped", ["\\ud800", "x\\udfffy", "\\ud83d", "\\ude00\\ud83d"])
async def test_surrogates_as_json_escapes(box: Any, field: str, escaped: str) -> None:
    args = {"path": "notes/j.txt", "content": "ok"}
    text = json.dumps(args).replace('"ok"' if field == "content" else '"notes/j.txt"', f'"{escaped}"')
    r = await _raw(box, "write_file", text)
    _refused(r, field)


async def test_a_json_surrogate_pair_is_one_character_and_fine(box: Any) -> None:
    r = await _raw(box, "write_file", '{"path": "notes/\\ud83d\\ude00.txt", "content": "\\ud83d\\ude00"}')
    assert r.ok, r.error
    assert (box.root / "notes" / "😀.txt").read_text(encoding="utf-8") == "😀"


async def test_names_that_are_not_utf8_on_disk_are_shown_as_text(box: Any) -> None:
    import os

    os.close(os.open(os.path.join(os.fsencode(box.root), b"notes", b"caf\xe9.txt"), os.O_CREAT | os.O_WRONLY))
    r = await box.call("list_dir", path="notes")
    assert r.ok and "caf\\xe9.txt" in [e["name"] for e in r.content["entries"]]
    r = await box.call("search_files", pattern="caf*")
    assert r.ok and r.content["files"] == [{"path": "notes/caf\\xe9.txt", "size": 0}]
    json.dumps(r.content, ensure_ascii=False).encode("utf-8")  # valid text all the way


