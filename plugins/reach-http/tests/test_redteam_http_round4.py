"""Red team, round 4: walk-arounds the earlier rounds' tests did not cover.

1. A write with a body redirected by 301/302 (PUT, PATCH, DELETE keep method and body
   there, as HTTP says) to another origin: the rule "a body never follows a redirect to
   another origin" was written for 307/308 only, so the user's data went to whatever
   origin the service named.
2. A configured secret the service reflects into something reach *fails* on (a malformed
   header line, a bad chunk size, a redirect target it refuses) reached the model
   unmasked: only successful answers and the service's error bodies were masked.
3. Method overrides in the query or body (``?_method=DELETE`` for Laravel, Symfony,
   Express ``method-override``; ``_HttpMethod`` for Salesforce): a service whose
   ``methods`` leave out DELETE still received a POST that such frameworks run as DELETE.

Real servers on 127.0.0.1 throughout (two :class:`Server` instances for two origins, raw
socket servers for malformed answers).
"""

from __future__ import annotations

import base64
import ipaddress
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, unquote

import pytest
from http_testserver import Server, local
from reach_http import AddressGuard, StaticResolver, build_connectors

from reach_core.testing import make_reach

SECRET = "s3cr3t-Rk7Wq"
CARD = "4111 1111 1111 1111"


class _LoopbackOrigins(AddressGuard):
    """Lets the test servers' loopback names through as if public, so the redirect
    handling behind the guard is what is tested; anything else is checked for real."""

    async def check(self, scheme: str, host: str, port: int, *, allow_private: bool):  # type: ignore[override]
        if host.lower().rstrip(".") in ("127.0.0.1", "localhost"):
            return ipaddress.ip_address("127.0.0.1")
        return await super().check(scheme, host, port, allow_private=allow_private)


def _reach(tmp_path: Any, settings: dict[str, Any], guard: AddressGuard | None = None) -> Any:
    """A Reach with the tools of one service ``svc``; no retries, DELETE allowed without a confirmer."""
    reach = make_reach(config={
        "reach": {"data_dir": str(tmp_path / "data"), "retry_backoff": 0.01},
        "connectors": {"http_get": {"retries": 0}, "http_request": {"retries": 0, "risk": "write"}},
    })
    for tool in build_connectors({"services": {"svc": settings}},
                                 guard=guard or _LoopbackOrigins(StaticResolver())):
        reach.register(tool)
    return reach


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[Server, Server]]:
    a, b = Server(), Server()
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture
def two(pair: tuple[Server, Server]) -> tuple[Server, Server]:
    for srv in pair:
        with srv.state.lock:
            srv.state.requests.clear()
    return pair


# --------------------------------------------------------------------------- 1. a body never leaves the origin

WRITES_WITH_BODY = ["PUT", "PATCH", "DELETE"]
KEEPING_CODES = [301, 302, 307, 308]


def _elsewhere(a: Server, b: Server) -> dict[str, str]:
    """Targets at another origin than ``http://127.0.0.1:{a.port}``: port, host, trailing dot, scheme."""
    return {
        "other-port": f"http://127.0.0.1:{b.port}/echo/landed",
        "other-host": f"http://localhost:{a.port}/echo/landed",
        "trailing-dot": f"http://127.0.0.1.:{b.port}/echo/landed",
        "scheme-relative": f"//localhost:{b.port}/echo/landed",
        "https": f"https://127.0.0.1:{a.port}/echo/landed",
    }


@pytest.mark.parametrize("where", ["other-port", "other-host", "trailing-dot", "scheme-relative", "https"])
@pytest.mark.parametrize("code", KEEPING_CODES)
@pytest.mark.parametrize("method", WRITES_WITH_BODY)
async def test_a_body_never_follows_a_redirect_to_another_origin(
    method: str, code: int, where: str, two: tuple[Server, Server], tmp_path: Any
) -> None:
    """Every redirect that keeps method and body (307/308 always; 301/302 for all but POST) is
    handed back when it points elsewhere: the service received the write once, nobody else did."""
    a, b = two
    reach = _reach(tmp_path, {"base_url": f"http://127.0.0.1:{a.port}", "methods": ["GET", *WRITES_WITH_BODY],
                              "auth": {"type": "bearer", "token": SECRET}})
    result = await reach.invoke("http_request", {
        "service": "svc", "method": method, "path": "/redirect",
        "query": {"code": code, "to": _elsewhere(a, b)[where]}, "json": {"card": CARD}})
    landed = [r for s in (a, b) for r in s.state.requests if r["path"] == "/echo/landed"]
    assert landed == [], f"the {method} body went to {where}: {landed}"
    assert a.state.count(method, "/redirect") == 1
    assert result.ok, result.error
    assert result.content["status"] == code and "not followed" in result.content["note"]


@pytest.mark.parametrize("code", [301, 302])
@pytest.mark.parametrize("method", WRITES_WITH_BODY)
async def test_a_body_still_follows_a_redirect_within_the_origin(
    method: str, code: int, two: tuple[Server, Server], tmp_path: Any
) -> None:
    a, _ = two
    reach = _reach(tmp_path, {"base_url": f"http://127.0.0.1:{a.port}", "methods": ["GET", *WRITES_WITH_BODY],
                              "auth": {"type": "bearer", "token": SECRET}})
    result = await reach.invoke("http_request", {"service": "svc", "method": method, "path": "/redirect",
                                                 "query": {"code": code, "to": "/echo/landed"}, "json": {"n": 1}})
    assert result.ok, result.error
    assert result.content["body"]["method"] == method and result.content["body"]["body"] == {"n": 1}


@pytest.mark.parametrize(("method", "code"), [("POST", 301), ("POST", 302)] + [(m, 303) for m in
                                                                              ["POST", *WRITES_WITH_BODY]])
async def test_a_redirect_that_drops_the_body_is_still_followed_elsewhere(
    method: str, code: int, two: tuple[Server, Server], tmp_path: Any
) -> None:
    """POST on 301/302, and anything on 303, continues as a GET without the body, as browsers do:
    nothing of the model's body goes along, so following it elsewhere stays allowed (documented)."""
    a, b = two
    reach = _reach(tmp_path, {"base_url": f"http://127.0.0.1:{a.port}", "methods": ["GET", *WRITES_WITH_BODY,
                                                                                      "POST"]})
    result = await reach.invoke("http_request", {
        "service": "svc", "method": method, "path": "/redirect",
        "query": {"code": code, "to": f"http://127.0.0.1:{b.port}/echo/landed"}, "json": {"card": CARD}})
    assert result.ok, result.error
    [landed] = b.state.requests
    assert landed["method"] == "GET" and landed["body"] == ""
