"""Red-team round 2: attacks that walk around a guard instead of through it.

Families, many variants each, every one through the real code path:

* addresses in IANA special-purpose ranges the standard library (3.11) still calls
  global (``fec0::/10``, ``3fff::/20``, ``192.88.99.0/24`` ...), directly, embedded in
  NAT64/6to4/Teredo/mapped forms, and as DNS answers;
* the same loopback server spelled another way as a redirect target (the operator's
  ``allow_private`` opens one origin, not its other spellings);
* URL ports a parser reads differently (``+80``, `` 80``, ``0``, ``65536``, ``-1``);
* ``base_url`` / OpenAPI ``servers`` with userinfo, backslashes and other
  parser-differential tricks: a configuration error naming the setting;
* path parameters climbing with overlong UTF-8, ``%u`` escapes, backslashes;
* answers: binary and undecodable bodies described, never dumped; JSON nested
  past 100 levels returned as text; long header values cut; secrets masked before
  any cut (no prefix survives);
* YAML alias bombs and giant documents refused at set-up;
* a 307/308 to another origin neither resends the body nor the credentials.

Positive controls beside each family keep honest calls working.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

import pytest
from reach_http import AddressGuard, StaticResolver, build_connectors
from reach_http.guard import HostRefused, IPAddress
from reach_http.openapi import OpenAPIError
from reach_http.openapi.loader import parse_document

from reach_core import ConfigError
from reach_core.testing import make_reach

# --------------------------------------------------------------------------- a scripted server


class _Handler(BaseHTTPRequestHandler):
    server: _Scripted
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                                 "body": body})
        route = self.server.routes.get(self.path.split("?", 1)[0])
        if route is None:
            status, headers, raw = 200, [("Content-Type", "application/json")], json.dumps({"path": self.path}).encode()
        else:
            status, headers, raw = route
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any


class _Scripted(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes: dict[str, tuple[int, list[tuple[str, str]], bytes]] = {}
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def paths(self) -> list[str]:
        return [r["path"] for r in self.seen]


@pytest.fixture(scope="module")
def srv() -> Iterator[_Scripted]:
    s = _Scripted()
    yield s
    s.shutdown()
    s.server_close()


@pytest.fixture(scope="module")
def other() -> Iterator[_Scripted]:
    s = _Scripted()
    yield s
    s.shutdown()
    s.server_close()


@pytest.fixture
def fresh(srv: _Scripted, other: _Scripted) -> _Scripted:
    srv.routes.clear()
    srv.seen.clear()
    other.routes.clear()
    other.seen.clear()
    return srv


def _svc(port: int, **extra: Any) -> dict[str, Any]:
    return {"services": {"svc": {"base_url": f"http://127.0.0.1:{port}", "allow_private": True, **extra}}}


def _reach(tmp_path: Path, settings: dict[str, Any], **kw: Any) -> Any:
    reach = make_reach(config={"reach": {"data_dir": str(tmp_path / "d"), "retry_backoff": 0.01}})
    for tool in build_connectors(settings, **kw):
        reach.register(tool)
    return reach


# --------------------------------------------------------------------------- 1. special-purpose ranges

NOT_GLOBAL = [
    # IPv6 ranges the 3.11 standard library calls global
    "fec0::1", "fec0:1234::5", "feff:ffff::1", "3fff::1", "3fff:fff:ffff::1", "5f00::1", "100::1",
    "100:0:0:1::7", "2001:2::1", "2001:10::1", "2001:db8::1", "2001:1ff::1", "4000::1", "c000::1", "::2",
    # IPv4 ranges of the special-purpose registry
    "192.88.99.1", "192.88.99.255", "192.0.0.1", "192.0.0.170", "192.0.2.7", "198.18.0.1", "198.19.255.254",
    "198.51.100.9", "203.0.113.200", "240.0.0.1", "255.255.255.255", "0.1.2.3", "224.0.0.251", "239.1.1.1",
    "100.64.0.1", "10.1.2.3", "172.31.0.1", "192.168.1.1", "127.8.8.8", "ff02::1", "fc00::1", "fd12:3456::1",
    # IPv6 forms embedding a non-global IPv4
    "::ffff:10.0.0.1", "::ffff:192.88.99.1", "::10.0.0.1", "::ffff:0:10.0.0.1", "64:ff9b::a00:1",
    "64:ff9b::c058:6301", "64:ff9b::c612:1", "64:ff9b::cb00:7101", "2002:c058:6301::1", "2002:a00:1::1",
    "2002:c612:1::5", "2002:7f00:1::", "2001:0:a00:1::1", "2001:0:808:808::f5ff:fffe",
    "2001:0:808:808:0:0:3fe7:9cfe", "64:ff9b:1::a00:1",
]
GLOBAL = ["93.184.215.14", "8.8.8.8", "1.1.1.1", "2606:4700::1111", "2a00:1450:4001::200e", "64:ff9b::808:808",
          "2002:808:808::1", "192.0.0.9", "192.0.0.10", "2001:4:112::1", "2620:4f:8000::1", "2001:3::1"]


async def _check(address: str, *, by_name: bool) -> IPAddress:
    guard = AddressGuard(StaticResolver({"api.example.com": [address]}))
    host = "api.example.com" if by_name else (f"[{address}]" if ":" in address else address)
    return await guard.check("https", host.strip("[]") if not by_name else host, 443, allow_private=False)


@pytest.mark.parametrize("by_name", [False, True], ids=["literal", "dns-answer"])
@pytest.mark.parametrize("address", NOT_GLOBAL)
async def test_special_purpose_addresses_are_refused(address: str, by_name: bool) -> None:
    with pytest.raises(HostRefused):
        await _check(address, by_name=by_name)


@pytest.mark.parametrize("by_name", [False, True], ids=["literal", "dns-answer"])
@pytest.mark.parametrize("address", GLOBAL)
async def test_global_addresses_still_pass(address: str, by_name: bool) -> None:
    assert await _check(address, by_name=by_name) == ipaddress.ip_address(address)


async def test_one_bad_answer_among_good_ones_refuses_the_name() -> None:
    guard = AddressGuard(StaticResolver({"api.example.com": ["93.184.215.14", "fec0::1"]}))
    with pytest.raises(HostRefused, match="fec0::1"):
        await guard.check("https", "api.example.com", 443, allow_private=False)


# The loopback server, allowed as 127.0.0.1:PORT, spelled otherwise in a redirect: a new origin.
SPELLINGS = [
    "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1", "127.0.0.1.", "127.0.1", "017700000001",
    "%31%32%37.0.0.1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]", "[::127.0.0.1]",
    "[64:ff9b::7f00:1]", "[2002:7f00:1::1]", "[::1]", "[0::1]", "[::]", "0.0.0.0", "0", "localhost",
    "localhost.", "LOCALHOST", "xn--localhost-", "127.000.000.001", "[fec0::1]", "[3fff::1]", "192.88.99.1",
    "\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3", "\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54",
    "\uff11\uff12\uff17.\uff10.\uff10.\uff11", "127\u30020\u30020\u30021", "127\uff0e0\uff0e0\uff0e1",
    "%6c%6f%63%61%6c%68%6f%73%74", "[::ffff:127.0.0.1]%2e", "127.0.0.1%00.example.com",
]


@pytest.mark.parametrize("host", SPELLINGS)
async def test_redirect_to_another_spelling_of_loopback_is_refused(
    host: str, fresh: _Scripted, tmp_path: Path
) -> None:
    fresh.routes["/go"] = (302, [("Location", f"http://{host}:{fresh.port}/landed")], b"")
    reach = _reach(tmp_path, _svc(fresh.port), resolver=StaticResolver({"localhost": ["127.0.0.1"]}))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/go"})
    assert not result.ok, result.content
    assert "/landed" not in fresh.paths()


# --------------------------------------------------------------------------- 2. ports

BAD_PORTS = ["+{p}", " {p}", "{p} ", "0", "65536", "99999999999999999999", "-1", "0{p}", "00{p}", "{p}a",
             "\u0661\u0662", "\uff18\uff10", "{p}:{p}", "0x50", "", "-0"]


@pytest.mark.parametrize("form", BAD_PORTS)
async def test_redirect_with_an_odd_port_is_refused(form: str, fresh: _Scripted, tmp_path: Path) -> None:
    port = form.format(p=fresh.port)
    fresh.routes["/go"] = (302, [("Location", f"http://127.0.0.1:{port}/landed")], b"")
    reach = _reach(tmp_path, _svc(fresh.port))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/go"})
    assert not result.ok, result.content
    assert "/landed" not in fresh.paths()
    assert "internal error" not in result.error.message


@pytest.mark.parametrize("form", BAD_PORTS)
def test_base_url_with_an_odd_port_is_a_config_error(form: str) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        build_connectors({"services": {"svc": {"base_url": f"https://api.example.com:{form.format(p=8443)}/v1"}}})


async def test_explicit_ports_still_work(fresh: _Scripted, tmp_path: Path) -> None:
    fresh.routes["/go"] = (302, [("Location", f"http://127.0.0.1:{fresh.port}/landed")], b"")
    reach = _reach(tmp_path, _svc(fresh.port))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/go"})
    assert result.ok and result.content["status"] == 200
    assert fresh.paths() == ["/go", "/landed"]
    build_connectors({"services": {"a": {"base_url": "https://api.example.com:8443/v1"},
                                   "b": {"base_url": "http://api.example.com:80"},
                                   "c": {"base_url": "https://api.example.com:65535"}}})


# --------------------------------------------------------------------------- 3. base_url and servers

TRICKY_URLS = [
    "http://user@api.example.com/", "http://user:pw@api.example.com/", "http://@api.example.com/",
    "http://api.example.com@evil.example/", "http://api.example.com\\@evil.example/",
    "http://api.example.com%2f@evil.example/", "http://api.example.com:443@evil.example/",
    "http://api.example.com\\evil.example/", "http:\\\\api.example.com/", "http:/api.example.com/",
    "http:///api.example.com/", "http://api.example.com\\", "http://api.example.com/v1\\..\\admin",
    "http://api.example.com\t/", "http://api.example.com\n.evil.example/", "http://api.example.com /",
    "http://api.example.com\uff03@evil.example/", "http://api.example.com\uff20evil.example/",
    "http://api.example.com#@evil.example/", "http://api.example.com?@evil.example/",
    "HTTP://USER@API.EXAMPLE.COM/", "http://%61pi.example.com@evil.example/", "http://[::1]@evil.example/",
    "http://api.example.com\u3002evil.example\uff20x/",
]


@pytest.mark.parametrize("url", TRICKY_URLS)
def test_base_url_parser_tricks_are_config_errors_naming_the_setting(url: str) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        build_connectors({"services": {"svc": {"base_url": url}}})


def _doc(server_url: str, path: str = "/items/{id}") -> dict[str, Any]:
    return {
        "openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": server_url}],
        "paths": {path: {"get": {
            "operationId": "getItem", "summary": "Get an item",
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok"}},
        }}},
    }


@pytest.mark.parametrize("url", TRICKY_URLS)
def test_document_servers_parser_tricks_are_config_errors_naming_servers(url: str, tmp_path: Path) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(_doc(url)))
    with pytest.raises(ConfigError, match="server"):
        build_connectors({"services": {"svc": {"openapi": str(doc)}}})


def test_honest_base_urls_and_servers_still_load(tmp_path: Path) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(_doc("https://api.example.com/v1")))
    tools = build_connectors({"services": {
        "a": {"base_url": "https://api.example.com/v1/"}, "b": {"base_url": "https://xn--bcher-kva.example/x"},
        "c": {"openapi": str(doc)}, "d": {"base_url": "https://API.Example.COM/with%20space"},
    }})
    assert {t.name for t in tools} >= {"getItem", "http_get"}


# --------------------------------------------------------------------------- 4. path parameters

CLIMBS = [
    "%c0%ae%c0%ae", "%c0%ae%c0%ae%c0%afadmin", "%C0%AE%C0%AE%C0%AF", "%e0%80%ae%e0%80%ae",
    "%e0%80%ae%e0%80%ae%e0%80%afadmin", "%f0%80%80%ae%f0%80%80%ae", "%c0%2e%c0%2e", "..%c0%af", "..%c1%9c",
    "%c0%ae.", ".%c0%ae", "%25c0%25ae%25c0%25ae", "%u002e%u002e", "%u002E%u002E%u2215", "%U002e%U002e",
    "..%u2215admin", "..\\admin", "..\\", "\\..\\", "..%5cadmin", "%2e%2e%5c", "\u2025", "\uff0e\uff0e",
    "\u2024\u2024", "..\u2215admin", "..\uff0fadmin", "..\u2044", "\ufe52\ufe52", "%ef%b9%92%ef%b9%92",
    "\u3002\u3002", "\uff61\uff61", "../..", "..", "%2e%2e%2fadmin", "%252e%252e%252fadmin",
]


def _lenient_segments(raw_path: str) -> list[str]:
    """What the most lenient server could read: escapes, %uXXXX, overlong UTF-8, look-alikes."""
    import re
    import unicodedata

    text = raw_path
    for _ in range(4):
        text = re.sub(r"%u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
        data = unquote_to_bytes(text)
        data = re.sub(rb"[\xc0\xc1]([\x80-\xbf])",
                      lambda m: bytes([((m.group(0)[0] & 0x1F) << 6 | (m.group(1)[0] & 0x3F)) & 0x7F]), data)
        data = re.sub(rb"\xe0[\x80-\x9f]([\x80-\xbf])", lambda m: bytes([m.group(1)[0] & 0x3F]), data)
        data = re.sub(rb"\xf0[\x80-\x8f][\x80-\xbf]([\x80-\xbf])", lambda m: bytes([m.group(1)[0] & 0x3F]), data)
        decoded = data.decode("utf-8", "replace")
        if decoded == text:
            break
        text = decoded
    text = unicodedata.normalize("NFKC", text).translate({0x3002: ".", 0xFF61: ".", 0x2215: "/", 0x2044: "/"})
    return text.replace("\\", "/").split("/")


@pytest.mark.parametrize("value", CLIMBS)
async def test_path_parameter_cannot_climb_in_any_encoding(value: str, fresh: _Scripted, tmp_path: Path) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(_doc(f"http://127.0.0.1:{fresh.port}/api/v1", "/items/{id}/detail")))
    reach = _reach(tmp_path, {"services": {"svc": {"openapi": str(doc), "allow_private": True,
                                                   "base_url": f"http://127.0.0.1:{fresh.port}/api/v1"}}})
    result = await reach.invoke("getItem", {"id": value})
    for path in fresh.paths():
        segments = _lenient_segments(path.split("?", 1)[0])
        assert ".." not in [s.strip() for s in segments], (value, path)
    if not result.ok:
        assert result.error.code == "invalid_arguments", result.error


@pytest.mark.parametrize("value", CLIMBS)
async def test_generic_path_cannot_climb_in_any_encoding(value: str, fresh: _Scripted, tmp_path: Path) -> None:
    reach = _reach(tmp_path, {"services": {"svc": {"base_url": f"http://127.0.0.1:{fresh.port}/api/v1",
                                                   "allow_private": True}}})
    result = await reach.invoke("http_get", {"service": "svc", "path": f"/items/{value}/x"})
    assert not result.ok and result.error.code == "invalid_arguments", (value, fresh.paths())
    assert fresh.paths() == []


@pytest.mark.parametrize("value", ["42", "caf\u00e9", "a.b", "v1.2.3", "%", "100%", "x..y", "...", "na\u00efve",
                                   "\u4e2d\u6587"])
async def test_honest_path_parameters_still_arrive_below_the_base(value: str, fresh: _Scripted, tmp_path: Path) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(_doc(f"http://127.0.0.1:{fresh.port}/api/v1", "/items/{id}/detail")))
    reach = _reach(tmp_path, {"services": {"svc": {"openapi": str(doc), "allow_private": True,
                                                   "base_url": f"http://127.0.0.1:{fresh.port}/api/v1"}}})
    result = await reach.invoke("getItem", {"id": value})
    assert result.ok, result.error
    assert fresh.paths()[-1].startswith("/api/v1/items/") and fresh.paths()[-1].endswith("/detail")


# --------------------------------------------------------------------------- 5. answers

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
BINARY_ANSWERS = {
    "png-as-json": (200, [("Content-Type", "application/json")], PNG),
    "png-untyped": (200, [], PNG),
    "png-as-text": (200, [("Content-Type", "text/plain")], PNG),
    "nul-text": (200, [("Content-Type", "text/plain; charset=utf-8")], b"ok\x00\x00\x00\x00secret-ish\x00" * 20),
    "br": (200, [("Content-Type", "application/json"), ("Content-Encoding", "br")], b"\x1b\x0b\x00\xf8\xa5" * 40),
    "zstd": (200, [("Content-Type", "application/json"), ("Content-Encoding", "zstd")], b"\x28\xb5\x2f\xfd" + PNG),
    "compress": (200, [("Content-Type", "text/plain"), ("Content-Encoding", "compress")], b"\x1f\x9d\x90" + PNG),
    "unknown": (200, [("Content-Type", "text/plain"), ("Content-Encoding", "x-custom")], b"plain looking text" * 10),
    "gzip-then-br": (200, [("Content-Type", "text/plain"), ("Content-Encoding", "gzip, br")], PNG),
    "BR-upper": (200, [("Content-Type", "text/plain"), ("Content-Encoding", "BR")], PNG),
    "octet": (200, [("Content-Type", "application/octet-stream")], b"hello world" * 10),
    "error-binary": (400, [("Content-Type", "application/json")], PNG),
}


@pytest.mark.parametrize("name", sorted(BINARY_ANSWERS))
async def test_binary_and_undecodable_bodies_are_described_not_dumped(
    name: str, fresh: _Scripted, tmp_path: Path
) -> None:
    fresh.routes["/b"] = BINARY_ANSWERS[name]
    reach = _reach(tmp_path, _svc(fresh.port))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/b"})
    shown = json.dumps(result.content if result.ok else result.error.message, ensure_ascii=False)
    assert "<binary body: " in shown, shown
    assert "\ufffd" not in shown and "\\u0000" not in shown and "PNG" not in shown
    assert "plain looking text" not in shown and "hello world" not in shown
    assert f"{len(BINARY_ANSWERS[name][2])} bytes" in shown


@pytest.mark.parametrize("body", ["[" * n + "]" * n for n in (101, 1000, 20_000)]
                         + ['{"a":' * n + "1" + "}" * n for n in (150, 5000)]
                         + ["[" * 60 + '{"x":' * 60 + "0" + "}" * 60 + "]" * 60, '["' + "[" * 5000 + '"]' * 0])
async def test_json_nested_too_deep_is_text_not_a_crash(body: str, fresh: _Scripted, tmp_path: Path) -> None:
    fresh.routes["/deep"] = (200, [("Content-Type", "application/json")], body.encode())
    reach = _reach(tmp_path, _svc(fresh.port, max_response_bytes=100_000))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/deep"})
    assert result.ok, result.error
    assert isinstance(result.content["body"], str)
    fresh.routes["/deep"] = (400, [("Content-Type", "application/json")], body.encode())
    failed = await reach.invoke("http_get", {"service": "svc", "path": "/deep"})
    assert failed.error.code == "execution_failed" and "internal error" not in failed.error.message


async def test_json_nested_100_deep_is_still_parsed(fresh: _Scripted, tmp_path: Path) -> None:
    fresh.routes["/ok"] = (200, [("Content-Type", "application/json")], ("[" * 100 + "]" * 100).encode())
    reach = _reach(tmp_path, _svc(fresh.port))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/ok"})
    assert isinstance(result.content["body"], list)


@pytest.mark.parametrize("header", ["Location", "Link", "ETag", "Content-Type", "X-Next", "Retry-After"])
@pytest.mark.parametrize("size", [2_100, 60_000])
async def test_long_header_values_are_cut(header: str, size: int, fresh: _Scripted, tmp_path: Path) -> None:
    value = ("application/json; x=" if header == "Content-Type" else "/") + "a" * size
    fresh.routes["/h"] = (200, [(header, value)], b"{}")
    reach = _reach(tmp_path, _svc(fresh.port, max_redirects=0))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/h"})
    assert result.ok, result.error
    assert all(len(v) <= 2_100 for v in result.content.get("headers", {}).values()), result.content


SECRET = "Zq7tok-9fQx7LmZ2vKp4RtY8wNbC3d"


def _esc(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


def _secret_answers(cut: int) -> dict[str, tuple[int, list[tuple[str, str]], bytes]]:
    json_t = [("Content-Type", "application/json")]
    return {
        "text-over-cut": (200, [("Content-Type", "text/plain")], ("x" * (cut - 8) + SECRET + " tail" * 50).encode()),
        "escaped-json-string-cut": (200, json_t, json.dumps(
            {"a": "y" * 490 + "@@" + "z" * 5000, "n": list(range(400))}).replace("@@", _esc(SECRET)).encode()),
        "escaped-json-key": (200, json_t, ('{"' + _esc(SECRET) + '":1,' + ",".join(f'"k{i}":{i}' for i in range(900))
                                           + "}").encode()),
        "utf16": (200, [("Content-Type", "text/plain; charset=utf-16")],
                  ("w" * (cut - 10) + SECRET + " more" * 100).encode("utf-16")),
        "error-message-cut": (400, json_t, json.dumps({"message": "m" * 290 + "@@"}).replace(
            "@@", _esc(SECRET)).encode()),
        "error-text-cut": (400, [("Content-Type", "text/plain")], ("e" * 295 + SECRET).encode()),
        "location-cut": (302, [("Location", "/next?x=" + "l" * 1990 + SECRET)], b""),
        "link-cut": (200, [("Link", "<" + "k" * 1995 + SECRET + ">"), ("Content-Type", "application/json")], b"{}"),
        "wire-cut": (200, [("Content-Type", "text/plain")], ("w" * 1020 + SECRET + "after" * 400).encode()),
    }


@pytest.mark.parametrize("auth", ["bearer", "header", "query"])
@pytest.mark.parametrize("name", sorted(_secret_answers(0)))
async def test_secrets_are_masked_before_any_cut(auth: str, name: str, fresh: _Scripted, tmp_path: Path) -> None:
    cut = 1000
    fresh.routes["/s"] = _secret_answers(cut)[name]
    auth_cfg = {"bearer": {"type": "bearer", "token": SECRET},
                "header": {"type": "header", "name": "X-Api-Key", "value": SECRET},
                "query": {"type": "query", "name": "key", "value": SECRET}}[auth]
    reach = _reach(tmp_path, _svc(fresh.port, auth=auth_cfg, max_body_chars=cut, max_redirects=0,
                                  max_response_bytes=1024 if name == "wire-cut" else 2_000_000))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/s"})
    shown = json.dumps(result.content if result.ok else result.error.message, ensure_ascii=False)
    assert SECRET[:6] not in shown, shown[-400:]
    assert SECRET[-6:] not in shown


async def test_text_without_secrets_is_shown_as_sent(fresh: _Scripted, tmp_path: Path) -> None:
    text = "h\u00e9llo w\u00f6rld"
    fresh.routes["/t"] = (200, [("Content-Type", "text/plain; charset=utf-16")], text.encode("utf-16"))
    reach = _reach(tmp_path, _svc(fresh.port, auth={"type": "bearer", "token": SECRET}))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/t"})
    assert result.content["body"] == text


# --------------------------------------------------------------------------- 6. OpenAPI documents

def _laughs(levels: int, width: int) -> str:
    lines = ["openapi: 3.0.3", "info: {title: t, version: '1'}", "x-a0: &a0 [lol]"]
    for i in range(1, levels):
        lines.append(f"x-a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    lines.append(f"x-top: *a{levels - 1}")
    lines.append("paths: {}")
    return "\n".join(lines) + "\n"


BOMBS = {
    "laughs-9x9": _laughs(9, 9),
    "laughs-30x2": _laughs(30, 2),
    "laughs-5x100": _laughs(5, 100),
    "recursive": "openapi: 3.0.3\ninfo: {title: t, version: '1'}\nx-r: &r [*r]\npaths: {}\n",
    "recursive-map": "openapi: 3.0.3\ninfo: {title: t, version: '1'}\nx-r: &r {self: *r}\npaths: {}\n",
    "in-paths": "openapi: 3.0.3\ninfo: {title: t, version: '1'}\nx-p: &p {get: {responses: {'200': "
                "{description: ok}}}}\nx-q: &q [" + ", ".join(["*p"] * 200) + "]\nx-w: &w [" + ", ".join(["*q"] * 200)
                + "]\nx-z: [" + ", ".join(["*w"] * 200) + "]\npaths: {/a: *p}\n",
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_yaml_alias_bombs_are_refused_quickly(name: str, tmp_path: Path) -> None:
    doc = tmp_path / "bomb.yaml"
    doc.write_text(BOMBS[name])
    started = time.monotonic()
    with pytest.raises(ConfigError, match="openapi"):
        build_connectors({"services": {"svc": {"openapi": str(doc), "base_url": "https://api.example.com"}}})
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("kind", ["bytes", "nodes-json"])
def test_giant_documents_are_refused_with_a_clear_error(kind: str, tmp_path: Path) -> None:
    doc = tmp_path / ("doc.json" if kind != "nodes-yaml" else "doc.yaml")
    if kind == "bytes":
        doc.write_text('{"openapi": "3.0.3", "x": "' + "a" * 21_000_000 + '", "paths": {}}')
    elif kind == "nodes-json":
        doc.write_text('{"openapi": "3.0.3", "x": [' + ",".join(["0"] * 1_100_000) + '], "paths": {}}')
    with pytest.raises(ConfigError, match="too large|too many"):
        build_connectors({"services": {"svc": {"openapi": str(doc), "base_url": "https://api.example.com"}}})


@pytest.mark.parametrize("text", [
    "openapi: 3.0.3\nx: [" + ",".join(["0"] * 1_100) + "]\npaths: {}\n",
    "openapi: 3.0.3\nx:\n" + "".join(f"  k{i}: {i}\n" for i in range(600)) + "paths: {}\n",
    "openapi: 3.0.3\na: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb: [" + ", ".join(["*a"] * 100) + "]\npaths: {}\n",
])
def test_the_value_cap_counts_yaml_values_and_alias_uses(text: str) -> None:
    """The same rule as the 1,000,000 cap, at a size a test can afford to compose."""
    with pytest.raises(OpenAPIError, match="too large"):
        parse_document(text, "doc.yaml", max_nodes=1_000)
    assert parse_document(text, "doc.yaml", max_nodes=5_000)["openapi"] == "3.0.3"


def test_yaml_documents_with_honest_anchors_still_load(tmp_path: Path) -> None:
    doc = tmp_path / "doc.yaml"
    doc.write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\n"
        "x-ok: &ok {description: ok}\n"
        "paths:\n  /a:\n    get: {operationId: getA, summary: A, responses: {'200': *ok}}\n"
        "  /b:\n    get: {operationId: getB, summary: B, responses: {'200': *ok, '404': *ok}}\n"
    )
    tools = build_connectors({"services": {"svc": {"openapi": str(doc), "base_url": "https://api.example.com"}}})
    assert {t.name for t in tools} == {"getA", "getB"}


# --------------------------------------------------------------------------- 7. 307/308 across origins


class _LoopbackGuard(AddressGuard):
    """Behind the guard: lets both loopback servers through so the redirect logic itself is tested."""

    async def check(self, scheme: str, host: str, port: int, *, allow_private: bool) -> IPAddress:
        if host.lower().strip(".") not in ("127.0.0.1", "localhost"):
            raise HostRefused(f"{host} is not a test host")
        return ipaddress.ip_address("127.0.0.1")


def _targets(srv: _Scripted, oth: _Scripted) -> list[str]:
    return [f"http://localhost:{srv.port}/landed", f"http://127.0.0.1:{oth.port}/landed",
            f"http://localhost:{oth.port}/landed", f"http://LOCALHOST.:{srv.port}/landed"]


@pytest.mark.parametrize("code", [307, 308])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
@pytest.mark.parametrize("which", range(4))
async def test_307_308_to_another_origin_resends_neither_body_nor_credentials(
    code: int, method: str, which: int, fresh: _Scripted, other: _Scripted, tmp_path: Path
) -> None:
    target = _targets(fresh, other)[which]
    fresh.routes["/go"] = (code, [("Location", target)], b"")
    settings = _svc(fresh.port, auth={"type": "bearer", "token": SECRET}, headers={"X-Api-Key": SECRET + "2"},
                    methods=["POST", "PUT", "PATCH"])
    reach = _reach(tmp_path, settings, guard=_LoopbackGuard())
    result = await reach.invoke("http_request", {"service": "svc", "method": method, "path": "/go",
                                                 "json": {"card": "4111 1111 1111 1111"}})
    landed = [r for s in (fresh, other) for r in s.seen if r["path"] == "/landed"]
    for request in landed:
        assert b"4111" not in request["body"]
        assert SECRET not in json.dumps(request["headers"])
    assert result.ok or result.error.code != "execution_failed" or "internal error" not in result.error.message


@pytest.mark.parametrize("code", [307, 308])
async def test_307_308_on_the_same_origin_keeps_body_and_credentials(
    code: int, fresh: _Scripted, tmp_path: Path
) -> None:
    fresh.routes["/go"] = (code, [("Location", "/landed")], b"")
    settings = _svc(fresh.port, auth={"type": "bearer", "token": SECRET}, methods=["POST"])
    reach = _reach(tmp_path, settings)
    result = await reach.invoke("http_request", {"service": "svc", "method": "POST", "path": "/go",
                                                 "json": {"n": 1}})
    assert result.ok, result.error
    landed = [r for r in fresh.seen if r["path"] == "/landed"]
    assert landed and json.loads(landed[0]["body"]) == {"n": 1}
    assert landed[0]["headers"].get("Authorization") == f"Bearer {SECRET}"
