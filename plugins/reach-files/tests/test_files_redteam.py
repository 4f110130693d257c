"""Red-team variants of issue 19's reach-files classes that the first families did not spell.

* The clock is read while one huge folder's names are matched (its files, and its
  subfolders against the glob), not only while folders are listed: a folder of many
  thousand long names with a slow-but-linear pattern must still stop at the deadline.
  Shown with a clock that advances only when a name is matched (deterministic, no timing).
* Pipes and sockets inside the root, names exactly at NAME_MAX (and one past) for
  ``overwrite``, glob grammar odds at and one past every limit: ``invalid_arguments`` or a
  business answer, never "internal error".
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import reach_files.connectors as connectors
import reach_files.plugin
from reach_files.globs import MAX_PATTERN_CHARS, MAX_WILDCARDS, compile_glob

from reach_core import Reach


def _reach(tmp_path: Path, **settings: Any) -> Reach:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    config = {"reach": {"data_dir": str(tmp_path / "data")},
              "plugins": {"reach-files": {"roots": [str(root)], **settings}}}
    return Reach(config, plugins=[("reach-files", reach_files.plugin)], strict=True)


class _Clock:
    """``time.monotonic`` that moves one second each time the glob looks at a name."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def slow_glob(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Clock]:
    clock = _Clock()
    real = compile_glob

    def compiled(pattern: str) -> Any:
        glob = real(pattern)
        predicate, step = glob.file_predicate, glob.step

        def file_predicate(states: Any) -> Any:
            inner = predicate(states)

            def match(name: str) -> Any:
                clock.now += 1.0
                return inner(name)

            return match

        def slow_step(states: Any, name: str) -> Any:
            clock.now += 1.0
            return step(states, name)

        glob.file_predicate = file_predicate  # type: ignore[method-assign]
        glob.step = slow_step  # type: ignore[method-assign]
        return glob

    monkeypatch.setattr(connectors, "compile_glob", compiled)
    monkeypatch.setattr(time, "monotonic", clock)
    yield clock


@pytest.mark.parametrize("count", [200, 1000])
def test_matching_one_huge_folders_files_reads_the_clock(tmp_path: Path, slow_glob: _Clock, count: int) -> None:
    reach = _reach(tmp_path)
    big = tmp_path / "root" / "big"
    big.mkdir()
    for i in range(count):
        (big / (f"{i:05}" + "a" * 200)).touch()
    search = reach.get("search_files")
    out = search.execute({"pattern": "*.never", "path": "big"}, SimpleNamespace(deadline=slow_glob.now + 30, tool=None))
    assert out.get("truncated") is True and "time limit" in out["note"], out
    assert slow_glob.now - 1000.0 < 30 + 64 + 1  # stopped within one check interval of the deadline


@pytest.mark.parametrize("count", [200, 1000])
def test_matching_one_huge_folders_subfolders_reads_the_clock(tmp_path: Path, slow_glob: _Clock, count: int) -> None:
    reach = _reach(tmp_path)
    wide = tmp_path / "root" / "wide"
    wide.mkdir()
    for i in range(count):
        (wide / f"d{i:05}").mkdir()
    search = reach.get("search_files")
    out = search.execute({"pattern": "nothing-here/*.md", "path": "wide"},
                         SimpleNamespace(deadline=slow_glob.now + 30, tool=None))
    assert out.get("truncated") is True and "time limit" in out["note"], out
    assert slow_glob.now - 1000.0 < 30 + 64 + 1


def test_control_a_far_deadline_matches_every_name(tmp_path: Path, slow_glob: _Clock) -> None:
    reach = _reach(tmp_path)
    big = tmp_path / "root" / "big"
    big.mkdir()
    for i in range(300):
        (big / f"{i:05}.md").touch()
    out = reach.get("search_files").execute({"pattern": "*.md", "path": "big", "max_results": 50},
                                            SimpleNamespace(deadline=slow_glob.now + 10_000, tool=None))
    assert len(out["files"]) == 50 and "time limit" not in out.get("note", "")


# -- pipes, sockets, NAME_MAX ---------------------------------------------------------------


@pytest.fixture
def box(tmp_path: Path) -> Iterator[tuple[Reach, Path]]:
    reach = _reach(tmp_path)
    root = tmp_path / "root"
    os.mkfifo(root / "pipe")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    short = Path(f"/tmp/rf-{os.getpid()}-{id(sock)}")  # AF_UNIX paths are short; symlinked into the root
    sock.bind(str(short))
    os.symlink(short, root / "outside-sock")
    inner = root / "sock"
    try:
        s2 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s2.bind(str(inner))
    except OSError:
        s2 = None
    yield reach, root
    sock.close()
    short.unlink()
    if s2 is not None:
        s2.close()


def _not_internal(result: Any) -> None:
    assert not result.ok, result.content
    assert "internal error" not in result.error.message, result.error
    assert result.error.code in ("invalid_arguments", "execution_failed", "not_found"), result.error


@pytest.mark.parametrize("mode", ["append", "create"])
@pytest.mark.parametrize("name", ["pipe", "sock"])
async def test_writing_to_a_pipe_or_socket_is_refused_in_words(box: tuple[Reach, Path], name: str, mode: str) -> None:
    reach, root = box
    if not (root / name).exists():
        pytest.fail(f"could not create {name} in the root")
    result = await reach.invoke("write_file", {"path": name, "content": "x", "mode": mode})
    _not_internal(result)


@pytest.mark.parametrize("name", ["pipe", "sock", "outside-sock"])
async def test_reading_a_pipe_or_socket_is_refused_in_words(box: tuple[Reach, Path], name: str) -> None:
    reach, _ = box
    result = await reach.invoke("read_file", {"path": name})
    _not_internal(result)
    listed = await reach.invoke("list_dir", {"path": name})
    _not_internal(listed)


NAME_AT_LIMIT = ["a" * 255, "é" * 127 + "b", "北" * 85, "🚀" * 63 + "abc", "." + "x" * 254]


@pytest.mark.parametrize("name", NAME_AT_LIMIT, ids=lambda n: f"{len(n.encode())}B")
@pytest.mark.parametrize("mode", ["create", "overwrite", "append"])
async def test_a_name_exactly_at_name_max_can_be_written_in_every_mode(tmp_path: Path, name: str, mode: str) -> None:
    assert len(name.encode()) == 255
    reach = _reach(tmp_path)
    for _ in range(2 if mode != "create" else 1):
        result = await reach.invoke("write_file", {"path": f"d/{name}", "content": "hi", "mode": mode})
        assert result.ok, result.error
    read = await reach.invoke("read_file", {"path": f"d/{name}"})
    assert read.ok and read.content["content"] in ("hi", "hihi")
    assert sorted(p.name for p in (tmp_path / "root" / "d").iterdir()) == [name]  # no temporary file left


@pytest.mark.parametrize("name", [n + "z" for n in NAME_AT_LIMIT], ids=lambda n: f"{len(n.encode())}B")
@pytest.mark.parametrize("tool", ["write_file", "read_file", "list_dir", "search_files"])
async def test_a_name_one_byte_past_name_max_is_invalid_arguments(tmp_path: Path, name: str, tool: str) -> None:
    reach = _reach(tmp_path)
    args: dict[str, Any] = {"path": f"d/{name}"}
    if tool == "write_file":
        args.update(content="x", mode="overwrite")
    result = await reach.invoke(tool, args)
    assert not result.ok and result.error.code == "invalid_arguments", result.error
    assert "255 bytes" in result.error.message


# -- glob grammar at its edges ---------------------------------------------------------------

ODD_GLOBS = [
    "[]", "[!]", "[^]", "[", "]", "[a-]", "[-a]", "[--a]", "[]-a]", "[!]a]", "\\", "\\*", "[\\]", "***", "****/x",
    "/**/", "./*", "././*.md", "*/", "**", "**/", "/", "//", "\uff0a", "\uff3b\uff41\uff3d", "[\u00e9-\u00ff]",
    "[\U0001f600-\U0001f64f]*", "a" * 255, "é" * 127, "?" * MAX_WILDCARDS, "*a" * (MAX_WILDCARDS // 2),
    "x" * (MAX_PATTERN_CHARS - 3) + "/*", " *.md ", "\t*.md", "*.md\n", "[a-a]", "[!a-a]",
]
BAD_GLOBS = [
    "[z-a]", "[!z-a]", "[^z-a]", "[9-0]", "a[z-a]b", "[z-a]/x.md", "docs/[b-a]*", "[\u00ff-\u00e9]",
    "[\U0001f64f-\U0001f600]",
    "[ab-a]", "[a-cz-x]", "a" * 256, "é" * 128, "北" * 86, "?" * (MAX_WILDCARDS + 1), "*a" * MAX_WILDCARDS + "*",
    "x" * (MAX_PATTERN_CHARS + 1), "*" * (MAX_PATTERN_CHARS + 1), "a/../b", "../*", "\x00*", "*\ud800", "\udfff/x",
]


@pytest.mark.parametrize("pattern", ODD_GLOBS, ids=lambda p: repr(p[:20]) + f"x{len(p)}")
async def test_odd_globs_are_answered(tmp_path: Path, pattern: str) -> None:
    reach = _reach(tmp_path)
    (tmp_path / "root" / "a.md").write_text("x")
    result = await reach.invoke("search_files", {"pattern": pattern})
    assert result.ok or result.error.code == "invalid_arguments", result.error
    if not result.ok:
        assert "internal error" not in result.error.message and "`pattern`" in result.error.message


@pytest.mark.parametrize("pattern", BAD_GLOBS, ids=lambda p: repr(p[:20]) + f"x{len(p)}")
async def test_bad_globs_are_invalid_arguments_that_say_why(tmp_path: Path, pattern: str) -> None:
    reach = _reach(tmp_path)
    result = await reach.invoke("search_files", {"pattern": pattern})
    assert not result.ok and result.error.code == "invalid_arguments", (pattern, result.error)
    assert "internal error" not in result.error.message and "pattern" in result.error.message
