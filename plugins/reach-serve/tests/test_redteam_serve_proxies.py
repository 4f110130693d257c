"""Red team: a client cannot choose the address its failed tokens are counted by.

uvicorn believes ``X-Forwarded-For`` from 127.0.0.1 and ::1 by default (``forwarded_allow_ips``),
and ``reach serve http`` kept that default: any client on the same host (another user, a
compromised agent sandbox, an SSRF through a local service) wrote a new address into the header
with every guess, so ``max_token_failures`` never blocked it. Now uvicorn's handling is off
(``reach_core.tokens.UVICORN_LIMITS``) and ``X-Forwarded-For`` is read only from the proxies
``trusted_proxies`` names (``reach_core.tokens.TrustedProxies``), from the right: what the
client wrote itself is never believed. Real ``reach serve http`` on 127.0.0.1 with the uvicorn
options the command uses; each test a loopback address of its own (127.0.0.0/8 is this host).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from conftest import raw_request, serve

from reach_core.testing import FORWARDING_SPOOFS

LIMIT = 3
_addresses = (f"127.0.{i // 250 + 40}.{i % 250 + 2}" for i in itertools.count())
GUESS = [b"Bearer tok-guess-000001"]
WORKER = [b"Bearer tok-worker-000001"]


@pytest.mark.parametrize(("name", "spoof"), FORWARDING_SPOOFS, ids=[s[0] for s in FORWARDING_SPOOFS])
def test_forwarding_headers_do_not_reset_the_failed_token_count(make_served: Any, name: str,
                                                                 spoof: Callable[[int], list[bytes]]) -> None:
    """From 127.0.0.1, the peer uvicorn trusted by default (a server of its own per spelling: the
    count is per address). No ``trusted_proxies``: the peer is the client, whatever it writes."""
    base = make_served({"max_token_failures": LIMIT}).base
    for n in range(LIMIT):
        assert raw_request(base, "GET", "/v1/tools", GUESS, extra=spoof(n))[0] == 401
    status, answer, headers = raw_request(base, "GET", "/v1/tools", GUESS, extra=spoof(LIMIT))
    assert status == 429, (name, answer[:200])  # before: 401 for every X-Forwarded-For spelling, as often as sent
    assert 1 <= int(headers["retry-after"]) <= 60
    # the addresses it named are not blocked (it cannot lock other clients out by naming them either)
    assert raw_request(base, "GET", "/v1/tools", WORKER, source=next(_addresses), extra=spoof(0))[0] == 200


def test_console_login_guesses_are_counted_by_the_peer(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The login form reads the same address: rotating X-Forwarded-For there dodged the count too."""
    gen = serve(tmp_path_factory.mktemp("login"), {"max_token_failures": LIMIT})
    try:
        base = next(gen).base
        statuses = []
        with httpx.Client(base_url=base, timeout=10, follow_redirects=False) as client:
            for n in range(LIMIT + 1):
                csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/console/login").text)
                assert csrf is not None
                statuses.append(client.post("/console/login", data={"token": "tok-guess-000001", "csrf": csrf.group(1)},
                                            headers={"X-Forwarded-For": f"198.51.100.{n}"}).status_code)
        assert statuses == [401] * LIMIT + [429]  # before: 401 every time
    finally:
        gen.close()


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server behind proxies on 127.0.0.0/8 (as if nginx ran on this host)."""
    gen = serve(tmp_path_factory.mktemp("proxied"), {"max_token_failures": LIMIT, "trusted_proxies": ["127.0.0.0/8"]})
    yield next(gen).base
    gen.close()


def test_behind_a_trusted_proxy_each_client_is_counted_by_its_own_address(proxied: str) -> None:
    """What operators rely on: one guesser behind the proxy does not block the others, and what it
    writes in front of the address the proxy appends (the right-most hop) changes nothing."""
    proxy = next(_addresses)
    for n in range(LIMIT):
        forged = f"X-Forwarded-For: 198.51.100.{n}, 203.0.113.9".encode()  # "198.51.100.n" the client wrote
        assert raw_request(proxied, "GET", "/v1/tools", GUESS, source=proxy, extra=[forged])[0] == 401
    for forged in (b"X-Forwarded-For: 203.0.113.9", b"X-Forwarded-For: 1.2.3.4, 203.0.113.9",
                   b"X-Forwarded-For: 203.0.113.9:5555", b"X-Forwarded-For: ::ffff:203.0.113.9"):
        assert raw_request(proxied, "GET", "/v1/tools", WORKER, source=proxy, extra=[forged])[0] == 429
    for other in (b"X-Forwarded-For: 203.0.113.10", b"X-Forwarded-For: 203.0.113.9, 203.0.113.10"):
        assert raw_request(proxied, "GET", "/v1/tools", WORKER, source=proxy, extra=[other])[0] == 200
    # the proxy itself (no header) is another client, still served
    assert raw_request(proxied, "GET", "/v1/tools", WORKER, source=proxy)[0] == 200


@pytest.mark.parametrize("hops", ["unknown", "_hidden", "", "198.51.100.{n}:x", "[2001:db8::1", "1.2.3"])
def test_behind_a_trusted_proxy_a_hop_that_is_no_address_stops_at_the_proxy(proxied: str, hops: str) -> None:
    """A proxy that writes garbage (or passes the client's on): the last address a trusted proxy
    vouched for is counted, never the garbage (which the client could vary)."""
    proxy = next(_addresses)
    for n in range(LIMIT):
        spoof = f"X-Forwarded-For: {hops.format(n=n)}{n}".encode() if hops else b"X-Forwarded-For: "
        assert raw_request(proxied, "GET", "/v1/tools", GUESS, source=proxy, extra=[spoof])[0] == 401
    assert raw_request(proxied, "GET", "/v1/tools", WORKER, source=proxy, extra=[b"X-Forwarded-For: x9"])[0] == 429


def test_a_peer_that_is_no_trusted_proxy_is_not_believed(tmp_path_factory: pytest.TempPathFactory) -> None:
    gen = serve(tmp_path_factory.mktemp("elsewhere"), {"max_token_failures": LIMIT,
                                                        "trusted_proxies": ["10.0.0.0/8", "fd00::/8"]})
    try:
        base, address = next(gen).base, next(_addresses)
        for n in range(LIMIT):
            spoof = [f"X-Forwarded-For: 10.0.0.{n}".encode()]
            assert raw_request(base, "GET", "/v1/tools", GUESS, source=address, extra=spoof)[0] == 401
        assert raw_request(base, "GET", "/v1/tools", WORKER, source=address,
                           extra=[b"X-Forwarded-For: 10.9.9.9"])[0] == 429
    finally:
        gen.close()



@pytest.mark.parametrize("entry", ["*", "localhost", "10.0.0.1/8", "127.0.0.1\u200b"], ids=repr)
def test_a_trusted_proxy_that_is_no_address_is_refused_at_start(entry: str) -> None:
    """The whole family is in reach's core tests (``tests/test_trusted_proxies.py``); this is the
    real config path: refused when the settings load, naming the table."""
    from reach_serve import plugin as serve_plugin

    from reach_core import ConfigError
    from reach_core.testing import make_reach

    with pytest.raises(ConfigError, match=r"\[plugins.reach-serve\] trusted_proxies"):
        make_reach(("reach-serve", serve_plugin), config={"plugins": {"reach-serve": {"trusted_proxies": [entry]}}})


@pytest.mark.parametrize(("proto", "secure"), [
    ([b"X-Forwarded-Proto: https"], True), ([b"X-Forwarded-Proto:  HTTPS "], True),
    ([b"x-forwarded-proto: https"], True),
    ([b"X-Forwarded-Proto: http"], False), ([], False), ([b"X-Forwarded-Proto: https, http"], False),
    ([b"X-Forwarded-Proto: https", b"X-Forwarded-Proto: http"], False), ([b"X-Forwarded-Proto: wss"], False),
    ([b"X-Forwarded-Proto: https\xa0"], False),
])
def test_a_trusted_tls_proxy_makes_the_console_cookie_secure(proxied: str, proto: list[bytes], secure: bool) -> None:
    """What the proxy says about TLS decides ``Secure``; two or odd values are not guessed at."""
    status, _, headers = raw_request(proxied, "GET", "/console/login", None, source=next(_addresses), extra=proto)
    assert status == 200 and ("; secure" in headers["set-cookie"].lower()) is secure, headers["set-cookie"]


def test_an_untrusted_peer_does_not_choose_the_scheme(make_served: Any) -> None:
    base = make_served({}).base
    status, _, headers = raw_request(base, "GET", "/console/login", None, extra=[b"X-Forwarded-Proto: https"])
    assert status == 200 and "; secure" not in headers["set-cookie"].lower()
