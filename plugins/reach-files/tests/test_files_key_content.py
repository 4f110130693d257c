"""Red team on private keys found by content: the armour and encodings the earlier families miss.

Every body below sits in a file with an innocent name (``deploy/values.yaml``) next to a marker
line, and must be neither read (``read_file``) nor found (``search_files`` with ``text``):

* **keys that name themselves, base64-encoded**: an age key (``AGE-SECRET-KEY-1...``), an age
  plugin identity, minisign's and signify's secret key files and PuTTY key files, encoded as
  Kubernetes secrets, Helm values and CI variables carry them (``keys.txt: IyBjcmVhdGVk...``):
  at every byte alignment, URL-safe, wrapped, encoded twice. Before, only ``PRIVATE KEY`` was
  looked for inside base64;
* **age keys in lower case**: Bech32 is case-insensitive and rage (the Rust age) writes the
  prefix in lower case (``age-secret-key-1...``);

Honest neighbours: public halves, documents that mention the formats, base64 of ordinary text.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import reach_files.plugin

from reach_core import Reach

SECRET = "hunter2-KEYCONTENT-SECRET-3319"


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


def _b64(text: str, *, urlsafe: bool = False) -> str:
    raw = text.encode()
    return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()


def _wrapped(text: str, width: int = 76, indent: str = "    ") -> str:
    return "\n".join(indent + text[i:i + width] for i in range(0, len(text), width))


async def _assert_hidden(reach: Reach, body: str, rel: str = "deploy/values.yaml") -> None:
    r = await reach.invoke("read_file", {"path": rel})
    assert not r.ok, f"read_file handed out {body[:80]!r}: {r.content}"
    assert r.error.code == "invalid_arguments" and "allow_secret_files" in r.error.message, r.error
    r = await reach.invoke("search_files", {"text": SECRET})
    assert r.ok and SECRET not in str(r.content), r.content
    assert "1 secret" in r.content.get("note", ""), r.content


async def _assert_readable(reach: Reach, body: str, rel: str = "deploy/values.yaml") -> None:
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok and r.content["content"] == body, (body[:80], r.error)
    r = await reach.invoke("search_files", {"text": SECRET})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [rel], r.content


_AGE = "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE"  # 58 Bech32 letters
_AGE_FILE = ("# created: 2026-12-04T00:00:00Z\n"
             "# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n" + _AGE + "\n")
_PLUGIN = "AGE-PLUGIN-YUBIKEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ\n"
_MINISIGN = "untrusted comment: minisign encrypted secret key\nRWRTY0IyAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
_SIGNIFY = "untrusted comment: signify secret key\nRWRCSwAAAACzJBN2gWbXsqnjaUqFMnqAcJwK\n"
_PUTTY = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ada@laptop\nPublic-Lines: 2\n"
          "AAAAC3NzaC1lZDI1NTE5AAAAIGQs8\nAAAA\nPrivate-Lines: 1\nAAAAIBkgqZbX\n")

_SELF_NAMED_B64 = [
    f"apiVersion: v1\nkind: Secret\ndata:\n  keys.txt: {_b64(_AGE_FILE)}\n",
    f"SOPS_AGE_KEY_B64={_b64(_AGE)}\n",
    f"a: {_b64('x' + _AGE)}\n",
    f"a: {_b64('xy' + _AGE)}\n",
    f"a: {_b64(_AGE_FILE, urlsafe=True)}\n",
    f"a: |\n{_wrapped(_b64(_AGE_FILE))}\n",
    f"a: {_b64(_b64(_AGE))}\n",
    f"a: {_b64(_b64('x' + _AGE_FILE))}\n",
    f"a: {_b64(_AGE_FILE.replace(chr(10), chr(13) + chr(10)))}\n",
    "a: " + _b64('{"identity": "' + _AGE + '"}') + "\n",
    f"a: {_b64(_AGE.lower())}\n",
    f"a: {_b64(_PLUGIN)}\n",
    f"a: {_b64('y' + _PLUGIN)}\n",
    f"minisign.key: {_b64(_MINISIGN)}\n",
    f"minisign.key: {_b64('zz' + _MINISIGN)}\n",
    f"signify.sec: {_b64(_SIGNIFY)}\n",
    f"id.ppk: {_b64(_PUTTY)}\n",
    f"id.ppk: {_b64('q' + _PUTTY)}\n",
    f"id.ppk: |\n{_wrapped(_b64(_PUTTY), 64)}\n",
]


@pytest.mark.parametrize("body", range(len(_SELF_NAMED_B64)))
async def test_keys_that_name_themselves_are_found_in_base64(tmp_path: Path, body: int) -> None:
    reach, root = _reach(tmp_path)
    text = _SELF_NAMED_B64[body] + f"# {SECRET}\n"
    _put(root, "deploy/values.yaml", text)
    await _assert_hidden(reach, text)


_AGE_SPELLINGS = [
    _AGE.lower() + "\n",
    "export SOPS_AGE_KEY=" + _AGE.lower() + "\n",
    _AGE_FILE.replace(_AGE, _AGE.lower()),
    _PLUGIN.lower(),
]


@pytest.mark.parametrize("body", _AGE_SPELLINGS)
async def test_age_keys_in_lower_case_are_found(tmp_path: Path, body: str) -> None:
    reach, root = _reach(tmp_path)
    text = body + f"# {SECRET}\n"
    _put(root, "deploy/values.yaml", text)
    await _assert_hidden(reach, text)


_HONEST_B64 = [
    f"a: {_b64('# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p')}\n",
    f"a: {_b64('Put your AGE-SECRET-KEY-1... line in keys.txt')}\n",
    f"a: {_b64('untrusted comment: minisign public key 5A0B1C2D' + chr(10) + 'RWQf6LRCGA9i53ml' + chr(10))}\n",
    f"a: {_b64('the secret key is kept by the operator, never in the repository')}\n",
    f"a: {_b64('PuTTY-User-Key-File-3 is the header of a .ppk file')}\n",
    "doc: age-secret-key-1 is how rage spells the prefix\n",
    f"a: {_b64(_b64('age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p is the recipient'))}\n",
]


@pytest.mark.parametrize("body", _HONEST_B64)
async def test_public_halves_and_mentions_in_base64_stay_readable(tmp_path: Path, body: str) -> None:
    reach, root = _reach(tmp_path)
    text = body + f"# {SECRET}\n"
    _put(root, "deploy/values.yaml", text)
    await _assert_readable(reach, text)
