"""Red team: a configured secret with lines (a PEM private key) is masked however text wraps it.

A key of more than 256 characters was found only in its literal forms (the per-character
escape pattern is for values of a sane length), and none of those is the key with its
line breaks written another way. So the key leaked whole from a service account file
(JSON: ``\\n`` escapes), from JSON inside JSON, with CRLF line ends, as HTML with
``<br>``, indented in YAML, or joined on one line. A multi-line secret is now also found
by its words in order with any line break or white space, in any escape, between them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random

import pytest

from reach_core import BusinessError, connector
from reach_core.known_secrets import KnownSecrets
from reach_core.redact import MASK
from reach_core.testing import make_reach

_RNG = random.Random(7)


def _pem(kind: str, n: int) -> str:
    body = base64.b64encode(bytes(_RNG.randrange(256) for _ in range(n))).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----"


PEM = _pem("PRIVATE KEY", 1200)  # ~1,700 characters: past the per-character pattern
SHORT = "first-line-Xq7Z\nsecond-line-Wp9K"  # a short multi-line secret
OTHER = _pem("CERTIFICATE", 900)  # a public certificate: not configured, never masked

SPELLINGS = {
    "as-is": lambda s: s,
    "json": lambda s: json.dumps({"private_key": s}),
    "service-account-file": lambda s: json.dumps({"type": "service_account", "private_key_id": "ab12",
                                                  "private_key": s, "client_email": "x@y.iam"}, indent=2),
    "json-twice": lambda s: json.dumps(json.dumps({"k": s})),
    "json-slash-escaped": lambda s: json.dumps({"k": s}).replace("/", "\\/"),
    "crlf": lambda s: s.replace("\n", "\r\n"),
    "html-br": lambda s: s.replace("\n", "<br>\n"),
    "html-br-only": lambda s: s.replace("\n", "<br/>"),
    "yaml-indented": lambda s: "key: |\n    " + s.replace("\n", "\n    "),
    "one-line": lambda s: s.replace("\n", ""),
    "spaces": lambda s: s.replace("\n", " "),
    "tabs": lambda s: s.replace("\n", "\t\t"),
    "upper": lambda s: s.upper(),
    "env-file": lambda s: 'PRIVATE_KEY="' + s.replace("\n", "\\n") + '"',
    "html-entity-breaks": lambda s: s.replace("\n", "&#10;"),
}


def _lines(secret: str) -> list[str]:
    """What must not show: every line of the secret with something of its own (not a header)."""
    return [ln for ln in secret.splitlines() if len(ln) >= 12 and "-----" not in ln]


@pytest.fixture(scope="module")
def reach(tmp_path_factory):
    reach = make_reach(data_dir=tmp_path_factory.mktemp("wrapped"))
    reach.redactor.add(values=[PEM, SHORT])

    @connector(name="read_back", risk="read")
    async def read_back(which: str, spelling: str, where: str):
        """Read a stored file back. Use in tests."""
        text = SPELLINGS[spelling](PEM if which == "pem" else SHORT)
        if where == "content":
            return text
        if where == "nested":
            return {"files": [{"name": "sa.json", "text": text}]}
        raise BusinessError(f"could not parse: {text}")

    reach.register(read_back)
    return reach


@pytest.mark.parametrize("where", ["content", "nested", "error"])
@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("which", ["pem", "short"])
def test_a_wrapped_secret_is_masked(reach, which, spelling, where):
    result = asyncio.run(reach.invoke("read_back", {"which": which, "spelling": spelling, "where": where}))
    seen = result.to_json()
    secret = PEM if which == "pem" else SHORT
    for line in _lines(secret):
        assert line.lower() not in seen.lower(), (which, spelling, where, line)
    assert MASK in seen


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_positive_control_other_keys_and_prose_are_unchanged(spelling):
    """Only the configured key is masked: a certificate, the same words in another order
    and ordinary text with line breaks stay as they were. (Each is framed by prose: a text
    that starts or ends with a secret's last or first characters, ``-----``, loses them,
    the documented price of finding a secret cut at a text's ends.)"""
    known = KnownSecrets()
    known.add([PEM, SHORT])
    other = "cert: " + SPELLINGS[spelling](OTHER) + " (end)"
    assert known.mask(other) == other
    reordered = "x " + "\n".join(reversed(PEM.splitlines())) + " y"
    assert known.mask(reordered) == reordered
    prose = SPELLINGS[spelling]("first line\nsecond line\n-----BEGIN PRIVATE KEY-----\nnot a key") + "."
    assert known.mask(prose) == prose
