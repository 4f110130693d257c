"""Secret stores are not handed to the model; Windows device names are ordinary files on POSIX.

* ``.env``/``.envrc``/``.env.*``, ``.netrc``, ``.pgpass``, ``.git-credentials``,
  ``.aws/credentials`` and private keys (``id_rsa``, ``id_ed25519``, ``*.pem``, ``*.key``)
  are neither read by ``read_file`` nor searched by ``search_files``' text search, in
  every spelling ``protect.fold`` knows (case, NFKC, invisible characters, trailing dots
  and spaces, look-alike letters), through symlinks and hard links too; writes to them are
  refused as well. ``allow_secret_files = true`` opens them.
* Honest files near those names (``.env.example``, ``id_rsa.pub``, ``.ssh/config``,
  ``keys.md``) stay readable and searchable.
* ``aux.py``, ``con.txt``, ``nul``, ``COM1.log`` are read, listed, searched and written on
  POSIX; the rule still calls them devices for Windows (``platform="nt"``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import rooted_reach
from reach_files.protect import device_name

SECRET = "AKIA-TOP-SECRET-4242"


def _put(root: Path, rel: str, text: str = f"TOKEN={SECRET}\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- secret stores

_SECRETS = [
    # .env family, every spelling fold() knows
    ".env", ".ENV", ".Env", ".env.local", ".env.production", ".ENV.Local", ".envrc", ".ENVRC", "app/.env",
    "a/b/.env.test", ".env.", ".env ", ".envrc..", ".env\u200b", "\u200b.env", ".e\u200dnv", "\uff0eenv",
    ".\uff45nv", ".\u0435nv", ".en\u03bd", ".env.example.local", ".env.d/.env", ".env/.env.local",
    ".env.d/db.txt", ".env.local/notes.txt", ".envrc/x.txt",
    # netrc, pgpass, git credentials
    ".netrc", ".NETRC", "_netrc", ".netrc.", "home/.netrc", ".pgpass", ".PGPASS", ".pg\u0440ass",
    ".git-credentials", ".Git-Credentials", ".git-credentials\u200b",
    # AWS shared credentials
    ".aws/credentials", ".AWS/Credentials", "home/.aws/credentials", ".\u0430ws/credentials",
    ".aws./credentials.",
    # private keys
    "id_rsa", "ID_RSA", ".ssh/id_rsa", ".ssh/id_ed25519", "id_ecdsa", "id_dsa", "id_ed25519_sk",
    "\u0456d_rsa", "id_rs\u0430", "\uff49\uff44_rsa", "id_rsa.", "id_rsa\u200b",
    "server.key", "tls/site.KEY", "site.key.", "a.k\u0435y",
]


async def test_secret_stores_are_not_read_or_searched(tmp_path: Path) -> None:
    """Every spelling at once, each in a folder of its own (one Reach: the family stays fast)."""
    reach, root = rooted_reach(tmp_path)
    for i, rel in enumerate(_SECRETS):
        _put(root, f"case{i}/{rel}")
    read = []
    for i, rel in enumerate(_SECRETS):
        r = await reach.invoke("read_file", {"path": f"case{i}/{rel}"})
        if r.ok or r.error.code != "invalid_arguments" or "allow_secret_files" not in r.error.message \
                or SECRET in r.error.message:
            read.append(rel)
    assert read == []
    for args in ({"text": SECRET}, {"text": "token", "ignore_case": True}, {"text": SECRET, "pattern": "**"}):
        r = await reach.invoke("search_files", args)
        assert r.ok, r.error
        assert SECRET not in str(r.content), (args, r.content)
        assert f"{len(_SECRETS)} secret" in r.content["note"]


@pytest.mark.parametrize("rel", [".env", ".aws/credentials", "id_rsa", "server.key", ".netrc", ".env.local"])
async def test_secret_stores_are_not_read_through_a_symlink(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, rel)
    (root / "innocent.txt").symlink_to(root / rel)
    (root / "rel-link.md").symlink_to(rel)
    folder = rel.split("/")[0]
    if "/" in rel:
        (root / "dir-link").symlink_to(root / folder)
    for path in ["innocent.txt", "rel-link.md"] + (["dir-link/" + rel.split("/", 1)[1]] if "/" in rel else []):
        r = await reach.invoke("read_file", {"path": path})
        assert not r.ok and r.error.code == "invalid_arguments", (path, r.content)
        assert SECRET not in r.error.message
    r = await reach.invoke("search_files", {"text": SECRET})
    assert r.ok and SECRET not in str(r.content)


async def test_secret_store_hard_linked_under_an_honest_name_is_not_read(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path)
    env = _put(root, ".env")
    os.link(env, root / "notes.txt")
    r = await reach.invoke("read_file", {"path": "notes.txt"})
    assert not r.ok and r.error.code == "invalid_arguments" and "hard link" in r.error.message
    r = await reach.invoke("search_files", {"text": SECRET})
    assert r.ok and SECRET not in str(r.content)


async def test_text_search_says_it_skipped_secret_stores(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, ".env")
    _put(root, ".ssh/id_rsa")
    _put(root, "app/settings.py", f"TOKEN = env('TOKEN')  # {SECRET[:4]}\n")
    r = await reach.invoke("search_files", {"text": "TOKEN"})
    assert r.ok
    assert [m["path"] for m in r.content["matches"]] == ["app/settings.py"]
    assert "2 secret" in r.content["note"] and "allow_secret_files" in r.content["note"]


@pytest.mark.parametrize("rel", [".netrc", "id_rsa", ".ssh/id_ed25519", ".aws/credentials", ".git-credentials",
                                 ".pgpass", "server.pem", "site.key", "\u0456d_rsa"])
async def test_secret_stores_are_not_written(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    for mode in ("create", "overwrite", "append"):
        r = await reach.invoke("write_file", {"path": rel, "content": "machine x login a password b", "mode": mode})
        assert not r.ok and r.error.code == "invalid_arguments", (rel, mode)
        assert "allow_secret_files" in r.error.message
    assert not (root / rel).exists()


_KEYS = [
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n",
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n",
    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----\n",
    "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkq\n-----END ENCRYPTED PRIVATE KEY-----\n",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----\n",
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
    "\ufeff-----BEGIN RSA PRIVATE KEY-----\r\nMIIEpAIBAAKCAQEA\r\n-----END RSA PRIVATE KEY-----\r\n",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n-----END CERTIFICATE-----\n"
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n",  # a combined chain + key
    "# deploy notes\n" + "line of notes\n" * 2000 + "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n",  # deep inside
]


@pytest.mark.parametrize("name", ["deploy_key", "notes.txt", "backup", "cert-and-key.crt", "server.pem",
                                  "tls/privkey.PEM", "x.\uff50\uff45\uff4d"])
@pytest.mark.parametrize("body", range(len(_KEYS)))
async def test_a_private_key_is_not_read_or_searched_whatever_its_name(tmp_path: Path, name: str,
                                                                        body: int) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, name, _KEYS[body] + f"# {SECRET}\n")
    r = await reach.invoke("read_file", {"path": name})
    assert not r.ok and r.error.code == "invalid_arguments" and "allow_secret_files" in r.error.message
    r = await reach.invoke("read_file", {"path": name, "offset": 20, "max_bytes": 300})
    assert not r.ok and r.error.code == "invalid_arguments"
    r = await reach.invoke("search_files", {"text": SECRET})
    assert r.ok and r.content["matches"] == [] and "1 secret" in r.content["note"]


_PUBLIC = [
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n-----END CERTIFICATE-----\n",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----\n",
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQENBF\n-----END PGP PUBLIC KEY BLOCK-----\n",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI user@host\n",
    "Never commit a PRIVATE KEY; the BEGIN line starts with five dashes.\n",
]


@pytest.mark.parametrize("name", ["site.crt", "ca-bundle.pem", "tls/fullchain.PEM"])
@pytest.mark.parametrize("body", _PUBLIC)
async def test_certificates_and_public_keys_are_read(tmp_path: Path, body: str, name: str) -> None:
    """A ``.pem`` is read when it holds no private key: certificate chains are what
    people debug TLS with (a key inside is refused by content, above)."""
    reach, root = rooted_reach(tmp_path)
    _put(root, name, body)
    r = await reach.invoke("read_file", {"path": name})
    assert r.ok and r.content["content"] == body
    r = await reach.invoke("search_files", {"text": body[:12]})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [name]


_HONEST = [
    ".env.example", ".env.sample", ".env.template", ".ENV.EXAMPLE", "app/.env.example", ".env.dist",
    "id_rsa.pub", ".ssh/id_ed25519.pub", ".ssh/config", ".ssh/known_hosts", "cert.crt", "keys.md",
    "key.txt", "pem.txt", "monkey.txt", "netrc.md", "credentials.md", "docs/credentials.md",
    "environment.md", ".environment", "env/settings.md", "dotenv.md", "x.envy", "keyboard.py", "id_rsa_notes.md",
    "aws/credentials", ".awsx/credentials", "credentials/aws.md",
]


@pytest.mark.parametrize("rel", _HONEST)
async def test_honest_files_near_secret_names_are_read_and_searched(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    _put(root, rel, "EXAMPLE_TOKEN=changeme\n")
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok, (rel, r.error)
    assert r.content["content"] == "EXAMPLE_TOKEN=changeme\n"
    r = await reach.invoke("search_files", {"text": "changeme"})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [rel]


async def test_allow_secret_files_opens_reads_searches_and_writes(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path, allow_secret_files=True)
    paths = [".env", ".envrc", ".aws/credentials", "id_rsa", ".netrc", "server.key"]
    _put(root, "deploy_key", _KEYS[0])
    assert (await reach.invoke("read_file", {"path": "deploy_key"})).ok
    for rel in paths:
        _put(root, rel)
        r = await reach.invoke("read_file", {"path": rel})
        assert r.ok and SECRET in r.content["content"], (rel, r.error)
        r = await reach.invoke("write_file", {"path": rel, "content": "X=1\n", "mode": "overwrite"})
        assert r.ok, (rel, r.error)
        assert (root / rel).read_text() == "X=1\n"
    r = await reach.invoke("search_files", {"text": "X=1"})
    assert r.ok and sorted(m["path"] for m in r.content["matches"]) == sorted(paths)


async def test_allow_env_writes_keeps_its_released_meaning(tmp_path: Path) -> None:
    """The released setting lets write_file change .env files, and nothing more."""
    reach, root = rooted_reach(tmp_path, allow_env_writes=True)
    assert (await reach.invoke("write_file", {"path": ".env", "content": "A=1\n"})).ok
    r = await reach.invoke("read_file", {"path": ".env"})
    assert not r.ok and "allow_secret_files" in r.error.message
    r = await reach.invoke("write_file", {"path": "id_rsa", "content": "k"})
    assert not r.ok and "allow_secret_files" in r.error.message


async def test_listing_shows_secret_store_names_but_no_content(tmp_path: Path) -> None:
    """A name is not a secret: the model may tell the user the file exists and is refused."""
    reach, root = rooted_reach(tmp_path)
    _put(root, ".env")
    r = await reach.invoke("list_dir", {})
    assert r.ok and [e["name"] for e in r.content["entries"]] == [".env"]
    assert SECRET not in str(r.content)


# --------------------------------------------------------------------------- Windows device names

_DEVICES = ["aux.py", "con.txt", "nul", "NUL", "COM1.log", "com9.txt", "prn", "PRN.md", "LPT1", "lpt3.txt",
            "AUX", "aux.c", "CON", "conin$", "CONOUT$", "con.tar.gz", "Con.Txt", "nul.", "CON .txt",
            "pkg/aux/__init__.py", "con/notes.md", "COM\u00b9", "lpt\u00b2.txt"]


@pytest.mark.parametrize("rel", _DEVICES, ids=range(len(_DEVICES)))
async def test_windows_device_names_are_ordinary_files_on_posix(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    r = await reach.invoke("write_file", {"path": rel, "content": "print('hello')\n"})
    assert r.ok, (rel, r.error)
    assert (root / rel).read_text() == "print('hello')\n"
    r = await reach.invoke("write_file", {"path": rel, "content": "# more\n", "mode": "append"})
    assert r.ok, (rel, r.error)
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok and r.content["content"] == "print('hello')\n# more\n", (rel, r.error)
    parent = str(Path(rel).parent)
    r = await reach.invoke("list_dir", {"path": parent})
    assert r.ok and Path(rel).name in [e["name"] for e in r.content["entries"]], (rel, r.error)
    r = await reach.invoke("search_files", {"text": "hello"})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [rel], (rel, r.content)
    r = await reach.invoke("search_files", {"pattern": "**", "path": parent})
    assert r.ok and r.content["files"], (rel, r.content)


@pytest.mark.parametrize("name", _DEVICES + ["CONIN$", "com0", "LPT9.log", "aux.py.bak", "NUL "])
def test_device_names_are_devices_on_windows_only(name: str) -> None:
    parts = name.split("/")
    assert any(device_name(p, platform="nt") for p in parts), name
    assert not any(device_name(p, platform="posix") for p in parts), name


@pytest.mark.parametrize("name", ["console.txt", "CONFIG", "nullable.md", "com10.txt", "auxiliary", "lpt.md",
                                  "prn_notes", "conin.txt", "aux_.py", "a.aux", "xcon"])
def test_names_that_only_start_like_devices_are_not_devices_anywhere(name: str) -> None:
    assert device_name(name, platform="nt") is False
    assert device_name(name, platform="posix") is False


def test_device_rule_defaults_to_this_platform() -> None:
    assert device_name("aux.py") is (os.name == "nt")
