"""The console's session cookie tells nothing about the operator's token.

The cookie is signed, not encrypted: its body is base64 JSON anyone holding the cookie
reads (a copied browser profile, a proxy or crash log, a shared screen of the dev tools).
It carried ``sha256(token)[:32]``, an unsalted fast hash of the operator's token, which is
also the token of ``POST /v1/confirmations/{id}/approve``: a token of a few guessable
characters (8 are allowed) then came back by offline guessing, and outlived the 12-hour
session and the logout. Now the cookie holds an HMAC of the token under the console's key,
which nobody without the configured tokens can compute. Real ``reach serve http`` on 127.0.0.1.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator

import pytest
from conftest import Served, serve
from reach_serve.console.auth import COOKIE, Sessions

OPERATOR_TOKENS = ["tok-ops-000000001", "hunter22", "Ops-Token-Ünïcode-1", "x" * 200]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tokens = {token: "ops" for token in OPERATOR_TOKENS}
    yield from serve(tmp_path_factory.mktemp("cookie"), {"tokens": {"tok-worker-000001": "worker", **tokens}})


def _unkeyed(token: str) -> list[str]:
    """Every unkeyed digest of ``token`` an attacker would try, as hex and as base64."""
    out = []
    for name in ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake2s", "sha3_256"):
        raw = hashlib.new(name, token.encode()).digest()
        out += [raw.hex(), base64.b64encode(raw).decode().rstrip("="),
                base64.urlsafe_b64encode(raw).decode().rstrip("=")]
    return out


def _cookie_body(served: Served, token: str) -> str:
    with served.client(None) as c:
        page = c.get("/console/login")
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        res = c.post("/console/login", data={"csrf": csrf, "token": token},
                     headers={"Origin": served.base, "Sec-Fetch-Site": "same-origin"})
        assert res.status_code == 303, res.text
        cookie = c.cookies[COOKIE]
        assert c.get("/console/approvals").status_code == 200
    body = cookie.split(".")[0]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


@pytest.mark.parametrize("token", OPERATOR_TOKENS)
def test_the_cookie_holds_no_unkeyed_digest_of_the_token(served: Served, token: str) -> None:
    payload = _cookie_body(served, token)
    assert json.loads(payload)["op"] == "ops"
    assert token not in payload
    for digest in _unkeyed(token):
        for size in (12, 16, 32):
            assert digest[:size] not in payload, (token, digest[:size])


def test_sessions_still_end_with_their_token() -> None:
    now = Sessions({"tok-ops-000000001": "ops"}, {"ops"})
    found = now.agent_of_token("tok-ops-000000001")
    assert found is not None and found[0] == "ops"
    cookie = now.issue("ops", found[1])
    rotated = Sessions({"tok-ops-000000002": "ops"}, {"ops"})

    class Req:
        def __init__(self, value: str) -> None:
            self.cookies = {COOKIE: value}

    assert now.read(Req(cookie)) is not None  # type: ignore[arg-type]
    assert rotated.read(Req(cookie)) is None  # type: ignore[arg-type]
