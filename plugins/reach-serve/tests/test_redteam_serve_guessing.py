"""Red team: guessing tokens is slowed down, per client address.

Nothing counted failed tokens: a client could send wrong bearer tokens (or console logins) as
fast as the server answered. Now each app instance counts them per client address
(``reach_core.tokens.TokenFailures``, ``max_token_failures`` a minute): past the limit, that
address gets 429 with ``Retry-After`` and its tokens are not read at all, so a right guess
looks like a wrong one. Every spelling of a failure counts (an unknown token, another scheme,
``Bearer`` alone, two headers, a console login); a valid token sent in between does not wipe
the count (an agent with a token of its own would guess an operator's between its calls);
other addresses go on as before. Real ``reach serve http`` on 127.0.0.1; other client
addresses are other loopback addresses (127.0.0.2 ...), which are this machine too.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import raw_request, serve

from reach_core.tokens import TokenFailures

WORKER, OPS = b"Bearer tok-worker-000001", b"Bearer tok-ops-000000001"
LIMIT = 5
_addresses = (f"127.0.{i // 250}.{i % 250 + 2}" for i in itertools.count(1))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    gen = serve(tmp_path_factory.mktemp("guessing"), {"max_token_failures": LIMIT})
    yield next(gen).base
    gen.close()


@pytest.fixture
def address() -> str:
    """A client address of this test's own (the count is per address, the server the module's)."""
    return next(_addresses)


FAILURES = [[b"Bearer tok-guess-000001"], [b"Basic b3BzOmd1ZXNz"], [b"Bearer"], [b"Bearer \xa0"], [b""],
            [b"Bearer tok-ops-00000000"], [b"Bearer tok-ops-000000001 x"], [b"bearer TOK-OPS-000000001"],
            [OPS, b"Bearer tok-guess-000001"]]


@pytest.mark.parametrize("failure", FAILURES, ids=lambda f: repr(f)[:40])
def test_failed_tokens_past_the_limit_are_429_whatever_is_sent(base: str, address: str,
                                                               failure: list[bytes]) -> None:
    for _ in range(LIMIT):
        assert raw_request(base, "GET", "/v1/tools", failure, source=address)[0] == 401
    for header in (failure, [b"Bearer tok-guess-000002"], [OPS], [WORKER]):  # a right guess looks the same
        for path in ("/v1/tools", "/v1/confirmations"):
            status, answer, headers = raw_request(base, "GET", path, header, source=address)
            assert status == 429, (header, path, status, answer[:200])  # before: 401, or 200 for the token
            assert b'"code":"rate_limited"' in answer and b"Oslo" not in answer
            assert 1 <= int(headers["retry-after"]) <= 60
    # another client is not affected; the blocked one's requests without a token are not token guesses
    assert raw_request(base, "GET", "/v1/tools", [WORKER], source=next(_addresses))[0] == 200
    assert raw_request(base, "GET", "/v1/tools", None, source=address)[0] == 401  # (no anonymous_agent)


def test_a_valid_token_in_between_does_not_wipe_the_count(base: str, address: str) -> None:
    for _ in range(LIMIT - 1):
        assert raw_request(base, "GET", "/v1/tools", [b"Bearer tok-guess-000001"], source=address)[0] == 401
        assert raw_request(base, "GET", "/v1/tools", [WORKER], source=address)[0] == 200
    assert raw_request(base, "GET", "/v1/tools", [b"Bearer tok-guess-000002"], source=address)[0] == 401
    assert raw_request(base, "GET", "/v1/tools", [WORKER], source=address)[0] == 429


def test_valid_tokens_are_never_counted(base: str, address: str) -> None:
    for _ in range(4 * LIMIT):
        assert raw_request(base, "GET", "/v1/tools", [WORKER], source=address)[0] == 200
        assert raw_request(base, "GET", "/v1/confirmations", [OPS], source=address)[0] == 200


def _login(base: str, token: str) -> int:
    with httpx.Client(base_url=base, timeout=10, follow_redirects=False) as client:
        page = client.get("/console/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        return client.post("/console/login", data={"token": token, "csrf": csrf.group(1)}).status_code


def test_console_logins_and_api_tokens_share_one_count(tmp_path: Any) -> None:
    """The login form is one more place to guess; its failures count with the API's. (httpx
    connects from 127.0.0.1: this test has a server of its own.)"""
    gen = serve(tmp_path, {"max_token_failures": LIMIT})
    try:
        base = next(gen).base
        for i in range(LIMIT - 1):
            assert _login(base, f"tok-guess-{i:06}") == 401
        assert raw_request(base, "GET", "/v1/tools", [b"Bearer tok-guess-000009"])[0] == 401
        assert _login(base, "tok-ops-000000001") == 429  # before: 303, logged in after five guesses
        assert raw_request(base, "GET", "/v1/confirmations", [OPS])[0] == 429
    finally:
        gen.close()


# ------------------------------------------------------------------ the counter itself (a clock of its own)

class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_block_ends_with_the_window_and_failures_while_blocked_do_not_extend_it() -> None:
    clock = Clock()
    failures = TokenFailures(limit=3, window=60, clock=clock)
    for _ in range(3):
        assert failures.retry_after("10.0.0.1") is None
        failures.failed("10.0.0.1")
    assert failures.retry_after("10.0.0.1") == 60
    clock.now += 59.5
    assert failures.retry_after("10.0.0.1") == 1
    clock.now += 0.5
    assert failures.retry_after("10.0.0.1") is None  # the valid holder gets in again
    failures.failed("10.0.0.1")
    assert failures.retry_after("10.0.0.1") is None  # a new window, counted from one


def test_the_counter_remembers_a_bounded_number_of_clients() -> None:
    failures = TokenFailures(limit=1, window=60, clients=100, clock=Clock())
    for i in range(5000):
        failures.failed(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}")
    assert len(failures._seen) == 100
    assert failures.retry_after("10.0.19.135") is not None  # the most recent are kept
    assert failures.retry_after("10.0.0.0") is None


@pytest.mark.parametrize(("one", "other"), [
    ("2001:db8::1", "2001:db8::ffff:1"), ("2001:db8:0:0:1::", "2001:db8::abcd:ef01:2345:6789"),
    ("::ffff:10.0.0.1", "10.0.0.1"), ("fe80::1%eth0", "fe80::2"), ("2001:DB8::1", "2001:db8::2"),
])
def test_addresses_of_one_ipv6_network_or_ipv4_mapped_share_a_count(one: str, other: str) -> None:
    """One host usually holds a whole IPv6 /64: 2**64 addresses to rotate through."""
    failures = TokenFailures(limit=2, window=60, clock=Clock())
    failures.failed(one)
    failures.failed(other)
    assert failures.retry_after(one) and failures.retry_after(other)


@pytest.mark.parametrize(("one", "other"), [("2001:db8::1", "2001:db8:0:1::1"), ("10.0.0.1", "10.0.0.2")])
def test_other_networks_have_counts_of_their_own(one: str, other: str) -> None:
    failures = TokenFailures(limit=1, window=60, clock=Clock())
    failures.failed(one)
    assert failures.retry_after(one) and failures.retry_after(other) is None
