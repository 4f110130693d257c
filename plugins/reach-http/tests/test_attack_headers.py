"""Attack class: model-supplied headers that steer the HTTP stack or proxies (issue 19).

An OpenAPI document may declare ``Host``, ``Content-Length``, ``X-Forwarded-For``
... as header parameters. They never become tool arguments, in any spelling (case,
surrounding whitespace, ``_`` for ``-``); legitimate header arguments carry one line
of printable ASCII only; no argument replaces a configured credential. Checked
against the real loopback server: what it received is asserted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from http_testserver import Server
from reach_http.headers import model_header_refusal

from reach_core import InvalidArguments

FORBIDDEN_BASE = [
    "Host", "Content-Length", "Transfer-Encoding", "Connection", "Cookie", "Cookie2", "Set-Cookie",
    "Proxy-Authorization", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Anything",
    "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port", "X-Forwarded-Prefix",
    "Forwarded", "TE", "Upgrade", "Keep-Alive", "Trailer", "Expect", "Via", "Authorization",
    "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "X-Real-IP", "X-Client-IP",
    "True-Client-IP", "X-Original-URL", "X-Rewrite-URL", "X-Host", "Sec-Fetch-Site", "X-Envoy-Original-Path",
    "Content-Encoding", "HTTP2-Settings",
]


@pytest.fixture
def server(shared_server: Server) -> Server:
    return shared_server  # one server for the module (see conftest)


def _spellings(name: str) -> list[str]:
    return sorted({name, name.lower(), name.upper(), name.swapcase(), name.replace("-", "_"),
                   name.lower().replace("-", "_"), f" {name}", f"{name} ", f"{name}\t", f"\t{name.upper()}"})


FORBIDDEN = [(base, variant) for base in FORBIDDEN_BASE for variant in _spellings(base)]
ALLOWED = ["X-Request-Id", "api-key", "If-Match", "X-Trace", "Idempotency-Key", "Accept-Language", "X-Page"]


@pytest.mark.parametrize(("base", "name"), FORBIDDEN)
def test_forbidden_header_names_in_every_spelling(base: str, name: str) -> None:
    assert model_header_refusal(name) is not None


@pytest.mark.parametrize("name", ALLOWED + ["X_Request_Id", "x-api-version"])
def test_ordinary_header_names_are_allowed(name: str) -> None:
    assert model_header_refusal(name) is None


@pytest.mark.parametrize("name", ["X-A\r\nBcc", "X-A\nHost", "X:A", "X A", "", "X-\u00e9", "X-A\x00", ":authority"])
def test_header_names_that_are_not_tokens_are_refused(name: str) -> None:
    assert model_header_refusal(name) is not None


def _doc(headers: list[str]) -> dict[str, Any]:
    params = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
    params += [{"name": h, "in": "header", "schema": {"type": "string"}} for h in headers]
    return {
        "openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "/"}],
        "paths": {"/echo/{id}": {"post": {
            "operationId": "postThing", "summary": "Post a thing", "parameters": params,
            "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
            "responses": {"200": {"description": "ok"}},
        }}},
    }


def _reach(make: Any, server: Server, tmp_path: Path, headers: list[str], **extra: Any) -> Any:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(_doc(headers)))
    return make({"services": {"svc": {"openapi": str(doc), "base_url": f"http://127.0.0.1:{server.port}",
                                       "allow_private": True, **extra}}},
                config={"agents": {"default": {"auto_tier": "dangerous"}}})


@pytest.mark.parametrize("base", FORBIDDEN_BASE)
async def test_declared_forbidden_headers_never_become_arguments(base: str, server: Server, make,
                                                                 tmp_path: Path) -> None:
    declared = _spellings(base)
    reach = _reach(make, server, tmp_path, declared + ["X-Request-Id"])
    (tool,) = [t for t in reach.tools() if t["function"]["name"] == "postThing"]
    properties = tool["function"]["parameters"]["properties"]
    assert set(properties) == {"id", "X-Request-Id", "body"}
    for name in declared:
        result = await reach.invoke("postThing", {"id": "1", name: "evil.example", "body": {"a": 1}})
        assert not result.ok and result.error.code == "invalid_arguments", (name, result)
    assert server.state.requests == []
    ok = await reach.invoke("postThing", {"id": "1", "X-Request-Id": "r-1", "body": {"a": 1}})
    assert ok.ok, ok.error
    sent = server.state.requests[-1]["headers"]
    assert sent["Host"] == f"127.0.0.1:{server.port}" and sent["Content-Length"] == str(len(b'{"a":1}'))
    assert not any(k.lower().startswith(("x-forwarded", "proxy-", "forwarded")) for k in sent)
    assert sent["X-Request-Id"] == "r-1"


BAD_VALUES = [
    "a\r\nBcc: x", "a\nHost: evil", "a\rX: y", "\r\n", "a\r\n\r\nGET / HTTP/1.1", "a\x00b", "a\x0bb", "a\x0cb",
    "a\x85b", "a\u2028b", "a\u2029b", "a\x7fb", "a\x1bb", "caf\u00e9", "\u202eevil", "a%0d%0ab\n",
]


@pytest.mark.parametrize("value", BAD_VALUES)
async def test_header_values_are_one_line_of_printable_ascii(value: str, server: Server, make,
                                                             tmp_path: Path) -> None:
    reach = _reach(make, server, tmp_path, ["X-Request-Id"])
    result = await reach.invoke("postThing", {"id": "1", "X-Request-Id": value, "body": {}})
    assert not result.ok and result.error.code == "invalid_arguments", result
    assert "X-Request-Id" in result.error.message
    assert server.state.requests == []


@pytest.mark.parametrize("spelling", ["X-API-Key", "x-api-key", "X_API_KEY", "x_api_key", "X-Api-Key"])
async def test_an_argument_cannot_replace_a_configured_credential(spelling: str, server: Server, make,
                                                                  tmp_path: Path) -> None:
    reach = _reach(make, server, tmp_path, [spelling],
                   auth={"type": "header", "name": "X-API-Key", "value": "configured"})
    result = await reach.invoke("postThing", {"id": "1", spelling: "attacker", "body": {}})
    assert result.ok, result.error
    raw = server.state.requests[-1]["headers"]
    values = [v for k, v in raw.items() if k.lower().replace("_", "-") == "x-api-key"]
    assert values == ["configured"]


async def test_cookie_parameters_are_encoded_not_injected(server: Server, make, tmp_path: Path) -> None:
    doc = _doc([])
    doc["paths"]["/echo/{id}"]["post"]["parameters"].append({"name": "pref", "in": "cookie",
                                                             "schema": {"type": "string"}})
    doc["paths"]["/echo/{id}"]["post"]["parameters"].append({"name": "a;b=c", "in": "cookie",
                                                             "schema": {"type": "string"}})
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    reach = make({"services": {"svc": {"openapi": str(path), "base_url": f"http://127.0.0.1:{server.port}",
                                       "allow_private": True}}})
    (tool,) = [t for t in reach.tools() if t["function"]["name"] == "postThing"]
    assert "a;b=c" not in tool["function"]["parameters"]["properties"]
    result = await reach.invoke("postThing", {"id": "1", "pref": "x; session=stolen\r\nHost: evil", "body": {}})
    assert result.ok, result.error
    cookie = server.state.requests[-1]["headers"]["Cookie"]
    assert cookie.startswith("pref=") and ";" not in cookie and "\n" not in cookie


@pytest.mark.parametrize(("base", "name"), FORBIDDEN[::3])
async def test_the_client_refuses_forbidden_headers_itself(base: str, name: str, server: Server) -> None:
    """Defence in depth: a caller that skips the schema still cannot send them."""
    from reach_http import AddressGuard, ServiceClient, ServiceSettings, StaticResolver

    settings = ServiceSettings(base_url=f"http://127.0.0.1:{server.port}", allow_private=True)
    client = ServiceClient("svc", settings, AddressGuard(StaticResolver()), settings.base_url or "")
    with pytest.raises(InvalidArguments):
        await client.send("GET", "/echo", headers={name: "evil"})
    assert server.state.requests == []


async def test_configured_cookie_and_cookie_parameters_travel_together(server: Server, make, tmp_path: Path) -> None:
    doc = _doc([])
    doc["paths"]["/echo/{id}"]["post"]["parameters"].append({"name": "pref", "in": "cookie",
                                                             "schema": {"type": "string"}})
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    reach = make({"services": {"svc": {"openapi": str(path), "base_url": f"http://127.0.0.1:{server.port}",
                                       "allow_private": True, "headers": {"Cookie": "session=configured"}}}})
    result = await reach.invoke("postThing", {"id": "1", "pref": "dark", "body": {}})
    assert result.ok, result.error
    assert server.state.requests[-1]["headers"]["Cookie"] == "session=configured; pref=dark"
