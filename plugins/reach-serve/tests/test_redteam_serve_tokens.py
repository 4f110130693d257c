"""Red team: a bearer token in ``[plugins.reach-serve]`` must be a real secret.

Both the API (``agent_of``) and the console login strip what the client sends, so a
configured token that is empty or only spaces (``tokens = { "" = "ops" }``, a secret
pasted wrong, an empty environment variable in ``clients``) let ``Authorization:
Bearer`` followed by spaces in as that agent, an operator included; a three-letter
token is guessed; a token with spaces or a line break around it never matched at all.
reach-mcp already refused these; reach-serve took them. Families:

* config: empty, whitespace-only (ASCII and Unicode spaces), short, and padded tokens,
  in ``tokens`` and in ``clients``, are config errors naming the key;
* a real server: every spelling of an empty bearer header is 401, never an agent, on
  the API, the operator endpoints and the console login;
* honest use: long tokens of every allowed shape still name their agent.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from conftest import raw_request, serve
from pydantic import ValidationError
from reach_serve.settings import ClientEntry, ServeHttpSettings

SPACES = [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2003", "\u3000", "\u2028", "\x0b", "\x0c", "\x1c"]
EMPTYISH = ["", *SPACES, " \t ", "\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0", " " * 12]
SHORT = ["a", "abc", "1234567", "tok", "ops", "x" * 7]
PADDED = [f"{pad}tok-padded-0001" for pad in SPACES] + [f"tok-padded-0001{pad}" for pad in SPACES]
BAD = EMPTYISH + SHORT + PADDED


@pytest.mark.parametrize("token", BAD)
def test_a_weak_or_padded_token_in_tokens_is_a_config_error(token: str) -> None:
    with pytest.raises(ValidationError, match="token"):
        ServeHttpSettings(tokens={token: "ops"}, operators=["ops"])


@pytest.mark.parametrize("token", BAD)
def test_a_weak_or_padded_token_in_clients_is_a_config_error(token: str) -> None:
    with pytest.raises(ValidationError, match="token"):
        ClientEntry(token=token, agent="ops")


@pytest.mark.parametrize("token", BAD[:6])
def test_a_weak_token_among_good_ones_is_still_refused(token: str) -> None:
    with pytest.raises(ValidationError):
        ServeHttpSettings(tokens={"tok-good-000000001": "worker", token: "ops"}, operators=["ops"])


GOOD = ["abcdefgh", "tok-dev-only-123", "x" * 300, "Zx9-_.~+/=Zx9", "tok with inner space", "токен-длинный"]


@pytest.mark.parametrize("token", GOOD)
def test_honest_tokens_are_accepted(token: str) -> None:
    settings = ServeHttpSettings(tokens={token: "ops"}, clients=[ClientEntry(token=token + "-2", agent="w")],
                                 operators=["ops"])
    assert settings.token_agents() == {token: "ops", token + "-2": "w"}


EMPTY_HEADERS = [b"Bearer", b"Bearer ", b"Bearer  ", b"Bearer   ", b"bearer  ", b"BEARER  ", b"Bearer \t",
                 b"Bearer \t ", b"Bearer \xa0", b"Bearer \xa0\xa0", b"Bearer \t\xa0", b"Bearer \xa0 \xa0",
                 b"bEaReR \xa0", b"Bearer \x85", b"Bearer \xc2\xa0"]
"""Header values as bytes on the wire. The server trims spaces and tabs around a value, but
``\xa0`` (NBSP in the latin-1 the server decodes headers with) and ``\x85`` (NEL) stay, and
Python's ``str.strip()`` removes them: ``Bearer \xa0`` reached the comparison as an empty token."""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Any:
    gen = serve(tmp_path_factory.mktemp("tokens"), {"max_token_failures": 10_000})  # many wrong tokens by design
    yield next(gen).base
    gen.close()


INVOKE = b'{"name": "lookup", "arguments": {"city": "Oslo"}}'


@pytest.mark.parametrize("header", EMPTY_HEADERS)
@pytest.mark.parametrize("path", ["/v1/invoke", "/v1/confirmations"])
def test_an_empty_bearer_is_401_on_the_api(base: str, header: bytes, path: str) -> None:
    method, body = ("POST", INVOKE) if path == "/v1/invoke" else ("GET", b"")
    status, answer, _ = raw_request(base, method, path, header, body)
    assert status in (400, 401), answer
    assert b"Oslo" not in answer


@pytest.mark.parametrize("token", ["", " ", "  ", "\t", "\u00a0", "tok", "tok-ops-00000000"])
def test_an_empty_or_wrong_console_token_does_not_log_in(base: str, token: str) -> None:
    with httpx.Client(base_url=base, timeout=10, follow_redirects=False) as client:
        page = client.get("/console/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        r = client.post("/console/login", data={"token": token, "csrf": csrf.group(1)})
        assert "reach_console=" not in r.headers.get("set-cookie", "")
        assert client.get("/console/approvals").status_code in (302, 303, 401, 403)


def test_the_operators_real_token_still_works(base: str) -> None:
    with httpx.Client(base_url=base, timeout=10, headers={"Authorization": "Bearer tok-ops-000000001"}) as c:
        assert c.get("/v1/confirmations").status_code == 200
    for header in (b"Bearer tok-worker-000001", b"Bearer  tok-worker-000001 ", b"bearer \ttok-worker-000001\t"):
        status, answer, _ = raw_request(base, "POST", "/v1/invoke", header, INVOKE)
        assert status == 200 and b"Oslo" in answer, answer


@pytest.mark.parametrize("token", ["", "  ", "\t", "\u00a0", "abc"])
def test_a_server_with_a_weak_token_does_not_start(tmp_path: Any, token: str) -> None:
    """Before: it started, and ``Authorization: Bearer`` plus a stripped character acted as ``ops``."""
    from reach_core import ConfigError

    gen = serve(tmp_path, {"tokens": {token: "ops", "tok-worker-000001": "worker"}})
    try:
        try:
            served = next(gen)
        except (ConfigError, ValidationError) as exc:
            assert "token" in str(exc)
            return
        status, answer, _ = raw_request(served.base, "POST", "/v1/invoke",  # what got through before
                                     b"Bearer " + (token or "\xa0").encode("latin-1", "replace"), INVOKE)
        raise AssertionError(f"served with a weak token; the attack got {status} {answer[:120]!r}")
    finally:
        gen.close()
