"""Red-team variants of issue 19's reach-http classes that the first families did not spell.

Header names a vendor invents for the same claim (``CF-Connecting-IP``, ``X-Forward-For``,
``Max-Forwards``, ``X-Remote-User``, ``X-Azure-ClientIP`` ...): the rule is by what the name
says (forwarding, proxy, remote identity, override, client address), not by a list. Host
spellings reach through the real tools (allow_private on) and the loopback server proves
nothing arrived.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from http_testserver import Server
from reach_http.headers import model_header_refusal

VENDOR_CLAIMS = [
    "CF-Connecting-IP", "CF-Connecting-IPv6", "Fastly-Client-IP", "X-ProxyUser-Ip", "WL-Proxy-Client-IP",
    "X-Forwarded", "X-Original-Forwarded-For", "X-Forward-For", "X-Forwarded-Server", "Max-Forwards",
    "X-Remote-User", "Remote-User", "X-Remote-Addr", "X-Azure-ClientIP", "X-Azure-SocketIP",
    "X-Custom-IP-Authorization", "X-Override-URL", "X-HTTP-Method-Override", "X-Method-Override",
    "X-Client-IPs", "Akamai-Client-IP", "X-Real-IP", "Proxy", "X-Proxy-Authorization", "X-Forwarded-User",
]


def _spellings(name: str) -> list[str]:
    return sorted({name, name.lower(), name.upper(), name.replace("-", "_"), name.lower().replace("-", "_")})


CLAIMS = [(base, v) for base in VENDOR_CLAIMS for v in _spellings(base)]
ORDINARY = ["X-Request-Id", "X-Api-Version", "X-Zip", "X-Tip", "X-Ship-To", "If-Match", "X-Page",
            "Accept-Language", "Idempotency-Key", "X-Trace", "X-Tenant", "Prefer", "X-Shipping-Zip"]


@pytest.mark.parametrize(("base", "name"), CLAIMS)
def test_vendor_forwarding_and_identity_headers_are_refused(base: str, name: str) -> None:
    assert model_header_refusal(name) is not None, name


@pytest.mark.parametrize("name", ORDINARY)
def test_ordinary_headers_still_pass(name: str) -> None:
    assert model_header_refusal(name) is None


@pytest.fixture
def server(shared_server: Server) -> Server:
    return shared_server  # one server for the module (see conftest)


def _doc(headers: list[str]) -> dict[str, Any]:
    params = [{"name": h, "in": "header", "schema": {"type": "string"}} for h in headers]
    return {
        "openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "/"}],
        "paths": {"/echo": {"get": {"operationId": "getThing", "summary": "Get a thing", "parameters": params,
                                    "responses": {"200": {"description": "ok"}}}}},
    }


async def test_declared_vendor_claims_never_become_arguments(server: Server, make, tmp_path: Path) -> None:
    declared = [name for _, name in CLAIMS]
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(_doc([*declared, "X-Request-Id"])))
    reach = make({"services": {"svc": {"openapi": str(doc), "base_url": f"http://127.0.0.1:{server.port}",
                                       "allow_private": True}}})
    (tool,) = [t for t in reach.tools() if t["function"]["name"] == "getThing"]
    assert set(tool["function"]["parameters"]["properties"]) == {"X-Request-Id"}
    for name in declared[::4]:
        result = await reach.invoke("getThing", {name: "10.0.0.1"})
        assert not result.ok and result.error.code == "invalid_arguments", (name, result)
    assert server.state.requests == []
    ok = await reach.invoke("getThing", {"X-Request-Id": "r-1"})
    assert ok.ok, ok.error
    sent = {k.lower() for k in server.state.requests[-1]["headers"]}
    assert not any(("forward" in k or k.endswith("-ip") or "remote" in k) for k in sent), sent


METADATA_HOSTS = [
    "169.254.169.254", "[::ffff:a9fe:a9fe]", "[0:0:0:0:0:ffff:169.254.169.254]", "[::a9fe:a9fe]",
    "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::]", "[fd00:0ec2:0000::0254]", "[FD00:EC2:0:0:0:0:0:23]",
    "169.254.170.23", "169.254.170.2", "169\u3002254\u3002169\u3002254", "169\uff0e254\uff0e170\uff0e23",
    "[::ffff:169.254.170.23]", "[64:ff9b::169.254.170.23]", "[fe80::a9fe:a9fe]", "METADATA.GOOGLE.INTERNAL.",
    "metadata.google.internal\u3002", "xn--metadata-.google.internal",
]


CASES = [("base", h) for h in METADATA_HOSTS] + [
    (where, h) for where in ("redirect", "userinfo-redirect") for h in METADATA_HOSTS if h.isascii()
]  # the test server writes Location in latin-1; a non-ASCII host reaches reach only through its config


@pytest.mark.parametrize(("where", "host"), CASES)
async def test_metadata_spellings_with_allow_private_send_nothing(host: str, where: str, server: Server,
                                                                  make) -> None:
    from reach_http import StaticResolver

    resolver = StaticResolver({})
    if where == "base":
        try:
            reach = make({"services": {"svc": {"base_url": f"http://{host}:{server.port}", "allow_private": True}}},
                         resolver=resolver, config={"connectors": {"http_get": {"retries": 0}}})
        except ValueError:
            assert server.state.requests == []
            return
        result = await reach.invoke("http_get", {"service": "svc", "path": "/latest/meta-data/"})
    else:
        reach = make({"services": {"svc": {"base_url": f"http://127.0.0.1:{server.port}", "allow_private": True}}},
                     resolver=resolver)
        userinfo = "admin:pw@" if where == "userinfo-redirect" else ""
        result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect",
                                                 "query": {"to": f"http://{userinfo}{host}:{server.port}/x"}})
    assert not result.ok, result
    assert [r["path"] for r in server.state.requests] in ([], ["/redirect"])
    assert resolver.calls == []


RETRY_AFTER = ["inf", "-inf", "nan", "NaN", "Infinity", "1e999", "-1e999", "1e308"]


@pytest.mark.parametrize("value", RETRY_AFTER)
@pytest.mark.parametrize("status", [429, 503])
async def test_a_server_retry_after_is_a_finite_wait_or_none(value: str, status: int, server: Server, make) -> None:
    import json as _json
    import math

    reach = make({"services": {"svc": {"base_url": f"http://127.0.0.1:{server.port}", "allow_private": True}}},
                 config={"connectors": {"http_get": {"retries": 0}}})
    result = await reach.invoke("http_get", {"service": "svc", "path": f"/status/{status}",
                                             "query": {"retry_after": value}})
    assert not result.ok
    wait = result.error.retry_after
    assert wait is None or (math.isfinite(wait) and wait >= 0), wait
    _json.dumps({"retry_after": wait}, allow_nan=False)  # what a model or a client is sent stays JSON
