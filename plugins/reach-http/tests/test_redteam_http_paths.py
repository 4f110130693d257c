"""Red-team round 5: the model's `path` in the spellings servers read differently, and slow answers.

The base URL's path is a scope (``https://api.example.com/repos/me/x``): a path the model
sends must stay below it. ``..`` written plainly was refused, but nginx and Apache decode
``%2e%2e`` before they resolve dot segments, Tomcat and Jetty drop ``;params`` first
(``..;/``), and a normalising framework reads the two-dot leader ``\u2025`` as ``..``.
Control characters written as escapes (``%0d%0a``) were sent as they were, and ``\\x7f``
raised an internal error instead of a message. Every probe goes through ``reach.invoke``
to a real server on 127.0.0.1, which proves nothing arrived.

``timeout`` is documented per request, but httpx's timeouts bound each *read*: a server
dripping one byte just inside it held a call until the core's deadline (15 s for a 0.3 s
timeout). A real socket server drips here; the result must name the service's own timeout.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_testserver import Server


@pytest.fixture
def server(shared_server: Server) -> Server:
    return shared_server  # one server for the module (see conftest)


DOTS = [
    "%2e%2e", "%2E%2E", ".%2e", "%2e.", "%2E.", "%2e", "%252e%252e", "%25252e%25252e", "%252E.",
    "..;", "..;jsessionid=1", "%2e%2e;x", ".;", "..%2f", "..%2F", "..%5c", "..%5C", "%2e%2e%2f", "%2e%2e%5c",
    "..%252f", "\u2025", "\u2024\u2024", "\u2024", "\uff0e\uff0e", "\uff0e", ".\uff0e", "%E2%80%A5",
    "%EF%BC%8E%EF%BC%8E", "%e2%80%a4%e2%80%a4",
]
PLACES = ["/{}/admin", "/a/{}/b", "/a/{}"]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("dots", DOTS)
async def test_dot_segments_in_every_spelling_are_refused(dots: str, place: str, server: Server, make) -> None:
    reach = make({"services": {"svc": {"base_url": f"http://127.0.0.1:{server.port}/echo/api/v1",
                                       "allow_private": True}}})
    path = place.format(dots)
    for tool, args in (("http_get", {}), ("http_request", {"method": "POST", "json": {"a": 1}})):
        result = await reach.invoke(tool, {"service": "svc", "path": path, **args})
        assert not result.ok and result.error.code == "invalid_arguments", (tool, path, result)
        assert "'..'" in result.error.message and "path" in result.error.message
    assert server.state.requests == []


CONTROLS = [
    "\x7f", "\x85", "\x9b", "\u2028", "\u2029", "\u00a0", "\u3000", "\u2007",  # written as they are
    "%0d%0a", "%0D%0A", "%0a", "%0d", "%00", "%7f", "%09", "%250d%250a", "%25250a", "%c2%85", "%C2%85",
    "%e2%80%a8", "%E2%80%A9", "%1b",  # percent-encoded
]


@pytest.mark.parametrize("control", CONTROLS)
async def test_control_characters_raw_or_encoded_are_invalid_arguments(control: str, server: Server, make) -> None:
    reach = make({"services": {"svc": {"base_url": f"http://127.0.0.1:{server.port}", "allow_private": True}}})
    for path in (f"/echo/a{control}b", f"/echo/{control}Set-Cookie:%20x=1", f"/echo/x{control}"):
        result = await reach.invoke("http_get", {"service": "svc", "path": path})
        assert not result.ok and result.error.code == "invalid_arguments", (path, result)
        assert "control characters" in result.error.message, result.error.message
    assert server.state.requests == []


ORDINARY = [
    "/files/my%20doc.txt", "/a;v=1", "/projects/group%2Fproject", "/v1.2/x", "/...", "/a..b", "/.well-known/x",
    "/%2e%2e%2e", "/caf\u00e9", "/100%25", "/a/b.", "/a/.b", "/x/%25", "/tags/c%2B%2B", "/u/%E4%B8%AD",
]


@pytest.mark.parametrize("path", ORDINARY)
async def test_ordinary_paths_still_arrive(path: str, server: Server, make) -> None:
    reach = make({"services": {"svc": {"base_url": f"http://127.0.0.1:{server.port}/echo",
                                       "allow_private": True}}})
    result = await reach.invoke("http_get", {"service": "svc", "path": path})
    assert result.ok, (path, result.error)
    assert len(server.state.requests) == 1


def _doc() -> dict[str, Any]:
    return {
        "openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "/echo/files"}],
        "paths": {"/{name}/meta": {"get": {
            "operationId": "getMeta", "summary": "Metadata of a file",
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok"}}}}},
    }


PARAM_DOTS = ["..", ".", "%2e%2e", "%2E.", "..;", "..;x", "\u2025", "\uff0e\uff0e", "%252e%252e", "%0d%0a"]


@pytest.mark.parametrize("value", PARAM_DOTS)
async def test_openapi_path_parameters_cannot_climb_either(value: str, server: Server, make, tmp_path: Path) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(_doc()))
    reach = make({"services": {"svc": {"openapi": str(doc), "base_url": f"http://127.0.0.1:{server.port}/echo/files",
                                       "allow_private": True}}})
    result = await reach.invoke("getMeta", {"name": value})
    assert not result.ok and result.error.code == "invalid_arguments", (value, result)
    assert server.state.requests == []
    ok = await reach.invoke("getMeta", {"name": "report 2026.txt"})
    assert ok.ok, ok.error
    assert server.state.requests[-1]["path"] == "/echo/files/report%202026.txt/meta"


class Drip:
    """A raw socket server that answers slowly: headers or body one piece per ``interval``."""

    def __init__(self, *, where: str, interval: float = 0.1, pieces: int = 300) -> None:
        self.where, self.interval, self.pieces = where, interval, pieces
        self.requests: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.stopped = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _run(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                self.requests.append(conn.recv(65536))
                if self.where == "headers":
                    conn.sendall(b"HTTP/1.1 200 OK\r\n")
                    for i in range(self.pieces):
                        if self.stopped:
                            return
                        time.sleep(self.interval)
                        conn.sendall(f"X-Drip-{i}: {i}\r\n".encode())
                    conn.sendall(b"Content-Length: 0\r\n\r\n")
                    return
                chunked = self.where == "chunked"
                head = b"Transfer-Encoding: chunked" if chunked else f"Content-Length: {self.pieces}".encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + head + b"\r\n\r\n")
                for _ in range(self.pieces):
                    if self.stopped:
                        return
                    time.sleep(self.interval)
                    conn.sendall(b"1\r\nx\r\n" if chunked else b"x")
            except OSError:
                return

    def stop(self) -> None:
        self.stopped = True
        self.sock.close()


@pytest.fixture(params=["body", "chunked", "headers"])
def drip(request: pytest.FixtureRequest) -> Iterator[Drip]:
    srv = Drip(where=request.param)
    yield srv
    srv.stop()


async def test_a_dripping_read_ends_at_the_services_timeout(drip: Drip, make) -> None:
    reach = make({"services": {"d": {"base_url": f"http://127.0.0.1:{drip.port}", "allow_private": True,
                                     "timeout": 0.3}}},
                 config={"connectors": {"http_get": {"retries": 0}}})
    result = await reach.invoke("http_get", {"service": "d", "path": "/x"})
    assert not result.ok and result.error.code == "upstream_unavailable", result
    assert "within 0.3 s" in result.error.message, result.error.message
    assert len(drip.requests) == 1


async def test_a_dripping_write_is_an_unknown_outcome_sent_once(drip: Drip, make) -> None:
    reach = make({"services": {"d": {"base_url": f"http://127.0.0.1:{drip.port}", "allow_private": True,
                                     "timeout": 0.3, "methods": ["GET", "POST"]}}})
    result = await reach.invoke("http_request", {"service": "d", "method": "POST", "path": "/x", "json": {"a": 1}})
    assert not result.ok and result.error.code == "outcome_unknown", result
    assert "within 0.3 s" in result.error.message, result.error.message
    assert len(drip.requests) == 1
