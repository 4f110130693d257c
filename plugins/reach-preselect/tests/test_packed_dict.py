"""The packed dictionary behind Chinese glosses behaves like a dict (first value wins)."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pytest
from reach_preselect.crosslingual import ChineseGlossary, _PackedDict


@pytest.fixture(params=[False, True], ids=["file", "memory"])
def in_memory(request: pytest.FixtureRequest) -> bool:
    """Both value stores: the temporary file and the in-memory fallback."""
    return bool(request.param)


def test_first_value_wins_and_missing_keys(in_memory: bool) -> None:
    d = _PackedDict(capacity=8, in_memory=in_memory)
    d.add("天气", "weather/climate/")
    d.add("天气", "something else")
    assert d.get("天气") == "weather/climate/" and "天气" in d
    assert d.get("航班") is None and "航班" not in d and 42 not in d
    assert len(d) == 1


def test_grows_and_keeps_every_entry(in_memory: bool) -> None:
    d = _PackedDict(capacity=8, in_memory=in_memory)
    words = [f"词{i}" for i in range(10_000)]  # ~150 KB of keys: several 64 KiB pages
    for i, w in enumerate(words):
        d.add(w, f"sense {i}")
    assert len(d) == 10_000 and len(d._pages) > 2
    assert all(d.get(w) == f"sense {i}" for i, w in enumerate(words))


def test_adds_after_reads_land_after_the_stored_values(in_memory: bool) -> None:
    d = _PackedDict(capacity=8, in_memory=in_memory)
    d.add("一", "one")
    assert d.get("一") == "one"  # moves the in-memory store's position
    d.add("二", "two")
    d.add("", "")
    assert (d.get("一"), d.get("二"), d.get("")) == ("one", "two", "")


def test_values_go_to_a_file_unless_asked_for_memory() -> None:
    assert _PackedDict(capacity=8)._fd >= 0
    assert _PackedDict(capacity=8, in_memory=True)._fd < 0


def test_concurrent_lookups_agree() -> None:
    d = _PackedDict(capacity=8)
    for i in range(300):
        d.add(f"词{i}", f"sense {i}")
    errors: list[str] = []

    def look() -> None:
        for i in range(300):
            if d.get(f"词{i}") != f"sense {i}":
                errors.append(f"词{i}")

    threads = [threading.Thread(target=look) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_oversized_entries_are_refused() -> None:
    d = _PackedDict(capacity=8, in_memory=True)
    with pytest.raises(ValueError):
        d.add("词" * 100, "x")
    with pytest.raises(ValueError):
        d.add("词", "x" * 70_000)


def test_loader_reads_cedict_lines(tmp_path: Path) -> None:
    """CC-CEDICT's CRLF lines, a word's readings in file order (at most two), traditional
    characters simplified; a single character keeps its first reading only."""
    lines = [
        "# CC-CEDICT",
        "天氣 天气 [tian1 qi4] /weather/",
        "航班 航班 [hang2 ban1] /scheduled flight/flight number/",
        "航班 航班 [hang2 ban1] /a later reading/",
        "航班 航班 [hang2 ban1] /a third reading, never read/",
        "氣 气 [qi4] /gas/air/",
        "查 查 [cha2] /to check; to investigate/",
        "查 查 [zha1] /a second reading of one character, never read/",
        "broken line without senses",
    ]
    path = tmp_path / "cedict.txt.gz"
    path.write_bytes(gzip.compress(("\r\n".join(lines) + "\r\n").encode()))
    glossary = ChineseGlossary(path)
    assert glossary.translate("查航班天氣") == "to check scheduled flight flight number a later reading weather"
    assert glossary.translate("no chinese here") == ""
