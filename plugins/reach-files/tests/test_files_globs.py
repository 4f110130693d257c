"""search_files globs: the same answers as a plain reference matcher, no backtracking, clear refusals.

The reference below (``fnmatch`` per segment, ``**`` by recursion) is exponential
on the attack patterns, so it checks meaning on small random inputs only; the
attack patterns are checked against answers worked out by hand.
"""

from __future__ import annotations

import fnmatch
import functools
import random
from pathlib import Path
from typing import Any

import pytest
from reach_files.globs import MAX_PATTERN_CHARS, MAX_WILDCARDS, GlobError, compile_glob


def reference(pattern: str, path: str) -> bool:
    text = pattern.strip() or "*"
    if "/" not in text:
        text = "**/" + text
    segs = [s for s in text.split("/") if s not in ("", ".")] or ["*"]
    names = path.split("/")

    @functools.lru_cache(None)
    def go(i: int, j: int) -> bool:
        if i == len(segs):
            return j == len(names)
        if segs[i] == "**":
            if i == len(segs) - 1:
                return j < len(names)  # a trailing ** names something below: one segment at least
            return go(i + 1, j) or (j < len(names) and go(i, j + 1))
        return j < len(names) and fnmatch.fnmatchcase(names[j], segs[i]) and go(i + 1, j + 1)

    return go(0, 0)


_ALPHABET = "ab.c]-"
_ATOMS = ["*", "*", "?", "[ab]", "[!a]", "[a-c]", "[]a]", "[", "[!]]", "[-a]", "[a-]", "**"]


def _random_pattern(rng: random.Random) -> str:
    segs = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.2:
            segs.append("**")
            continue
        seg = "".join(rng.choice(_ATOMS) if rng.random() < 0.45 else rng.choice("ab.c")
                      for _ in range(rng.randint(1, 6)))
        segs.append(seg.replace("/", ""))
    return "/".join(s for s in segs if s != "..") or "*"


def _random_path(rng: random.Random) -> str:
    return "/".join(
        "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 4))
    )


@pytest.mark.parametrize("seed", range(40))
def test_random_globs_agree_with_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        pattern = _random_pattern(rng)
        if ".." in pattern.split("/"):
            continue
        glob = compile_glob(pattern)
        for _ in range(25):
            path = _random_path(rng)
            expected = reference(pattern, path)
            assert glob.matches(path) == expected, (pattern, path)
            *folders, name = path.split("/")
            states = glob.start()  # the walk's way: states per folder, then the file's final check
            for folder in folders:
                states = glob.step(states, folder)
            assert bool(glob.file_predicate(states)(name)) == expected, (pattern, path)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.md", "a.md", True),
        ("*.md", "docs/deep/a.md", True),
        ("*.md", "a.mdx", False),
        ("docs/*.md", "docs/a.md", True),
        ("docs/*.md", "docs/x/a.md", False),
        ("docs/**/*.md", "docs/a.md", True),
        ("docs/**/*.md", "docs/x/y/a.md", True),
        ("docs/**", "docs/x/y/a.md", True),
        ("docs/**", "docs", False),
        ("**", "a/b/c", True),
        ("**/zz", "a/b/zz", True),
        ("./*.md", "a.md", True),
        ("./*.md", "d/a.md", False),
        ("docs//*.md", "docs/a.md", True),
        ("[abc].txt", "b.txt", True),
        ("[!abc].txt", "b.txt", False),
        ("[^abc].txt", "d.txt", True),
        ("[a-c]?.txt", "bz.txt", True),
        ("[]x]", "]", True),
        ("[", "[", True),
        ("a[", "a[", True),
        ("file[0-9][0-9].log", "file42.log", True),
        ("file[0-9][0-9].log", "file4x.log", False),
        ("北京*.txt", "notes/北京天气.txt", True),
        ("*.TXT", "a.txt", False),  # case-sensitive, like the file system
        ("test_*_*.py", "test_a_b.py", True),
        ("test_*_*.py", "test_ab.py", False),
        ("a**b", "axxb", True),  # ** inside a name is *
        ("src/a**b", "src/x/b", False),
        (".*", ".hidden", True),
        ("*", ".hidden", True),
        ("\\*", "\\x", True),  # no escapes: backslash is a character
    ],
)
def test_glob_meaning(pattern: str, path: str, expected: bool) -> None:
    assert compile_glob(pattern).matches(path) is expected
    if "[^" not in pattern:  # fnmatch reads [^...] as a class holding ^; here it negates, like [!...]
        assert reference(pattern, path) is expected


def _deep(n: int, leaf: str = "zz") -> str:
    return "/".join(f"d{i}" for i in range(n)) + "/" + leaf


# Patterns that make a backtracking matcher take exponential time, with names where
# the answer is known without running one.
CATASTROPHIC = [
    ("**/" * 12 + "zz", _deep(26), True),
    ("**/" * 12 + "zz", _deep(26, "zy"), False),
    ("**/" * 40 + "zz", _deep(60, "zz"), True),
    ("/".join(["**"] * 30) + "/q/zz", _deep(40, "zz"), False),
    ("**/*/" * 10 + "zz", _deep(26), True),
    ("**/*/" * 10 + "zz", _deep(5), False),
    ("**/?*/**/*?/" * 6 + "zz", _deep(30), True),
    ("*a" * 13 + "*b", "a" * 250, False),
    ("*a" * 13 + "*b", "a" * 250 + "b", True),
    ("*a" * 60 + "*b", "a" * 254, False),
    ("*a" * 60 + "*b", "a" * 100 + "b", True),
    ("*a" * 60 + "*b", "a" * 59 + "b", False),
    ("*?" * 60 + "b", "x" * 254, False),
    ("*?" * 60 + "b", "x" * 200 + "b", True),
    ("*[ab]" * 40 + "*c", "ab" * 127, False),
    ("*[!c]" * 40 + "*c", "ab" * 120 + "c", True),
    ("a*" * 60 + "ab", "a" * 254, False),
    ("*aa*aa*aa*aa*aa*aa*aa*aa*b", "a" * 254, False),
    ("*a?a*a?a*a?a*a?a*a?a*b", "aba" * 84, False),
    ("**/" + "*a" * 20 + "*b", _deep(26, "a" * 200), False),
    ("**/**/**/" + "*a" * 20 + "*b", _deep(26, "a" * 200 + "b"), True),
]


@pytest.mark.parametrize(("pattern", "path", "expected"), CATASTROPHIC)
def test_catastrophic_patterns_are_answered(pattern: str, path: str, expected: bool) -> None:
    glob = compile_glob(pattern)
    assert len(glob.tokens) <= pattern.count("/") + 2  # **/**/... collapsed; one token per segment at most
    for _ in range(50):  # the cost does not depend on luck; repeating would make a slow matcher hang
        assert glob.matches(path) is expected


async def test_catastrophic_patterns_through_the_tool(tmp_path: Path, files_reach: Any) -> None:
    root = tmp_path / "root"
    root.mkdir()
    reach = files_reach(tmp_path, {"roots": [str(root)]})
    deep = "/".join(["node_modules"] * 26) + "/zz"
    r = await reach.invoke("write_file", {"path": deep, "content": "found\n"})
    assert r.ok, r.error
    for name in ("a" * 250, "a" * 249 + "b", "ab" * 120):
        (root / name).write_text("x")
    cases = [
        ("**/" * 12 + "zz", [deep]),
        ("*a" * 13 + "*b", ["a" * 249 + "b", "ab" * 120]),
        ("*a" * 60 + "*b", ["a" * 249 + "b", "ab" * 120]),
        ("*a" * 125 + "*b", ["a" * 249 + "b"]),
        ("*[ab]" * 40 + "*b", ["a" * 249 + "b", "ab" * 120]),
        ("**/*/" * 10 + "zz", [deep]),
        ("**/node_modules/" * 20 + "zz", [deep]),
        ("**/node_modules/" * 27 + "zz", []),
    ]
    for pattern, expected in cases:
        r = await reach.invoke("search_files", {"pattern": pattern, "max_results": 50})
        assert r.ok, (pattern, r.error)
        assert sorted(f["path"] for f in r.content["files"]) == sorted(expected), pattern
    r = await reach.invoke("search_files", {"pattern": "**/" * 12 + "zz", "text": "found"})
    assert r.ok and r.content["matches"] == [{"path": deep, "line": 1, "text": "found"}]


INVERTED = [
    "[z-a]", "[9-0]", "[Z-A]*", "docs/[b-a]/*.md", "**/[!z-a]", "[^z-a].txt", "[é-a]", "[北-一]",
    "[a-cz-x]", "*[~-!]*", "x[b-a]y[c-d]", "[z-a", "[z-a]]", "a/b/c/[9-1]*.log",
]


@pytest.mark.parametrize("pattern", INVERTED)
async def test_inverted_character_ranges_are_invalid_arguments(box: Any, pattern: str) -> None:
    if pattern in ("[z-a",):  # never closed: a literal `[`, not a class; still answered, not an error
        r = await box.call("search_files", pattern=pattern)
        assert r.ok and r.content["files"] == []
        return
    r = await box.call("search_files", pattern=pattern)
    assert not r.ok and r.error.code == "invalid_arguments", (pattern, r.error)
    assert "backwards" in r.error.message and "internal error" not in r.error.message
    with pytest.raises(GlobError):
        compile_glob(pattern)


@pytest.mark.parametrize("pattern", ["[a-z]", "[-a]", "[a-]", "[]-a]", "[!a-z]", "[0-9a-f]", "[一-北]", "[a-a]"])
def test_ranges_in_order_are_fine(pattern: str) -> None:
    compile_glob(pattern)


TOO_BIG = [
    "a" * (MAX_PATTERN_CHARS + 1),
    "*" + "x" * 5000,
    "docs/" * 300,
    "?" * 100_000,
    "*a" * (MAX_WILDCARDS + 1),
    "?" * (MAX_WILDCARDS + 1),
    "[a]" * (MAX_WILDCARDS + 1),
    "**/" * (MAX_WILDCARDS + 1) + "zz",
    "*?" * 70,
    "/".join("*x*" for _ in range(80)),
]


@pytest.mark.parametrize("pattern", TOO_BIG, ids=lambda p: f"{p[:12]}..x{len(p)}")
async def test_pattern_size_and_wildcard_caps(box: Any, pattern: str) -> None:
    r = await box.call("search_files", pattern=pattern)
    assert not r.ok and r.error.code == "invalid_arguments", r.error
    assert "limit" in r.error.message and "`pattern`" in r.error.message
    assert len(r.error.message) < 400  # the pattern itself is not echoed back


@pytest.mark.parametrize(
    "pattern", ["*a" * (MAX_WILDCARDS - 1) + "*b", "?" * MAX_WILDCARDS, "/".join(["x" * 200] * 5), "x" * 255,
                "北" * 85, "*" + "?" * 120 + "x" * 135]
)
async def test_patterns_just_under_the_caps_run(box: Any, pattern: str) -> None:
    r = await box.call("search_files", pattern=pattern)
    assert r.ok and r.content["files"] == []


LONGER_THAN_ANY_NAME = [
    "x" * 256, "docs/" + "y" * 300 + "/*.md", "*" + "北" * 86, "😀" * 64 + "*", "**/" + "z" * 256,
    "a*" * 100 + "b" * 160,
    "?" * 100 + "[ab]" * 20 + "c" * 140, "x" * 1000,
]


@pytest.mark.parametrize("pattern", LONGER_THAN_ANY_NAME, ids=lambda p: f"{p[:10]}..x{len(p)}")
async def test_pattern_parts_longer_than_any_name(box: Any, pattern: str) -> None:
    r = await box.call("search_files", pattern=pattern)
    assert not r.ok and r.error.code == "invalid_arguments", r.error
    assert "255 bytes" in r.error.message and "`pattern`" in r.error.message


@pytest.mark.parametrize("pattern", ["..", "../*", "docs/../*", "**/../../etc/*", "a/..", "\x00", "*.md\x00"])
async def test_patterns_that_leave_the_folder_or_hold_nul(box: Any, pattern: str) -> None:
    r = await box.call("search_files", pattern=pattern)
    assert not r.ok and r.error.code == "invalid_arguments"


async def test_search_prunes_folders_the_pattern_cannot_enter(box: Any) -> None:
    for i in range(30):
        (box.root / "other" / f"f{i}").mkdir(parents=True)
        (box.root / "other" / f"f{i}" / "x.md").write_text("x")
    r = await box.call("search_files", pattern="notes/*.md")
    assert r.ok and r.content == {"files": [{"path": "notes/todo.md", "size": 21}], "files_looked_at": 1}
