"""A file that changes while read_file reads it: what the guards judged is what the model gets.

read_file looked at a small file's whole content for private keys and git credentials, then
read the page to return with a second ``pread``. A writer in between (a log appended to, a
config rewritten in place, an editor saving) made the page differ from what was judged: a token
appended to a git config came back unmasked, a key written into a file came back page by page
without its BEGIN line. The writer here is real (the file is changed on disk, between two reads
of read_file's own descriptor); only the moment is chosen, by wrapping ``os.pread``: after its
``n``-th call, for every ``n`` read_file makes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import rooted_reach

TOKEN = "ghp_R3dT3amTok3nZZ9918aa77QQ"
KEY_BODY = "MIIEpAIBAAKCAQEAzX9SECRETKEYBODY4417"
_RSA = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----\n"


def _after_call(monkeypatch: pytest.MonkeyPatch, n: int, change: Callable[[], None]) -> None:
    """Run ``change`` once, right after the ``n``-th ``os.pread``."""
    real = os.pread
    calls = 0

    def pread(fd: int, length: int, offset: int) -> bytes:
        nonlocal calls
        out = real(fd, length, offset)
        calls += 1
        if calls == n:
            change()
        return out

    monkeypatch.setattr(os, "pread", pread)


def _git_config(filler: int) -> str:
    return '[remote "origin"]\n\turl = https://github.com/o/r.git\n' + "# note\n" * filler


_CASES: list[tuple[str, int, str, Callable[[str], str], dict[str, Any], str]] = [
    # (name, filler lines, file, how the writer changes the text, read arguments, what must not show)
    ("token appended to a small git config", 10, "repo/.git/config",
     lambda t: t + f"[remote \"ci\"]\n\turl = https://bot:{TOKEN}@github.com/o/r.git\n", {}, TOKEN),
    ("token appended to a git config past the sniff", 3000, "repo/.git/config",
     lambda t: t + f"[remote \"ci\"]\n\turl = https://bot:{TOKEN}@github.com/o/r.git\n",
     {"offset": 7 * 3000 + 40}, TOKEN),
    ("token appended to an included config", 10, "ci/creds.inc",
     lambda t: t + f"[http]\n\textraheader = AUTHORIZATION: basic {TOKEN}\n", {}, TOKEN),
    ("key written in place, page after BEGIN", 40, "notes/log.txt",
     lambda t: t[:100] + _RSA + t[100 + len(_RSA):], {"offset": 100 + 32, "max_bytes": len(KEY_BODY)}, KEY_BODY),
    ("key written in place past the sniff", 2000, "notes/log.txt",
     lambda t: t[:9000] + _RSA + t[9000 + len(_RSA):], {"offset": 9000 + 32, "max_bytes": len(KEY_BODY)}, KEY_BODY),
]


@pytest.mark.parametrize("after", [1, 2, 3])
@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
async def test_what_is_judged_is_what_is_returned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  case: tuple[Any, ...], after: int) -> None:
    _, filler, rel, change, args, hidden = case
    reach, root = rooted_reach(tmp_path)
    path = root / rel
    path.parent.mkdir(parents=True)
    text = _git_config(filler)
    path.write_text(text, encoding="utf-8")
    changed = change(text)

    def write_in_place() -> None:  # the same file (inode), as an appending or in-place writer leaves it
        with open(path, "r+", encoding="utf-8") as f:
            f.write(changed)

    _after_call(monkeypatch, after, write_in_place)
    r = await reach.invoke("read_file", {"path": rel, **args})
    if r.ok:
        assert hidden not in r.content["content"], f"handed out after pread #{after}: {r.content['content']!r}"
    else:
        assert r.error.code == "invalid_arguments" and "allow_secret_files" in r.error.message, r.error


async def test_a_file_read_while_unchanged_reads_as_before(tmp_path: Path) -> None:
    """The control: pages of a config and of a big text file come back byte for byte."""
    reach, root = rooted_reach(tmp_path, max_read_bytes=1000, max_search_file_bytes=4096)
    body = _git_config(3000)
    (root / "repo" / ".git").mkdir(parents=True)
    (root / "repo" / ".git" / "config").write_text(body, encoding="utf-8")
    for rel in ("repo/.git/config",):
        got, offset = "", 0
        while True:
            r = await reach.invoke("read_file", {"path": rel, "offset": offset})
            assert r.ok, r.error
            got += r.content["content"]
            if not r.content.get("truncated"):
                break
            offset = r.content["next_offset"]
        assert got == body
