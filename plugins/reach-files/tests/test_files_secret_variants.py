"""Red team on the secret-store guard: the variants test_files_secrets.py does not hold.

Families (each variant against read_file, search_files' text search and write_file):

* **copies** of a secret store under a backup or editor name (``.netrc.bak``, ``.pgpass~``,
  ``#.env#``, ``.aws/credentials.orig``): the same secrets under another name;
* **.env spellings** with another separator (``.env_local``, ``.env-prod``, ``.envrc.local``);
* **credential stores of common tools** (``.npmrc``, ``.pypirc``, ``.docker/config.json``,
  ``.kube/config``, git's XDG ``credentials``, gh, cargo, gcloud, azure, terraform ...);
* **private keys in other armour**: the SSH2 (RFC 4716) block, and PEM keys base64-encoded
  as Kubernetes secrets and Helm values carry them (``tls.key: LS0tLS1CRUdJTi...``);
* **pages of a big file**: a file larger than ``max_search_file_bytes`` is not scanned
  whole, so a page that starts after the BEGIN line, or cuts it in two, handed out the key.

Next to them, honest files: templates (``.env-example``), configs that only look close
(``.npmrc.example``, ``.docker/daemon.json``, ``kube/config``), certificates and public
keys in base64, and a big log read page by page to its end.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import reach_files.plugin

from reach_core import Reach

SECRET = "hunter2-TOP-SECRET-7731"


def _reach(tmp_path: Path, **settings: Any) -> tuple[Reach, Path]:
    root = tmp_path / "root"
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {"reach": {"data_dir": str(tmp_path / "data")},
                              "plugins": {"reach-files": {"roots": [str(root)], **settings}}}
    return Reach(config, plugins=[("reach-files", reach_files.plugin)], strict=True), root


def _put(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def _assert_guarded(reach: Reach, root: Path, rel: str, *, by_name: bool = True) -> None:
    """Not read, not searched (and counted in the note), and, when a secret store by its name,
    not written in any mode (a key found by content is refused for reading; writing over it leaks nothing)."""
    r = await reach.invoke("read_file", {"path": rel})
    assert not r.ok, f"read_file handed out {rel}: {r.content}"
    assert r.error.code == "invalid_arguments" and "allow_secret_files" in r.error.message, r.error
    r = await reach.invoke("search_files", {"text": SECRET})
    assert r.ok and SECRET not in str(r.content), r.content
    assert "1 secret" in r.content.get("note", ""), r.content
    if not by_name:
        return
    before = (root / rel).read_bytes()
    for mode in ("overwrite", "append"):
        r = await reach.invoke("write_file", {"path": rel, "content": "password=changed\n", "mode": mode})
        assert not r.ok and r.error.code == "invalid_arguments", (rel, mode)
    assert (root / rel).read_bytes() == before


async def _assert_honest(reach: Reach, root: Path, rel: str, body: str) -> None:
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok, (rel, r.error)
    assert r.content["content"] == body
    r = await reach.invoke("search_files", {"text": body.split()[0]})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [rel], r.content


# ------------------------------------------------------------------- copies under other names

_COPIES = [
    ".netrc.bak", ".netrc~", ".netrc.old", ".netrc.orig", ".netrc.save", ".NETRC.BAK", "_netrc.bak",
    ".netrc.1", ".netrc-backup", "#.netrc#", ".pgpass~", ".pgpass.orig", ".pgpass.bak",
    ".git-credentials.bak", ".git-credentials~", ".git-credentials.old",
    ".aws/credentials.bak", ".aws/credentials~", ".aws/credentials.orig", ".aws.bak/credentials",
    ".env~", "#.env#", ".envrc~", ".envrc.bak", ".netrc.bak.", ".pg\u0440ass.bak", ".netrc\u200b.bak",
    ".netrc.swp~", ".netrc.dpkg-old", ".netrc (copy)",
]


@pytest.mark.parametrize("rel", _COPIES)
async def test_a_copy_of_a_secret_store_is_one(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, rel, f"machine api.example.com login ada password {SECRET}\n")
    await _assert_guarded(reach, root, rel)


# ------------------------------------------------------------------- .env with other separators

_ENV_SPELLINGS = [
    ".env_local", ".env-prod", ".env-production", ".ENV_PROD", ".env_test.", ".envrc.local", ".envrc-private",
    ".env\uff3flocal", ".\u0435nv-prod", "app/.env_development", ".env-prod/db.txt", ".env_local.bak",
]


@pytest.mark.parametrize("rel", _ENV_SPELLINGS)
async def test_env_files_with_other_separators_are_secret_stores(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, rel, f"DATABASE_PASSWORD={SECRET}\n")
    await _assert_guarded(reach, root, rel)


# ------------------------------------------------------------------- credential stores of common tools

_STORES = [
    ".npmrc", ".pypirc", ".my.cnf", ".mylogin.cnf", ".vault-token", ".s3cfg", ".boto", ".htpasswd", ".dockercfg",
    ".docker/config.json", ".kube/config", ".config/git/credentials", ".config/gh/hosts.yml",
    ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".terraform.d/credentials.tfrc.json",
    ".config/gcloud/application_default_credentials.json", ".config/gcloud/credentials.db",
    ".config/gcloud/access_tokens.db", ".azure/accessTokens.json", ".azure/msal_token_cache.json",
    ".NPMRC", ".npmrc.bak", ".Docker/Config.JSON", ".kube/config~", "home/.pypirc", ".\uff4epmrc",
    ".kube/config-prod", ".kube/staging.kubeconfig", ".config/hub", ".config/rclone/rclone.conf",
    ".subversion/auth/svn.simple/5671adf2865e267db74f09ba6f872c28", ".config/gh/hosts.yaml",
    ".config/gcloud/legacy_credentials/ada@example.org/adc.json",
]


@pytest.mark.parametrize("rel", _STORES)
async def test_credential_stores_of_common_tools_are_secret_stores(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, rel, f"//registry.example.com/:_authToken={SECRET}\n")
    await _assert_guarded(reach, root, rel)


# ------------------------------------------------------------------- private keys in other armour

_RSA = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAx7nS\n-----END RSA PRIVATE KEY-----\n"
_PEMS = [
    _RSA,
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG\n-----END PRIVATE KEY-----\n",
    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg\n-----END EC PRIVATE KEY-----\n",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
    "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG\n-----END ENCRYPTED PRIVATE KEY-----\n",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----\n",
]


def _b64(text: str, *, urlsafe: bool = False) -> str:
    raw = text.encode()
    return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()


_ARMOURS = [
    "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"ada\"\nP2/56wAAAi4AAAA3\n"
    "---- END SSH2 ENCRYPTED PRIVATE KEY ----\n",
    "---- BEGIN SSH2 PRIVATE KEY ----\nP2/56wAAAi4AAAA3\n---- END SSH2 PRIVATE KEY ----\n",
    *(f"apiVersion: v1\nkind: Secret\ndata:\n  tls.key: {_b64(pem)}\n" for pem in _PEMS),
    f'{{"auths": {{}}, "key": "{_b64(_RSA, urlsafe=True)}"}}\n',
    f"ssl:\n  key: >-\n    {_b64(_PEMS[1])}\n",
    f"KEY_B64={_b64(chr(0xfeff) + _RSA)}\n",  # a byte-order mark first
    f"key = {_b64(_RSA.replace(chr(10), chr(13) + chr(10)))}\n",
]


@pytest.mark.parametrize("body", range(len(_ARMOURS)))
async def test_private_keys_in_other_armour_are_not_handed_out(tmp_path: Path, body: int) -> None:
    reach, root = _reach(tmp_path)
    _put(root, "deploy/values.yaml", _ARMOURS[body] + f"# {SECRET}\n")
    await _assert_guarded(reach, root, "deploy/values.yaml", by_name=False)


# Keys inside something else that is base64-encoded: the PEM block is not where the encoded text
# starts, so it is encoded at another alignment ("-----BEGIN" is not "LS0tLS1CRUdJTi" there). GCP
# service-account JSON (its `private_key` is a PEM) base64-encoded is what Kubernetes secrets and CI
# variables (GOOGLE_CREDENTIALS) carry; also a PEM after 1 or 2 bytes, wrapped 76 to a line,
# base64 of base64 (a Helm `b64enc` of a value that already was), and a PEM URL-encoded.
_SA_JSON = ('{\n  "type": "service_account",\n  "project_id": "p",\n  "private_key_id": "3f2a",\n'
            '  "private_key": "' + _PEMS[1].replace(chr(10), "\\n") + '",\n  "client_email": "a@p.iam.example"\n}\n')


def _wrapped(text: str, width: int = 76, indent: str = "    ") -> str:
    return "\n".join(indent + text[i:i + width] for i in range(0, len(text), width))


_ENCODED_INSIDE = [
    f"apiVersion: v1\nkind: Secret\ndata:\n  key.json: {_b64(_SA_JSON)}\n",
    f"GOOGLE_CREDENTIALS={_b64(_SA_JSON, urlsafe=True)}\n",
    f"creds: |\n{_wrapped(_b64(_SA_JSON))}\n",
    f"a: {_b64('x' + _RSA)}\n",
    f"a: {_b64('xy' + _RSA)}\n",
    f"a: {_b64('key: ' + _PEMS[2])}\n",
    f"a: {_b64(_b64(_RSA))}\n",
    f"a: {_b64(_b64(_SA_JSON))}\n",
    "key=-----BEGIN+RSA+PRIVATE+KEY-----%0AMIIEpAIBAAKCAQEAx7nS%0A-----END+RSA+PRIVATE+KEY-----\n",
    "key=-----BEGIN%20PRIVATE%20KEY-----%0AMIIEvQIBADANBgkqhkiG%0A-----END%20PRIVATE%20KEY-----\n",
    "key=%2D%2D%2D%2D%2DBEGIN%20EC%20PRIVATE%20KEY%2D%2D%2D%2D%2D%0AMHcCAQEEIBkg\n",
]


@pytest.mark.parametrize("body", range(len(_ENCODED_INSIDE)))
async def test_private_keys_encoded_inside_other_text_are_not_handed_out(tmp_path: Path, body: int) -> None:
    reach, root = _reach(tmp_path)
    _put(root, "deploy/values.yaml", _ENCODED_INSIDE[body] + f"# {SECRET}\n")
    await _assert_guarded(reach, root, "deploy/values.yaml", by_name=False)


_PUBLIC_B64 = [
    f"tls.crt: {_b64('-----BEGIN CERTIFICATE-----' + chr(10) + 'MIIDdzCCAl+g' + chr(10))}\n",
    f"pub: {_b64('-----BEGIN PUBLIC KEY-----' + chr(10) + 'MIIBIjANBgkq' + chr(10))}\n",
    f"csr: {_b64('-----BEGIN CERTIFICATE REQUEST-----' + chr(10))}\n",
    "note: LS0tLS1CRUdJTi is how base64 of a PEM line starts\n",
    "ca.json: " + _b64('{"ca": "-----BEGIN CERTIFICATE-----' + chr(10) + 'MIIDdzCCAl+g' + chr(10) + '"}') + "\n",
    f"twice: {_b64(_b64('x-----BEGIN PUBLIC KEY-----' + chr(10) + 'MIIBIjANBgkq' + chr(10)))}\n",
    "doc: the words PRIVATE KEY encoded are " + _b64("the PRIVATE KEY line") + "\n",
    "Never write ---- BEGIN SSH2 in docs without a key name.\n",
]


@pytest.mark.parametrize("body", _PUBLIC_B64)
async def test_certificates_in_base64_stay_readable(tmp_path: Path, body: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, "deploy/tls.yaml", body)
    await _assert_honest(reach, root, "deploy/tls.yaml", body)


# ------------------------------------------------------------------- pages of a big file

_SMALL_SCAN = {"max_search_file_bytes": 4096, "max_read_bytes": 1000}
_FILLER = "2026-12-03 11:00:00 GET /health 200\n" * 400  # 14,400 bytes, past the 4 KiB whole-file scan


def _big_with_key() -> tuple[str, int, int]:
    body = _FILLER + _RSA + f"# {SECRET}\n" + _FILLER
    begin = body.index("-----BEGIN")
    return body, begin, body.index("-----END")


_PAGES = [  # (offset from BEGIN, max_bytes)
    (len("-----BEGIN RSA PRIVATE KEY-----\n"), 20),  # the body alone
    (len("-----BEGIN RSA PRIVATE KEY-----\n"), 1000),  # the body and the END line
    (20, 40),  # the BEGIN line cut in two
    (-15, 30),  # a page that ends inside the BEGIN line
    (-1000, 1000 - 10),  # the page before, ending in the BEGIN line
    (5, 1000),  # from inside the BEGIN line on
    (33, 5),  # five bytes of the key
]


@pytest.mark.parametrize(("shift", "size"), _PAGES)
async def test_no_page_of_a_big_file_hands_out_a_key(tmp_path: Path, shift: int, size: int) -> None:
    reach, root = _reach(tmp_path, **_SMALL_SCAN)
    body, begin, _ = _big_with_key()
    _put(root, "logs/app.log", body)
    r = await reach.invoke("read_file", {"path": "logs/app.log", "offset": begin + shift, "max_bytes": size})
    assert not r.ok, f"page {begin + shift}+{size} handed out {r.content['content'][:80]!r}"
    assert r.error.code == "invalid_arguments" and "allow_secret_files" in r.error.message


async def test_paging_through_a_big_file_never_returns_the_key(tmp_path: Path) -> None:
    """The model's own loop: follow next_offset from the start; the pages near the key are refused."""
    reach, root = _reach(tmp_path, **_SMALL_SCAN)
    body, begin, end = _big_with_key()
    _put(root, "logs/app.log", body)
    offset, seen = 0, []
    while offset < len(body):
        r = await reach.invoke("read_file", {"path": "logs/app.log", "offset": offset})
        if r.ok:
            seen.append(r.content["content"])
            offset = r.content.get("next_offset", len(body))
        else:
            offset += 1000
    assert "MIIEpAIBAAKCAQEAx7nS" not in "".join(seen)


async def test_a_big_honest_file_is_read_page_by_page_to_its_end(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path, **_SMALL_SCAN)
    body = _FILLER + "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n-----END CERTIFICATE-----\n" + _FILLER
    _put(root, "logs/app.log", body)
    offset, pages = 0, []
    while True:
        r = await reach.invoke("read_file", {"path": "logs/app.log", "offset": offset})
        assert r.ok, (offset, r.error)
        pages.append(r.content["content"])
        if not r.content.get("truncated"):
            break
        offset = r.content["next_offset"]
    assert "".join(pages) == body


async def test_allow_secret_files_opens_every_variant(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path, allow_secret_files=True, **_SMALL_SCAN)
    rels = [".netrc.bak", ".env_local", ".npmrc", ".kube/config", "deploy/values.yaml"]
    for rel in rels:
        _put(root, rel, f"x {SECRET}\n" if rel != "deploy/values.yaml" else _ARMOURS[2])
        r = await reach.invoke("read_file", {"path": rel})
        assert r.ok, (rel, r.error)
    body, begin, _ = _big_with_key()
    _put(root, "logs/app.log", body)
    r = await reach.invoke("read_file", {"path": "logs/app.log", "offset": begin + 40, "max_bytes": 20})
    assert r.ok and r.content["content"] == body[begin + 40:begin + 60]


# ------------------------------------------------------------------- honest neighbours

_HONEST = [
    ".env-example", ".env_sample", ".env-template", ".env.example", ".environment", "env_local.md",
    ".npmrc.example", ".npmrc-notes.md", "npmrc", ".docker/daemon.json",
    "config.json", "kube/config", ".cargo/config.toml", "docs/credentials.md",
    ".config/git/ignore", ".config/gh/config.yml", "netrc.bak.md", "backup/netrc.txt",
    ".pgpass-howto.md", "my.cnf", "bakery.txt", ".gemrc",
    ".config/hub-notes.md", ".subversion/config", "rclone/README.md",
]


@pytest.mark.parametrize("rel", _HONEST)
async def test_honest_files_near_the_new_names_stay_readable(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    await _put_and_check(reach, root, rel)


async def _put_and_check(reach: Reach, root: Path, rel: str) -> None:
    body = "example_setting = changeme\n"
    _put(root, rel, body)
    await _assert_honest(reach, root, rel, body)
    r = await reach.invoke("write_file", {"path": rel, "content": "x = 1\n", "mode": "overwrite"})
    # not a secret store; another guard may still refuse the write (.cargo/config.toml names programs cargo runs)
    assert r.ok or any(f"allow_{g}_writes" in r.error.message for g in ("env", "vcs", "autorun")), r.error
