"""Red team: an ``Authorization`` header that is not exactly one configured token is 401.

With ``anonymous_agent`` set, reach-serve read the header as ``scheme, _, token =
header.partition(" ")`` and, when that was not ``Bearer`` plus something, served the request
as the anonymous agent, as if no header had been sent: ``Basic ...``, ``Token ...``,
``Bearer`` alone, ``Bearer<TAB>`` or ``Bearer<NBSP>token``, an empty header. Two headers were
read as the first one; a token with a no-break space or NEL after it was stripped and
accepted. A client that sends the header means to be someone: anything else than one
valid token is now 401 (``reach_core.tokens.bearer_agent``), and counted against the
client address (``test_redteam_serve_guessing.py``). Real ``reach serve http`` on
127.0.0.1, requests written byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import raw_request, serve

WORKER, OPS = b"tok-worker-000001", b"tok-ops-000000001"
CYRILLIC = "токен-длинный-01"
INVOKE = b'{"name": "lookup", "arguments": {"city": "Oslo"}}'


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tokens = {WORKER.decode(): "worker", OPS.decode(): "ops", CYRILLIC: "worker"}
    gen = serve(tmp_path_factory.mktemp("auth"), {"tokens": tokens, "anonymous_agent": "guest",
                                                  "max_token_failures": 10_000})  # many wrong tokens by design
    yield next(gen).base
    gen.close()


MALFORMED = [
    # another scheme, or none
    b"Basic dG9rLXdvcmtlci0wMDAwMDE6", b"basic " + WORKER, b"Basic", b"Token " + WORKER, b"Digest username=ops",
    b"Negotiate YIIC", b"Bearer:" + WORKER, b"Bearer=" + WORKER, b"Bearer_" + WORKER, b"Bearer" + WORKER,
    WORKER, b"Bearer-" + WORKER, b"Beare " + WORKER, b"Bearerr " + WORKER, b"B\xe9arer " + WORKER,
    # Bearer with no token
    b"Bearer", b"bearer", b"BEARER", b"Bearer\t", b"Bearer \t ", b"", b" ", b"\t",
    # separators that are not a space or tab: the token glued to the scheme
    b"Bearer\xa0" + WORKER, b"Bearer\x85" + WORKER, b"Bearer\xc2\xa0" + WORKER, b"Bearer\xe3\x80\x80" + WORKER,
    # junk around the token, a second token, a list
    WORKER.join([b"Bearer ", b"\xa0"]), WORKER.join([b"Bearer ", b"\x85"]), WORKER.join([b"Bearer \xa0", b""]),
    WORKER.join([b"Bearer \xe2\x80\x8b", b""]), WORKER.join([b"Bearer ", b"\xe2\x80\x8b"]),
    WORKER.join([b"Bearer ", b";"]), WORKER.join([b"Bearer ", b","]), WORKER.join([b"Bearer \"", b"\""]),
    b"Bearer " + WORKER + b" " + OPS, b"Bearer " + WORKER + b", Bearer " + OPS, b"Bearer " + WORKER + b" x",
    b"Bearer " + WORKER[:-1], b"Bearer " + WORKER + b"1", b"Bearer " + WORKER.upper(), b"Bearer t\xc3\xb6k-worker",
    b"Bearer " + CYRILLIC.encode("cp1251"), b"Bearer " + CYRILLIC.encode("koi8-r"),
]


@pytest.mark.parametrize("header", MALFORMED, ids=lambda h: repr(h)[2:40])
def test_a_malformed_authorization_header_is_401_not_the_anonymous_agent(base: str, header: bytes) -> None:
    status, answer, headers = raw_request(base, "GET", "/v1/tools", header)
    assert status == 401, (status, answer[:200])  # before: 200 {"agent": "guest", ...} for most
    assert headers.get("www-authenticate") == "Bearer"
    status, answer, _ = raw_request(base, "POST", "/v1/invoke", header, INVOKE)
    assert status == 401 and b"Oslo" not in answer, (status, answer[:200])


TWO_HEADERS = [[WORKER, b"Basic x"], [b"Bearer " + WORKER, b"Bearer nope-nope-nope"],
               [b"Bearer nope-nope-nope", b"Bearer " + WORKER], [b"Bearer " + WORKER, b"Bearer " + WORKER],
               [b"Bearer " + WORKER, b"Bearer " + OPS], [b"Bearer " + OPS, b""], [b"Bearer " + OPS, b"Basic eA=="],
               [b"", b""], [b"Basic eA==", b"Basic eA=="]]


@pytest.mark.parametrize("values", TWO_HEADERS, ids=lambda v: repr(v)[:40])
def test_two_authorization_headers_are_401(base: str, values: list[bytes]) -> None:
    """Which of two headers counts is a proxy's guess (the first? the last? joined?): none does."""
    for path in ("/v1/tools", "/v1/confirmations"):
        status, answer, _ = raw_request(base, "GET", path, values)
        assert status == 401, (path, status, answer[:200])  # before: the first header decided


HONEST = [b"Bearer " + WORKER, b"bearer " + WORKER, b"BEARER " + WORKER, b"Bearer  " + WORKER,
          b"Bearer \t" + WORKER, b"Bearer\t" + WORKER, b"Bearer " + WORKER + b" ", b"Bearer " + WORKER + b"\t",
          b"Bearer " + CYRILLIC.encode("utf-8")]


@pytest.mark.parametrize("header", HONEST, ids=lambda h: repr(h)[2:40])
def test_one_valid_token_names_its_agent(base: str, header: bytes) -> None:
    """Spaces and tabs between the scheme and the token, or after it, are the header's syntax;
    a token with non-ASCII letters works when sent as UTF-8 (before: never, its bytes were
    read as latin-1 and compared as UTF-8)."""
    status, answer, _ = raw_request(base, "GET", "/v1/tools", header)
    assert status == 200 and b'"agent":"worker"' in answer, (status, answer[:200])


def test_no_header_is_the_anonymous_agent_and_operators_need_a_token(base: str) -> None:
    status, answer, _ = raw_request(base, "GET", "/v1/tools", None)
    assert status == 200 and b'"agent":"guest"' in answer, answer
    assert raw_request(base, "GET", "/v1/confirmations", None)[0] == 401
    assert raw_request(base, "GET", "/v1/confirmations", b"Bearer " + OPS)[0] == 200


def test_without_anonymous_agent_every_malformed_header_is_401(tmp_path: Any) -> None:
    gen = serve(tmp_path, {"max_token_failures": 10_000})
    try:
        base = next(gen).base
        for header in [*MALFORMED[:24], None]:
            assert raw_request(base, "GET", "/v1/tools", header)[0] == 401, header
    finally:
        gen.close()
