"""Secret stores are files, and ``*.key`` is judged by what the file holds.

* A ``*.key`` file is read only when it is binary, and then only described (size and
  type, never its bytes): a Keynote document (``talk.key``, a zip package) is that. A
  ``*.key`` holding text is refused whatever the text: PEM keys, and the keys that carry
  no ``BEGIN ... PRIVATE KEY`` line (Rails' ``master.key``, WireGuard, OpenVPN static
  keys, age, a JWK). Writes to ``*.key`` stay refused by name, as for ``*.pem``.
* A *folder* named ``.env`` (a virtualenv: ``python -m venv .env``) or ``*.key`` (an old
  Keynote bundle) holds ordinary files, read and searched like any; the ``.env`` files
  themselves (``.env``, ``.env.local``, ``.envrc`` ...) stay refused wherever they are,
  in every spelling ``protect.fold`` knows, and so do the files in other .env-named
  folders (``.env.d/``: env files under any name; test_files_secrets.py). Writing into such a folder stays refused
  (the .env write guard: code planted in a virtualenv runs on its next use).
"""

from __future__ import annotations

import base64
import zipfile
from pathlib import Path

import pytest
from conftest import rooted_reach

SECRET = "AKIA-TOP-SECRET-4242"


def _put(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def _keynote(path: Path) -> None:
    """A Keynote document as Keynote 6+ saves it: a zip of ``Index/*.iwa`` and previews."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("Index/Document.iwa", b"\x00\x01iwa" + SECRET.encode() + b"\x00" * 64)
        z.writestr("Metadata/Properties.plist", b"bplist00\x00\x01")
        z.writestr("preview.jpg", b"\xff\xd8\xff\xe0" + b"\x00" * 32)


# --------------------------------------------------------------------------- *.key by content

_KEYNOTE_NAMES = ["talk.key", "Talk.KEY", "slides/Q3 review.key", "talk.key.", "talk.k\u0435y", "talk.\uff4bey",
                  "北京/演示.key"]


@pytest.mark.parametrize("name", _KEYNOTE_NAMES)
async def test_a_keynote_document_is_described_not_refused(tmp_path: Path, name: str) -> None:
    reach, root = rooted_reach(tmp_path)
    _keynote(root / name)
    r = await reach.invoke("read_file", {"path": name})
    assert r.ok, (name, r.error)
    assert r.content["binary"] is True and r.content["type"].startswith("application/zip")
    assert r.content["size"] == (root / name).stat().st_size
    assert SECRET not in str(r.content)  # described, never shown
    r = await reach.invoke("search_files", {"text": "iwa"})
    assert r.ok and r.content["matches"] == [] and "note" not in r.content, r.content  # binary: not a secret skipped
    r = await reach.invoke("list_dir", {"path": str(Path(name).parent)})
    assert r.ok and Path(name).name in [e["name"] for e in r.content["entries"]]


_WIREGUARD = base64.b64encode(bytes(range(32))).decode() + "\n"
_TEXT_KEYS = [
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n",
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n",
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
    "9f86d081884c7d659a2feaa0c55ad015\n",  # Rails config/master.key: 32 hex digits, no armour
    _WIREGUARD,  # wg genkey
    "-----BEGIN OpenVPN Static key V1-----\ne5f8a7b6c5d4\n-----END OpenVPN Static key V1-----\n",
    "AGE-SECRET-KEY-1QQPQZRY2JXQ6E9CJXZ0L8YYAKQ3G0QW3\n",
    '{"kty":"EC","crv":"P-256","d":"870MB6gfuTJ4HtUnUvYMyJpr5eUZNP4Bk43bVdj3eAE"}\n',
    "hunter2\n",
    "",  # empty: nothing to hand over, still a key file by name
    "\ufeffsecret-with-bom\n",
]


@pytest.mark.parametrize("name", ["server.key", "tls/site.KEY", "site.key.", "a.k\u0435y", "config/master.key",
                                  "wg0.\uff4bey"])
async def test_a_key_file_holding_text_is_not_read_or_searched(tmp_path: Path, name: str) -> None:
    reach, root = rooted_reach(tmp_path)
    for body, text in enumerate(_TEXT_KEYS):
        _put(root, f"case{body}/{name}", text + f"# {SECRET}\n")
    read = []
    for body in range(len(_TEXT_KEYS)):
        for args in ({"path": f"case{body}/{name}"}, {"path": f"case{body}/{name}", "offset": 3, "max_bytes": 10}):
            r = await reach.invoke("read_file", args)
            if r.ok or r.error.code != "invalid_arguments" or "allow_secret_files" not in r.error.message \
                    or SECRET in r.error.message:
                read.append((body, args))
    assert read == []
    r = await reach.invoke("search_files", {"text": SECRET})
    assert r.ok and r.content["matches"] == [] and f"{len(_TEXT_KEYS)} secret" in r.content["note"], r.content


async def test_a_key_file_is_refused_through_a_link_with_an_honest_name(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, "tls/server.key", f"{SECRET}\n")
    (root / "notes.txt").symlink_to(root / "tls/server.key")
    (root / "talk.key").symlink_to(root / "tls/server.key")
    for path in ("notes.txt", "talk.key"):
        r = await reach.invoke("read_file", {"path": path})
        assert not r.ok and r.error.code == "invalid_arguments" and SECRET not in r.error.message, path


async def test_a_binary_key_is_described_never_shown(tmp_path: Path) -> None:
    """A DER key or raw key bytes in ``*.key``: binary files are described (size, type) and
    never searched, so none of their bytes reach the model."""
    der = bytes.fromhex("302e020100300506032b657004220420") + bytes(range(32))
    reach, root = rooted_reach(tmp_path)
    _put(root, "ed25519.key", der)
    _put(root, "raw.key", bytes(range(255, 223, -1)))
    for name, data in (("ed25519.key", der), ("raw.key", bytes(range(255, 223, -1)))):
        r = await reach.invoke("read_file", {"path": name})
        assert r.ok and r.content["binary"] is True and r.content["size"] == len(data)
        assert "content" not in r.content


@pytest.mark.parametrize("name", ["talk.key", "site.KEY", "a.k\u0435y", "deck.key/Index.zip"])
async def test_key_files_are_still_not_written(tmp_path: Path, name: str) -> None:
    reach, root = rooted_reach(tmp_path)
    for mode in ("create", "overwrite", "append"):
        r = await reach.invoke("write_file", {"path": name, "content": "x", "mode": mode})
        assert not r.ok and r.error.code == "invalid_arguments" and "allow_secret_files" in r.error.message
    assert not (root / name).exists()


# --------------------------------------------------------------------------- folders hold ordinary files

_FOLDERS = [".env", ".ENV", ".Env", ".env.", ".env ", "\uff0eenv", ".\u0435nv", ".e\u200dnv", "app/.env",
            "deck.key", "Old Talk.KEY", "slides.k\u0435y"]
_INSIDE = ["lib/python3.12/site.py", "pyvenv.cfg", "bin/activate", "Index.zip", "notes.txt"]


async def test_files_inside_folders_named_like_env_or_key_files_are_read_and_searched(tmp_path: Path) -> None:
    """A virtualenv named ``.env`` and a Keynote bundle named ``talk.key`` hold ordinary files."""
    reach, root = rooted_reach(tmp_path)
    paths = [f"case{i}/{folder}/{inside}" for i, folder in enumerate(_FOLDERS) for inside in _INSIDE]
    for rel in paths:
        _put(root, rel, f"print('needle')  # {rel}\n")
    refused = []
    for rel in paths:
        r = await reach.invoke("read_file", {"path": rel})
        if not r.ok or r.content["content"] != f"print('needle')  # {rel}\n":
            refused.append(rel)
    assert refused == []
    r = await reach.invoke("search_files", {"text": "needle", "max_results": 50})
    found = {m["path"] for m in r.content["matches"]}
    assert r.ok and "secret" not in r.content.get("note", "")
    assert len(found) == 50 and found <= set(paths)
    for i, folder in enumerate(_FOLDERS):
        r = await reach.invoke("search_files", {"text": "needle", "path": f"case{i}"})  # walking through it
        assert r.ok and len(r.content["matches"]) == len(_INSIDE), (folder, r.content)
        r = await reach.invoke("search_files", {"text": "needle", "path": f"case{i}/{folder}/bin"})  # from inside
        assert r.ok and [m["path"] for m in r.content["matches"]] == [f"case{i}/{folder}/bin/activate"], r.content


_ENV_FILES_INSIDE = [".env/.env", ".env/.env.local", ".env/.ENVRC", "deck.key/.env", "venv/.env.production",
                     ".env.d/.env.\u200btest", ".env/\uff0eenv", ".env/lib/.netrc", ".env/.aws/credentials",
                     ".env/id_rsa", "talk.key/server.key"]


@pytest.mark.parametrize("rel", _ENV_FILES_INSIDE)
async def test_secret_files_inside_those_folders_stay_refused(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, rel, f"TOKEN={SECRET}\n")
    r = await reach.invoke("read_file", {"path": rel})
    assert not r.ok and r.error.code == "invalid_arguments" and "allow_secret_files" in r.error.message, rel
    r = await reach.invoke("search_files", {"text": SECRET})
    assert r.ok and r.content["matches"] == [] and "1 secret" in r.content["note"]


async def test_a_file_inside_a_folder_named_env_is_read_through_a_symlinked_folder(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, ".env/lib/site.py", "import os\n")
    (root / "venv").symlink_to(root / ".env")
    r = await reach.invoke("read_file", {"path": "venv/lib/site.py"})
    assert r.ok and r.content["content"] == "import os\n"
    (root / "innocent.txt").symlink_to(root / ".env/lib/site.py")
    r = await reach.invoke("read_file", {"path": "innocent.txt"})
    assert r.ok and r.content["content"] == "import os\n"


@pytest.mark.parametrize("rel", [".env/lib/python3.12/site-packages/evil.pth", ".ENV/bin/activate", "\uff0eenv/x.py"])
async def test_writing_into_a_folder_named_env_stays_refused(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    r = await reach.invoke("write_file", {"path": rel, "content": "import os; os.system('id')\n"})
    assert not r.ok and r.error.code == "invalid_arguments" and "allow_env_writes" in r.error.message
    assert not (root / rel).exists()
