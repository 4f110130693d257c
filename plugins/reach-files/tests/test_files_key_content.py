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

* **keys without armour**: the base64 body of a key with its BEGIN/END lines stripped, as
  Snowflake's, JWT signers' and Java apps' settings hold them (``private_key: MIIEvQIBADANBg...``):
  PKCS#8 (RSA, EC, Ed25519), PKCS#1, SEC1, encrypted PKCS#8 (PBES2), PKCS#12, OpenSSH's
  ``openssh-key-v1`` body (``b3BlbnNzaC1rZXktdjE...``), wrapped, in JSON, YAML, env files;
* **credentials in JSON by their shape**: Google/Firebase service-account JSON (``"type":
  "service_account"`` with its ``private_key``, even when that key is not a PEM) and user
  credentials (``"type": "authorized_user"`` with a ``refresh_token``, what ``gcloud auth
  application-default login`` writes), in any key order and spacing, pretty or on one line, or
  base64-encoded whole; private JSON Web Keys (a ``"kty"`` with ``"d"``, or an ``oct`` key's
  ``"k"``), alone or in a key set.

* **armour with its dashes escaped** as the text around it allows (JSON's ``\\u002d``, YAML's
  ``\\x2d``, XML's ``&#45;`` and ``&#x2D;``): the parsed file holds the very key.

Honest neighbours: public halves (certificates, public keys, CSRs, public JWK sets), documents
that mention the formats, base64 of ordinary text.
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


# ------------------------------------------------------------------- keys without armour

# the first characters of real keys made with openssl and ssh-keygen for these tests (throwaway)
_PKCS8_RSA = ("MIICdwIBADANBgkqhkiG9w0BAQEFAASCAmEwggJdAgEAAoGBAKY6zJOh+I0wH4hdFR3+N9uWtVFz4xNrc6rPLAkm"
              "kKYBet/m3Frctj3e0yX7U85CzdaWrEUU")
_PKCS1_RSA = ("MIICXQIBAAKBgQCmOsyTofiNMB+IXRUd/jfblrVRc+MTa3OqzywJJpCmAXrf5txa3LY93tMl+1POQs3WlqxFFM/1"
              "ZB2wTb5Br9vnrQYAiaqvfcai0DyhImpO")
_PKCS8_ED = "MC4CAQAwBQYDK2VwBCIEIAyf0LHFkEWvDlZVzRKnERj1Y7U4P91Tnd2YiJnl5zUg"
_SEC1_EC = ("MHcCAQEEIJ6TY+F/56T1RGWlfO+BkDQ78gvJMVwJK+4lYWIa6OvmoAoGCCqGSM49AwEHoUQDQgAE4s39kW4kBh8D"
            "Suk6eC6l7+tRWoTxGIG5EHxQBUEjRnfW")
_PKCS8_EC = ("MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgnpNj4X/npPVEZaV874GQNDvyC8kxXAkr7iVhYhro"
             "6+ahRANCAATizf2RbiQGHwNK6Tp4LqXv")
_PKCS8_ENC = ("MIIC3TBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQIq0CKXMJX1ugCAggAMAwGCCqGSIb3DQIJBQAwHQYJ"
              "YIZIAWUDBAEqBBCoEAONNvEMXEswkQQ4")
_OPENSSH = ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACAw4OEV"
            "Iua06pF0DAUr3TGxQcVqcjTJUD1/lzy7gt2vgwAAAIh3G2RydxtkcgAAAAtzc2gtZWQyNTUx")
_PKCS12 = ("MIIGfwIBAzCCBjUGCSqGSIb3DQEHAaCCBiYEggYiMIIGHjCCAuIGCSqGSIb3DQEHBqCCAtMwggLPAgEAMIICyAYJ"
           "KoZIhvcNAQcB")  # keystore.p12, as a Kubernetes secret carries one
_BARE = [_PKCS8_RSA, _PKCS1_RSA, _PKCS8_ED, _SEC1_EC, _PKCS8_EC, _PKCS8_ENC, _OPENSSH, _PKCS12]
_BARE_BODIES = [
    *(f"snowflake:\n  private_key: {key}\n" for key in _BARE),
    *(f'{{"signing_key": "{key}"}}\n' for key in _BARE),
    f"JWT_PRIVATE_KEY={_PKCS8_RSA}\n",
    f"JWT_PRIVATE_KEY='{_PKCS8_EC}'\n",
    f"key: |\n{_wrapped(_PKCS8_RSA, 64)}\n",
    f"key: >-\n{_wrapped(_OPENSSH, 70, '  ')}\n",
    f"<privateKey>{_PKCS1_RSA}</privateKey>\n",
    f"ssh_key = \"{_OPENSSH}\"\n",
    f"k: {_PKCS8_RSA.replace('+', '-').replace('/', '_')}\n",  # URL-safe alphabet
    f"a: {_b64(_OPENSSH)}\n",  # the OpenSSH body encoded once more
    f"# snowflake key\n{_PKCS8_RSA}\n",  # after a line that ends in a letter
    f"user = ada\n{_wrapped(_PKCS1_RSA, 64, '')}\n",
    f"[keys]\nsigning=\n{_SEC1_EC}\n",
]


@pytest.mark.parametrize("body", range(len(_BARE_BODIES)))
async def test_keys_without_armour_are_found(tmp_path: Path, body: int) -> None:
    reach, root = _reach(tmp_path)
    text = _BARE_BODIES[body] + f"# {SECRET}\n"
    _put(root, "deploy/values.yaml", text)
    await _assert_hidden(reach, text)


# ------------------------------------------------------------------- credentials in JSON by their shape

_SA_PEM = "-----BEGIN PRIVATE KEY-----\\n" + _PKCS8_RSA + "\\n-----END PRIVATE KEY-----\\n"
_SA = ('{\n  "type": "service_account",\n  "project_id": "p",\n  "private_key_id": "3f2a9c",\n'
       '  "private_key": "%s",\n  "client_email": "a@p.iam.gserviceaccount.com",\n  "client_id": "1"\n}\n')
_USER = ('{\n  "client_id": "76408.apps.googleusercontent.com",\n  "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty",\n'
         '  "refresh_token": "1//0gXy7wQ3kR8sLCgYIARAAGBASNwF-L9IrZ4xq",\n  "type": "authorized_user"\n}\n')
_JSON_CREDS = [
    _SA % "MIIEvQ...KEY-BODY-WITHOUT-ARMOUR...QIBADANBgkqhkiG9w0BAQEFAASC",  # not a PEM: not found before
    _SA % _SA_PEM.replace("-", "\\u002d"),  # the dashes escaped, as JSON allows
    (_SA % "xYzq8u1e0PjZs4fKqLr7T2w9mNcVbA3d").replace("\n", ""),  # one line
    (_SA % "xYzq8u1e0PjZs4fKqLr7T2w9mNcVbA3d").replace('": "', '" : "').replace(",\n", " ,\r\n"),
    '{"private_key": "xYzq8u1e0PjZs4fKqLr7T2w9mNcVbA3d", "type":"service_account"}\n',  # key order
    _USER,
    _USER.replace("\n", "").replace(": ", ":"),
    '{"refresh_token": "1//0gXy7wQ3kR8sLCgYIARAAGBASNwF", "type": "authorized_user"}\n',
    "GOOGLE_CREDENTIALS=" + _b64(_USER) + "\n",
    "key.json: " + _b64(_SA % "xYzq8u1e0PjZs4fKqLr7T2w9mNcVbA3d") + "\n",
    # private JSON Web Keys: RSA, EC, OKP, a symmetric oct key, inside a key set
    '{"kty": "RSA", "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4", "e": "AQAB",'
    ' "d": "X4cTteJY_gn4FYPsXB8rdXix5vwsg1FLN5E3EaG6RJoVH-HLLKD9"}\n',
    '{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",'
    '"y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cLyZ9qL0aJ5F9R8PSFy4oI"}\n',
    '{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",\n'
    ' "d": "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}\n',
    '{"kty": "oct", "alg": "HS256", "k": "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75"}\n',
    '{"keys": [{"kty": "RSA", "kid": "2026", "use": "sig", "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmb",'
    ' "e": "AQAB", "d": "X4cTteJY_gn4FYPsXB8rdXix5vwsg1FLN5E3EaG6RJoVH"}]}\n',
    'jwk:\n  kty: RSA\n  n: 0vx7agoebGcQSuuPiLJXZptN9nndrQmb\n  e: AQAB\n  d: X4cTteJY_gn4FYPsXB8rdXix5vwsg1FLN\n',
]


@pytest.mark.parametrize("body", range(len(_JSON_CREDS)))
async def test_credentials_in_json_are_found_by_their_shape(tmp_path: Path, body: int) -> None:
    reach, root = _reach(tmp_path)
    text = _JSON_CREDS[body] + f"# {SECRET}\n"
    _put(root, "config/app.json", text)
    await _assert_hidden(reach, text, "config/app.json")


_HONEST_SHAPES = [
    # public halves of the same keys: a certificate, SubjectPublicKeyInfo, PKCS#1 public, a CSR, OpenSSH public
    "cert: MIIB9DCCAV2gAwIBAgIUFpD5P8mZsVzXBkAOcARgmAmSRxswDQYJKoZIhvcNAQELBQAwDDEKMAgGA1UEAwwBeDAeFw0y\n",
    "pub: MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCmOsyTofiNMB+IXRUd/jfblrVRc+MTa3OqzywJJpCmAXrf5txa\n",
    "pub: MIGJAoGBAKY6zJOh+I0wH4hdFR3+N9uWtVFz4xNrc6rPLAkmkKYBet/m3Frctj3e0yX7U85CzdaWrEUUz/VkHbBN\n",
    "csr: MIIBSzCBtQIBADAMMQowCAYDVQQDDAF4MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCmOsyTofiNMB+IXRUd\n",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDDg4RUi5rTqkXQMBSvdMbFBxWpyNMlQPX+XPLuC3a+D ada@laptop\n",
    "hash: MzE4YmQ5ZjI0ZDJhMWMwNzE5YzM0ZWQ1NzM4NjQ1ZTJlMDc1YjQ4Y2Q3NzY0ZjZhMWY3YjU0\n",
    # a public key set, and documents about the credential files
    '{"keys": [{"kty": "RSA", "kid": "2026", "use": "sig", "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmb",'
    ' "e": "AQAB"}]}\n',
    '{"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN"}\n',
    'Set "type": "service_account" and add your "private_key": "..." from the console.\n',
    '{"type": "service_account", "project_id": "p", "client_email": "a@p.iam.gserviceaccount.com"}\n',
    '{"type": "authorized_user", "refresh_token": "REFRESH_TOKEN"}\n',
    '{"type": "external_account", "audience": "//iam.googleapis.com/projects/1/x", "credential_source":'
    ' {"file": "/var/run/token"}}\n',
    '{"d": "2026-12-04", "kind": "diary"}\n',
]


@pytest.mark.parametrize("body", _HONEST_SHAPES)
async def test_public_halves_and_documents_stay_readable(tmp_path: Path, body: str) -> None:
    reach, root = _reach(tmp_path)
    text = body + f"# {SECRET}\n"
    _put(root, "config/app.json", text)
    await _assert_readable(reach, text, "config/app.json")


# ------------------------------------------------------------------- armour with escaped dashes

def _escaped(text: str, escape: str) -> str:
    return text.replace("-", escape)


_PEM_LINE = "-----BEGIN OPENSSH PRIVATE KEY-----\\nQUJDREVGR0g=\\n"  # a body too short to be judged alone
_ESCAPED = [
    '{"key": "' + _escaped(_PEM_LINE, "\\u002d") + '"}\n',
    '{"key": "' + _escaped(_PEM_LINE, "\\u002D") + '"}\n',
    'key: "' + _escaped(_PEM_LINE, "\\x2d") + '"\n',
    'key: "' + _escaped(_PEM_LINE, "\\x2D") + '"\n',
    "<key>" + _escaped(_PEM_LINE, "&#45;") + "</key>\n",
    "<key>" + _escaped(_PEM_LINE, "&#x2D;") + "</key>\n",
    "<key>" + _escaped(_PEM_LINE, "&#x2d;") + "</key>\n",
    "<key>" + _escaped(_PEM_LINE, "&#0045;") + "</key>\n",
    '{"key": "' + _PEM_LINE.replace("-----BEGIN", "\\u002d-\\u002d-\\u002dBEGIN") + '"}\n',  # some escaped
    '{"identity": "' + _escaped(_AGE, "\\u002d") + '"}\n',
    '{"key": "' + _escaped(_PEM_LINE.replace("OPENSSH", "RSA"), "\\u002d") + '"}\n',
]


@pytest.mark.parametrize("body", range(len(_ESCAPED)))
async def test_armour_with_escaped_dashes_is_found(tmp_path: Path, body: int) -> None:
    reach, root = _reach(tmp_path)
    text = _ESCAPED[body] + f"# {SECRET}\n"
    _put(root, "config/app.json", text)
    await _assert_hidden(reach, text, "config/app.json")


@pytest.mark.parametrize("body", [
    '{"cert": "' + _escaped("-----BEGIN CERTIFICATE-----\\nMIIB9DCCAV2g\\n", "\\u002d") + '"}\n',
    '{"note": "a\\u002db \\x2d &#45; &#x2d; are dashes"}\n',
    "<p>&#45;&#45; PRIVATE KEY handling is described in the manual</p>\n",
])
async def test_escaped_dashes_elsewhere_stay_readable(tmp_path: Path, body: str) -> None:
    reach, root = _reach(tmp_path)
    text = body + f"# {SECRET}\n"
    _put(root, "config/app.json", text)
    await _assert_readable(reach, text, "config/app.json")


# ------------------------------------------------------------------- copies of *.key files

# a *.key holding text is refused whatever the text (Rails' master.key: 32 hex digits, no armour; a
# WireGuard key: 44 base64 characters); a copy under a backup or editor name holds the same key
_RAILS_KEY = "9f86d081884c7d659a2feaa0c55ad015\n"
_WG_KEY = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n"


@pytest.mark.parametrize("rel", [
    "config/master.key.bak", "config/master.key~", "config/#master.key#", "config/master.key.orig",
    "config/master.key.1", "config/master.key (copy)", "config/MASTER.KEY.BAK", "config/master.key.bak.",
    "config/credentials/production.key.old", "config/.#master.key", "config/master.key.save",
    "wg/wg0.key.dpkg-old", "wg/wg0.key.swp~",
])
async def test_a_copy_of_a_key_file_is_refused(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    text = (_WG_KEY if rel.startswith("wg/") else _RAILS_KEY) + f"# {SECRET}\n"
    _put(root, rel, text)
    await _assert_hidden(reach, text, rel)


@pytest.mark.parametrize("rel", ["config/master.key.md", "docs/keys.txt", "config/monkey.bak", "notes/key.bak"])
async def test_names_near_a_key_copy_stay_readable(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    text = f"how we rotate keys\n# {SECRET}\n"
    _put(root, rel, text)
    await _assert_readable(reach, text, rel)


# ------------------------------------------------------------------- kubeconfigs and registry logins by shape

_KUBECONFIG = ("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: prod\n"
               "users:\n- name: ci\n  user:\n    token: eyJhbGciOiJSUzI1NiIsImtpZCI6Ijk4\n")
_DOCKER = '{"auths": {"ghcr.io": {"auth": "YWRhOmdocF9hYmNkZWYxMjM0NTY3OA=="}}}\n'
_SHAPES = [
    _KUBECONFIG,
    _KUBECONFIG.replace("token: ", "password: ").replace("name: ci\n", "name: ci\n    username: ada\n"),
    _KUBECONFIG.replace("    token: eyJ", "    auth-provider:\n      config:\n        id-token: eyJ"),
    _KUBECONFIG.replace("kind: Config", "kind: 'Config'"),
    '{"apiVersion": "v1", "kind": "Config", "users": [{"name": "ci", "user": {"token": "sha256~abcdefghijklmnop"}}]}\n',
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: prod-kubeconfig\ndata:\n  value: " + _b64(_KUBECONFIG) + "\n",
    "kubeconfig: |\n" + _wrapped(_b64(_KUBECONFIG)) + "\n",
    _DOCKER,
    '{\n\t"auths": {\n\t\t"registry.example.com": {\n\t\t\t"identitytoken": "eyJhbGciOiJIUzI1"\n\t\t}\n\t}\n}\n',
    '{"auths":{"https://index.docker.io/v1/":{"username":"ada","password":"dckr_pat_abcdef"}}}\n',
    "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: "
    + _b64(_DOCKER) + "\n",
    "REGISTRY_AUTH=" + _b64(_DOCKER, urlsafe=True) + "\n",
]


@pytest.mark.parametrize("body", range(len(_SHAPES)))
async def test_kubeconfigs_and_registry_logins_are_found_by_their_shape(tmp_path: Path, body: int) -> None:
    reach, root = _reach(tmp_path)
    text = _SHAPES[body] + f"# {SECRET}\n"
    _put(root, "deploy/values.yaml", text)
    await _assert_hidden(reach, text)


@pytest.mark.parametrize("body", [
    _KUBECONFIG.replace("    token: eyJhbGciOiJSUzI1NiIsImtpZCI6Ijk4\n",
                        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"),
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  password: ${NOT_A_KUBECONFIG_VALUE}\n",  # a literal: masked
    "kind: Config\n# token: see the wiki\n",
    '{"auths": {"ghcr.io": {}}, "credsStore": "desktop"}\n',
    '{"auths": {"ghcr.io": {"auth": ""}}}\n',
    "Docker keeps logins under \"auths\" in config.json; an \"auth\" is base64 of user:password.\n",
])
async def test_kubeconfigs_and_docker_configs_without_credentials_stay_readable(tmp_path: Path, body: str) -> None:
    reach, root = _reach(tmp_path)
    text = body + f"# {SECRET}\n"
    _put(root, "deploy/values.yaml", text)
    await _assert_readable(reach, text)


async def test_a_dockerconfigjson_file_is_a_store(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path)
    for rel in (".dockerconfigjson", "secrets/.dockerconfigjson", ".DockerConfigJson", ".dockerconfigjson.bak"):
        _put(root, rel, '{"auths": {}}\n')
        r = await reach.invoke("read_file", {"path": rel})
        assert not r.ok and "allow_secret_files" in r.error.message, rel
        r = await reach.invoke("write_file", {"path": rel, "content": "{}\n", "mode": "overwrite"})
        assert not r.ok, rel
