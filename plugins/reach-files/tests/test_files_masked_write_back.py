"""``write_file`` never writes the ``[REDACTED]`` mask back over the secrets it stands for.

``read_file`` shows passwords in configuration files and credentials in git config as
``[REDACTED]``. A model asked to change one line of such a file edits the text it read and
overwrites the file with it: before, every real password or token in the file became the
literal ``[REDACTED]``, and nothing could bring it back. Now an ``overwrite`` whose content
still holds the mask, of a file whose secrets are masked when read, is refused and the file
keeps its bytes. Families: every configuration spelling the masker knows (the cases of
``test_files_config_passwords``) and git config with a token, each read, edited elsewhere and
written back; honest controls: new content without the mask, the mask written into a file
without secrets or a new file, ``append``, and ``allow_secret_files``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import rooted_reach
from test_files_config_passwords import _CASES, _body

GIT_CASES = {
    "gitmodules token": (".gitmodules",
                         '[submodule "lib"]\n\tpath = lib\n\turl = https://x-access-token:ghp_Zq9xVwKp7wQa1234567890abcdefABCDEF12@github.com/o/lib.git\n'
                         "\tbranch = db.local\n"),
}
CASES = {**{k: (rel, _body(text)) for k, (rel, text) in _CASES.items()}, **GIT_CASES}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_an_edited_masked_text_is_not_written_back(tmp_path: Path, case: str) -> None:
    rel, text = CASES[case]
    reach, root = rooted_reach(tmp_path)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8", newline="")
    before = (root / rel).read_bytes()
    read = await reach.invoke("read_file", {"path": rel})
    assert read.ok and "[REDACTED]" in read.content["content"], read
    edited = read.content["content"].replace("db.local", "db2.local")
    r = await reach.invoke("write_file", {"path": rel, "content": edited, "mode": "overwrite"})
    assert not r.ok and r.error.code == "invalid_arguments", (case, r)
    assert "shows as [REDACTED]" in r.error.message and "Nothing was written" in r.error.message
    assert (root / rel).read_bytes() == before


async def test_new_content_without_the_mask_replaces_the_file(tmp_path: Path) -> None:
    rel, text = CASES["yaml plain"]
    reach, root = rooted_reach(tmp_path)
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_text(text, encoding="utf-8")
    r = await reach.invoke("write_file", {"path": rel, "content": "default:\n  password: new-one\n",
                                          "mode": "overwrite"})
    assert r.ok, r.error
    assert (root / rel).read_text() == "default:\n  password: new-one\n"


@pytest.mark.parametrize("rel", ["README.md", "config/database.yml", "notes/todo.txt"])
async def test_the_mask_may_be_written_where_it_stands_for_nothing(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text("host: db.local\n", encoding="utf-8")  # no secret in it
    text = "reach shows secrets as [REDACTED]\n"
    r = await reach.invoke("write_file", {"path": rel, "content": text, "mode": "overwrite"})
    assert r.ok, r.error
    r = await reach.invoke("write_file", {"path": "new/" + rel, "content": text})
    assert r.ok, r.error
    assert (root / "new" / rel).read_text() == text


async def test_append_and_allow_secret_files_are_unchanged(tmp_path: Path) -> None:
    rel, text = CASES["properties"]
    reach, root = rooted_reach(tmp_path)
    (root / rel).write_text(text, encoding="utf-8")
    r = await reach.invoke("write_file", {"path": rel, "content": "# was [REDACTED]\n", "mode": "append"})
    assert r.ok, r.error
    assert (root / rel).read_text() == text + "# was [REDACTED]\n"
    reach, root = rooted_reach(tmp_path / "open", allow_secret_files=True)
    (root / rel).write_text(text, encoding="utf-8")
    r = await reach.invoke("write_file", {"path": rel, "content": "a=[REDACTED]\n", "mode": "overwrite"})
    assert r.ok, r.error
