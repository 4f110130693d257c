"""Credentials in git's config files are shown masked, the rest of the file as it is.

``git clone https://user:TOKEN@github.com/o/r`` leaves the token in ``.git/config``; CI
adds ``[http] extraheader = AUTHORIZATION: basic ...``. Reading version-control metadata is
allowed (the remotes and branches answer honest questions), so the file is read with those
values replaced by ``[REDACTED]`` (``reach_files/gitcreds.py``), and a text search looks at
the masked text, so it can neither return a token nor find one piece by piece. Before, every
variant here handed the token out in clear.

Families: where the config lives (``.git/config``, submodules, worktrees, bare
repositories, ``.gitmodules``, ``~/.gitconfig``, XDG, an ``[include]``-d file of any name),
how the credential is written (http/https/ssh/ftp userinfo, token as user name, ``insteadOf``
headers, ``pushurl``, upper-case keys and schemes, tabs, quotes, CRLF, a value continued on
the next line, ``extraheader``, ``smtpPass``, an inline credential helper), and pages of a
big config cut across a token. Honest: configs without credentials read byte for byte,
``ssh://git@`` keeps its user, and files that only mention a URL with a password (a README)
are not touched (a configuration file such as ``alembic.ini`` is masked by its own rules:
test_files_config_passwords.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import rooted_reach

TOKEN = "ghp_Zq8Xv2Lm9Kt4Rw7Yp3Nb6Hc1Jd5Fs0GaQe"
HEAD = '[core]\n\trepositoryformatversion = 0\n\tbare = false\n'


def _pieces(secret: str, width: int = 6) -> list[str]:
    return [secret[i:i + width] for i in range(len(secret) - width + 1)]


def _leaks(text: str, secret: str = TOKEN) -> list[str]:
    return [p for p in _pieces(secret) if p in text]


_CREDENTIALS: dict[str, str] = {
    "https user:token": f'[remote "origin"]\n\turl = https://alice:{TOKEN}@github.com/o/r.git\n',
    "http user:token": f'[remote "origin"]\n\turl = http://alice:{TOKEN}@git.example.com/o/r.git\n',
    "token as user": f'[remote "origin"]\n\turl = https://{TOKEN}@github.com/o/r.git\n',
    "x-access-token": f'[remote "origin"]\n\turl = https://x-access-token:{TOKEN}@github.com/o/r.git\n',
    "token:x-oauth-basic": f'[remote "origin"]\n\turl = https://{TOKEN}:x-oauth-basic@github.com/o/r.git\n',
    "ssh user:password": f'[remote "origin"]\n\turl = ssh://deploy:{TOKEN}@git.example.com:2222/o/r.git\n',
    "ftp userinfo": f'[remote "mirror"]\n\turl = ftps://u:{TOKEN}@files.example.com/r.git\n',
    "upper-case scheme": f'[remote "origin"]\n\tURL = HTTPS://ALICE:{TOKEN}@GITHUB.COM/o/r.git\n',
    "pushurl": f'[remote "origin"]\n\turl = https://github.com/o/r.git\n\tpushurl = https://u:{TOKEN}@github.com/o/r\n',
    "PushURL mixed case": f'[remote "origin"]\n\tPushURL = https://u:{TOKEN}@github.com/o/r\n',
    "insteadOf header": f'[url "https://u:{TOKEN}@github.com/"]\n\tinsteadOf = https://github.com/\n',
    "pushInsteadOf header": f'[url "https://{TOKEN}@github.com/"]\n\tpushInsteadOf = git@github.com:\n',
    "insteadOf value": f'[url "https://github.com/"]\n\tinsteadOf = https://u:{TOKEN}@mirror.example/\n',
    "extraheader basic": f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {TOKEN}\n',
    "extraHeader bearer": f'[http]\n\textraHeader = Authorization: Bearer {TOKEN}\n',
    "EXTRAHEADER upper": f'[HTTP]\n\tEXTRAHEADER = AUTHORIZATION: basic {TOKEN}\n',
    "extraheader no spaces": f'[http]\nextraheader=AUTHORIZATION: basic {TOKEN}\n',
    "extraheader tabs": f'[http]\n\t\textraheader\t=\tAUTHORIZATION:\tbasic\t{TOKEN}\n',
    "extraheader quoted": f'[http]\n\textraheader = "Authorization: token {TOKEN}"\n',
    "old-style http section": f'[http.https://github.com/]\n\textraheader = AUTHORIZATION: basic {TOKEN}\n',
    "quoted url": f'[remote "origin"]\n\turl = "https://u:{TOKEN}@github.com/o/r.git"\n',
    "crlf": f'[remote "origin"]\r\n\turl = https://u:{TOKEN}@github.com/o/r.git\r\n',
    "continued value": f'[remote "origin"]\n\turl = https://u:{TOKEN[:17]}\\\n{TOKEN[17:]}@github.com/o/r.git\n',
    "continued extraheader": f'[http]\n\textraheader = AUTHORIZATION: \\\nbasic {TOKEN}\n',
    "password with @": f'[remote "origin"]\n\turl = https://u:{TOKEN[:10]}@{TOKEN[10:]}@github.com/o/r.git\n',
    "percent-encoded": f'[remote "origin"]\n\turl = https://u%40corp:{TOKEN}%21@github.com/o/r.git\n',
    "helper prints password": ('[credential]\n\thelper = store\n\thelper = '
                               f'"!f() {{ echo username=bot; echo password={TOKEN}; }}; f"\n'),
    "smtpPass": f'[sendemail]\n\tsmtpServer = smtp.example.com\n\tsmtpPass = {TOKEN}\n',
    "lfs url": f'[lfs]\n\turl = https://u:{TOKEN}@lfs.example.com/o/r\n',
    "branch remote url": f'[branch "main"]\n\tremote = https://u:{TOKEN}@github.com/o/r.git\n',
    "http proxy": f'[http]\n\tproxy = http://proxyuser:{TOKEN}@proxy.corp:3128\n',
    "credential section url": f'[credential "https://u:{TOKEN}@github.com"]\n\tusername = u\n',
    "submodule url": f'[submodule "lib"]\n\turl = https://u:{TOKEN}@github.com/o/lib.git\n',
    "# and ? in a quoted password": f'[remote "origin"]\n\turl = "https://u:{TOKEN[:9]}#?{TOKEN[9:]}@github.com/r"\n',
    "password in a comment": f'[remote "origin"]\n\turl = https://u:{TOKEN[:9]}#{TOKEN[9:]}@github.com/r\n',
    "cr-only lines": f'[http]\r\textraheader = AUTHORIZATION: basic {TOKEN}\r[core]\r',
    "dotted key": f'[http]\n\thttp.extraHeader = AUTHORIZATION: basic {TOKEN}\n',
    "token in query": f'[remote "origin"]\n\turl = https://gitlab.example/o/r.git?private_token={TOKEN}\n',
}

_PLACES = [".git/config", ".git/modules/lib/config", ".git/modules/a/modules/b/config", ".git/config.worktree",
           ".git/worktrees/feature/config.worktree", "site.git/config", "sub/.GIT/config", ".gitconfig",
           ".config/git/config", "home/.gitconfig-work", "creds.inc", "sub/.git/config"]


def _put(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    if rel == "site.git/config":  # a bare repository: a git directory by its contents
        (root / "site.git" / "HEAD").write_text("ref: refs/heads/main\n")
        (root / "site.git" / "objects").mkdir()
        (root / "site.git" / "refs").mkdir()


async def _read_all(reach: Any, rel: str, max_bytes: int | None = None) -> tuple[str, int]:
    """The file page by page: the text shown and how many values were masked."""
    shown, masked, offset = [], 0, 0
    while True:
        args: dict[str, Any] = {"path": rel, "offset": offset}
        if max_bytes:
            args["max_bytes"] = max_bytes
        r = await reach.invoke("read_file", args)
        assert r.ok, (rel, r.error)
        shown.append(r.content["content"])
        masked += r.content.get("redacted", 0)
        if not r.content.get("truncated"):
            return "".join(shown), masked
        offset = r.content["next_offset"]


@pytest.mark.parametrize("kind", sorted(_CREDENTIALS))
async def test_a_credential_in_git_config_is_masked(tmp_path: Path, kind: str) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, ".git/config", HEAD + _CREDENTIALS[kind])
    text, masked = await _read_all(reach, ".git/config")
    assert not _leaks(text), (kind, text)
    assert masked >= 1 and "[REDACTED]" in text
    assert "repositoryformatversion = 0" in text  # the rest is the file as it is
    r = await reach.invoke("read_file", {"path": ".git/config"})
    assert "[REDACTED]" in r.content["note"] and "allow_secret_files" in r.content["note"]
    for piece in (TOKEN, TOKEN[:8], TOKEN[-8:], TOKEN[12:20]):  # no search finds it, whole or piece by piece
        r = await reach.invoke("search_files", {"text": piece})
        assert r.ok and r.content["matches"] == [], (kind, piece, r.content)
        r = await reach.invoke("search_files", {"text": piece.upper(), "ignore_case": True})
        assert r.ok and r.content["matches"] == [], (kind, piece, r.content)


@pytest.mark.parametrize("rel", _PLACES)
async def test_every_git_config_file_is_masked(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    body = HEAD + _CREDENTIALS["https user:token"] + _CREDENTIALS["extraheader basic"]
    _put(root, rel, body)
    text, masked = await _read_all(reach, rel)
    assert not _leaks(text) and masked == 2, (rel, text)
    assert 'url = https://[REDACTED]@github.com/o/r.git' in text
    assert 'extraheader = [REDACTED]' in text
    r = await reach.invoke("search_files", {"text": "github.com"})
    assert r.ok and r.content["matches"], r.content
    assert all(TOKEN not in m["text"] for m in r.content["matches"])
    r = await reach.invoke("search_files", {"text": TOKEN[5:15]})
    assert r.ok and r.content["matches"] == [], r.content


async def test_an_included_file_of_any_name_is_masked(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, ".git/config", HEAD + '[include]\n\tpath = ../ci/creds\n')
    _put(root, "ci/creds", f'[http]\n\textraheader = AUTHORIZATION: basic {TOKEN}\n')
    _put(root, "ci/mirror.ini", f'[url "https://bot:{TOKEN}@mirror/"]\n\tinsteadOf = https://github.com/\n')
    for rel in (".git/config", "ci/creds", "ci/mirror.ini"):
        text, _ = await _read_all(reach, rel)
        assert not _leaks(text), (rel, text)
    (root / "link.cfg").symlink_to(root / ".git" / "config")  # by a symlink of another name
    _put(root, ".git/config", HEAD + _CREDENTIALS["token as user"])
    text, masked = await _read_all(reach, "link.cfg")
    assert not _leaks(text) and masked == 1


@pytest.mark.parametrize("page", [13, 31, 64, 257])
async def test_pages_cut_across_a_token_show_none_of_it(tmp_path: Path, page: int) -> None:
    reach, root = rooted_reach(tmp_path)
    branches = "".join(f'[branch "feature-{i}"]\n\tremote = origin\n\tmerge = refs/heads/feature-{i}\n'
                       for i in range(40))
    body = HEAD + branches + _CREDENTIALS["https user:token"] + branches + _CREDENTIALS["continued value"]
    _put(root, ".git/config", body)
    text, masked = await _read_all(reach, ".git/config", max_bytes=max(page, 256))
    assert not _leaks(text)
    offset = 0  # every page, also with odd offsets the model may send
    while offset < len(body):
        r = await reach.invoke("read_file", {"path": ".git/config", "offset": offset, "max_bytes": 256})
        assert r.ok and not _leaks(r.content["content"]), (offset, r.content)
        offset += page


async def test_a_config_bigger_than_a_searched_file_is_masked_page_by_page(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path, max_search_file_bytes=4096)
    filler = "".join(f'[branch "b{i}"]\n\tremote = origin\n' for i in range(600))
    body = HEAD + filler + _CREDENTIALS["https user:token"] + filler + _CREDENTIALS["extraheader basic"]
    _put(root, ".git/config", body)
    assert len(body) > 4096 * 5
    text, masked = await _read_all(reach, ".git/config", max_bytes=1000)
    assert not _leaks(text) and masked >= 2
    assert text.count("[REDACTED]") == masked


_HONEST_CONFIGS = [
    HEAD + '[remote "origin"]\n\turl = git@github.com:o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n',
    HEAD + '[remote "origin"]\n\turl = ssh://git@github.com/o/r.git\n[branch "main"]\n\tremote = origin\n',
    HEAD + '[remote "origin"]\n\turl = https://github.com/o/r.git\n[credential]\n\thelper = store\n',
    HEAD + '[credential "https://github.com"]\n\thelper = \n\thelper = !gh auth git-credential\n',
    HEAD + '[user]\n\tname = Ada\n\temail = ada@example.com\n\tsigningkey = ABCD1234\n[commit]\n\tgpgsign = true\n',
    HEAD + '[submodule "lib"]\n\turl = ../lib.git\n\tactive = true\n[http]\n\tsslVerify = true\n',
    HEAD + '[url "git@github.com:"]\n\tinsteadOf = https://github.com/\n',
]


@pytest.mark.parametrize("body", _HONEST_CONFIGS)
async def test_a_config_without_credentials_reads_byte_for_byte(tmp_path: Path, body: str) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, ".git/config", body)
    r = await reach.invoke("read_file", {"path": ".git/config"})
    assert r.ok and r.content["content"] == body, r.content
    assert "redacted" not in r.content and "note" not in r.content
    text, masked = await _read_all(reach, ".git/config", max_bytes=256)
    assert text == body and masked == 0


_HONEST_FILES = {
    "README.md": f"Clone with `git clone https://user:{TOKEN}@github.com/o/r` if you must.\n",
    "docs/setup.txt": f"extraheader = AUTHORIZATION: basic {TOKEN}\n",
    "notes/config": f"url = https://u:{TOKEN}@example.com\n",
}


@pytest.mark.parametrize("rel", sorted(_HONEST_FILES))
async def test_files_that_are_not_git_config_are_not_touched(tmp_path: Path, rel: str) -> None:
    """Only git's config (by name or by its sections) is masked this way; a document keeps its text."""
    reach, root = rooted_reach(tmp_path)
    _put(root, rel, _HONEST_FILES[rel])
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok and r.content["content"] == _HONEST_FILES[rel] and "redacted" not in r.content
    r = await reach.invoke("search_files", {"text": TOKEN[:10]})
    assert [m["path"] for m in r.content["matches"]] == [rel]


async def test_allow_secret_files_shows_git_credentials(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path, allow_secret_files=True)
    body = HEAD + _CREDENTIALS["https user:token"]
    _put(root, ".git/config", body)
    r = await reach.invoke("read_file", {"path": ".git/config"})
    assert r.ok and r.content["content"] == body and "redacted" not in r.content
    r = await reach.invoke("search_files", {"text": TOKEN})
    assert [m["path"] for m in r.content["matches"]] == [".git/config"]


async def test_writes_to_git_config_stay_refused(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, ".git/config", HEAD)
    for mode in ("overwrite", "append"):
        r = await reach.invoke("write_file", {"path": ".git/config", "mode": mode,
                                              "content": "[core]\n\tfsmonitor = touch /tmp/pwned\n"})
        assert not r.ok and "allow_vcs_writes" in r.error.message
    assert (root / ".git" / "config").read_text() == HEAD
