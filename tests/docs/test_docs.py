"""Every Python and shell block in README.md and docs/**/*.md runs, as written.

A doc that lies is worse than none: a newcomer copies the block, it fails, and they
leave. So each fenced ``python`` block runs (top-level ``await`` allowed, as in an
asyncio REPL or a notebook; the blocks of one page share one namespace and one event
loop, in order, so a page can build on its earlier blocks), and each ``bash``/``sh``
block runs with ``bash -eu`` (``console`` blocks: the ``$ `` lines). Every page runs in
a fresh temporary directory of its own.

A block that cannot run here (it needs a hosted model, a package that is not
published yet, a real mail server...) says so on purpose: ``notest`` after the
language, e.g. ```` ```bash notest ````. A block that starts a server is marked
``background``: it must start and still be serving after a few seconds, then it is
stopped.
Other fences (toml, json, text) are not run here; the config examples are checked by
``tests/test_config_strict.py``.

These tests run in the ``docs`` suite of ``nox -s tests``, in a venv holding reach-core
and every plugin, since the pages show them together.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
PYTHON = {"python", "py", "python3", "pycon"}
SHELL = {"bash", "sh", "shell", "console"}


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    flags: set[str]
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        words = match.group(1).split()
        if not words or words[0].lower() not in PYTHON | SHELL:
            continue
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, line, words[0].lower(), {w.lower() for w in words[1:]}, match.group(2)))
    return found


ALL = [b for page in PAGES for b in blocks(page)]


@dataclass
class Page:
    """One page's state: its directory, its namespace and event loop, the blocks run so far."""

    cwd: Path
    namespace: dict[str, Any] = field(default_factory=lambda: {"__name__": "__doc__"})
    runner: asyncio.Runner = field(default_factory=asyncio.Runner)
    done: set[int] = field(default_factory=set)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    state: dict[Path, Page] = {}
    yield lambda page: state.setdefault(page, Page(tmp_path_factory.mktemp(page.stem)))
    for page in state.values():
        page.runner.close()


def _run_python(block: Block, page: Page) -> None:
    code = compile(block.code, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    result = eval(code, page.namespace)  # noqa: S307 - the docs' own code, run as a reader would
    if inspect.isawaitable(result):
        page.runner.run(result)


def _shell_source(block: Block) -> str:
    if block.lang != "console":
        return block.code
    return "\n".join(line[2:] for line in block.code.splitlines() if line.startswith("$ "))


def _run_shell(block: Block, page: Page) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    args = dict(cwd=page.cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, start_new_session=True)
    proc = subprocess.Popen(["bash", "-euc", _shell_source(block)], **args)
    try:
        if "background" in block.flags:
            with pytest.raises(subprocess.TimeoutExpired):  # a server keeps serving
                proc.wait(timeout=4)
            return
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, f"{block.id} failed ({proc.returncode}):\n{out[-3000:]}\n{err[-3000:]}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def _run_block(block: Block, pages, monkeypatch) -> None:
    page = pages(block.page)
    monkeypatch.chdir(page.cwd)
    # the page's earlier Python blocks first (when this one is run alone)
    for earlier in blocks(block.page):
        if earlier.line >= block.line:
            break
        if earlier.lang in PYTHON and "notest" not in earlier.flags and earlier.line not in page.done:
            page.done.add(earlier.line)
            _run_python(earlier, page)
    page.done.add(block.line)
    if block.lang in PYTHON:
        _run_python(block, page)
    else:
        _run_shell(block, page)


def _page_tests(page: Path) -> type | None:
    """The class of one page's tests. A page's blocks share its state (directory,
    namespace), so under pytest-xdist the suite runs with `--dist loadscope`, which keeps
    a class on one worker with its tests in order, and shares the pages out.
    (`loadgroup` would say it more directly, but xdist 3.8 cannot group under pytest 9.)"""
    found = [b for b in ALL if b.page == page and "notest" not in b.flags]
    if not found:
        return None

    @pytest.mark.parametrize("block", found, ids=lambda b: b.id)
    def test_block_runs_as_written(self, block: Block, pages, monkeypatch) -> None:
        _run_block(block, pages, monkeypatch)

    name = "Test_" + re.sub(r"\W", "_", str(page.relative_to(ROOT)))
    return type(name, (), {"test_block_runs_as_written": test_block_runs_as_written})


for _page in PAGES:
    _cls = _page_tests(_page)
    if _cls is not None:
        globals()[_cls.__name__] = _cls


def test_every_page_with_code_is_collected_and_skips_are_few():
    """The collector finds the pages' blocks; a notest is a decision, not the default."""
    assert len(ALL) >= 40
    skipped = [b.id for b in ALL if "notest" in b.flags]
    assert len(skipped) <= len(ALL) // 3, skipped
