"""A real HTTP server on 127.0.0.1 implementing a few operations of the test documents.

Petstore 3 (``/v3/...``), the openapi-core petstore (``/pets``, ``/tags``), the
3.1 petstore (``/v1/pets``) and some behaviours the client must handle
(``/status/N``, ``/redirect``, ``/slow``, ``/big``, ``/echo``, ``/binary``). Every
request is recorded so tests can assert what reached the server (and how often).
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from reach_http import AddressGuard, StaticResolver, build_connectors

from reach_core.testing import make_reach

DATA = Path(__file__).parent / "data"


class State:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.pets: dict[int, dict[str, Any]] = {
            1: {"id": 1, "name": "Rex", "photoUrls": [], "status": "available", "tags": [{"id": 1, "name": "dog"}]},
            2: {"id": 2, "name": "Tom", "photoUrls": [], "status": "sold", "tags": [{"id": 2, "name": "cat"}]},
        }
        self.failures: list[tuple[int, dict[str, str]]] = []
        self.documents: dict[str, bytes] = {}  # extra path -> JSON body served as is (test documents)
        self.lock = threading.Lock()

    def count(self, method: str, path: str) -> int:
        return sum(1 for r in self.requests if r["method"] == method and r["path"] == path)


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
        pass

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None,
              content_type: str = "application/json") -> None:
        raw = b""
        if body is not None:
            raw = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", content_type)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(raw)

    def _handle(self) -> None:
        state = self.server.state
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw and "json" in (self.headers.get("Content-Type") or "") else raw.decode()
        record = {"method": self.command, "path": path, "query": query, "headers": dict(self.headers.items()),
                  "body": body, "raw_query": parts.query}
        with state.lock:
            state.requests.append(record)
            failure = state.failures.pop(0) if state.failures else None
        if failure is not None:
            status, headers = failure
            self._send(status, {"message": f"scripted failure {status}"}, headers)
            return
        self._route(path, query, body, record)

    def _route(self, path: str, query: dict[str, list[str]], body: Any, record: dict[str, Any]) -> None:
        state = self.server.state
        m = self.command
        if path in state.documents:
            return self._send(200, state.documents[path])
        # ---- Swagger Petstore 3 (servers: /v3)
        if path == "/openapi.json":
            return self._send(200, (DATA / "petstore3" / "openapi.json").read_bytes())
        if path == "/openapi.yaml":
            return self._send(200, (DATA / "openapi-core-petstore" / "petstore.yaml").read_bytes(),
                              content_type="application/yaml")
        if (match := re.fullmatch(r"/v3/pet/(\w+)", path)) and not path.startswith("/v3/pet/find"):
            if not match.group(1).isdigit():
                return self._send(400, {"code": 400, "message": "Invalid ID supplied"})
            pet_id = int(match.group(1))
            if m == "GET":
                pet = state.pets.get(pet_id)
                return self._send(200, pet) if pet else self._send(404, {"code": 1, "type": "error",
                                                                         "message": "Pet not found"})
            if m == "DELETE":
                if state.pets.pop(pet_id, None) is None:
                    return self._send(404, {"code": 1, "type": "error", "message": "Pet not found"})
                return self._send(200, {"code": 200, "message": f"deleted {pet_id}"})
        if path == "/v3/pet" and m in ("POST", "PUT"):
            if not isinstance(body, dict) or "name" not in body:
                return self._send(400, {"code": 400, "message": "Invalid input: name is required"})
            pet = dict(body)
            pet.setdefault("id", max(state.pets) + 1)
            state.pets[pet["id"]] = pet
            return self._send(200, pet)
        if path == "/v3/pet/findByStatus" and m == "GET":
            wanted = query.get("status", ["available"])[0]
            return self._send(200, [p for p in state.pets.values() if p.get("status") == wanted])
        if path == "/v3/pet/findByTags" and m == "GET":
            tags = set(query.get("tags", []))
            return self._send(200, [p for p in state.pets.values()
                                    if tags & {t["name"] for t in p.get("tags", [])}])
        if path == "/v3/store/inventory" and m == "GET":
            if record["headers"].get("api_key") != "special-key":
                return self._send(401, {"message": "api_key header missing or wrong"})
            counts: dict[str, int] = {}
            for p in state.pets.values():
                counts[p["status"]] = counts.get(p["status"], 0) + 1
            return self._send(200, counts)
        # ---- openapi-core petstore (servers: http://petstore.swagger.io/v1)
        if path == "/v1/pets" and m == "GET":
            return self._send(200, {"data": [{"id": i, "name": p["name"]} for i, p in state.pets.items()],
                                    "query": query}, {"x-next": "page=2"})
        if path == "/v1/pets" and m == "POST":
            if not record["headers"].get("api-key") or "user=" not in (record["headers"].get("Cookie") or ""):
                return self._send(400, {"title": "api-key header and user cookie are required"})
            return self._send(201, None)
        if match := re.fullmatch(r"/v1/pets/(\d+)", path):
            pet = state.pets.get(int(match.group(1)))
            return self._send(200, {"data": pet}) if pet else self._send(404, {"title": "no such pet"})
        if path == "/v1/tags" and m == "POST":
            return self._send(200, {"created": body})
        # ---- behaviours
        if match := re.fullmatch(r"/status/(\d+)", path):
            status = int(match.group(1))
            headers = {"Retry-After": query["retry_after"][0]} if "retry_after" in query else {}
            return self._send(status, {"message": f"status {status} as asked"}, headers)
        if path == "/loop":
            return self._send(302, None, {"Location": "/loop"})
        if path == "/redirect":
            code = int(query.get("code", ["302"])[0])
            return self._send(code, None, {"Location": query["to"][0]})
        if path == "/slow":
            time.sleep(float(query.get("s", ["1"])[0]))
            return self._send(200, {"slept": True})
        if path == "/big":
            n = int(query.get("n", ["500"])[0])
            return self._send(200, {"items": [{"id": i, "text": "x" * 50} for i in range(n)]})
        if path == "/text":
            return self._send(200, ("word " * 3000).encode(), content_type="text/plain; charset=utf-8")
        if path == "/binary":
            return self._send(200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, content_type="image/png")
        if path.startswith("/echo"):
            return self._send(200, {"method": m, "path": path, "query": query, "body": body,
                                    "host": record["headers"].get("Host"),
                                    "authorization": record["headers"].get("Authorization"),
                                    "headers": record["headers"]})
        return self._send(404, {"message": f"no route {m} {path}"})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, ssl_context: ssl.SSLContext | None = None, host: str = "127.0.0.1") -> None:
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, 0), Handler)
        self.state = State()
        if ssl_context is not None:
            self.socket = ssl_context.wrap_socket(self.socket, server_side=True)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def local(server: Server, **extra: Any) -> dict[str, Any]:
    """Service settings for a loopback server (which needs allow_private)."""
    return {"base_url": f"http://127.0.0.1:{server.port}", "allow_private": True, **extra}


class LoopbackOrigins(AddressGuard):
    """Lets the test servers' loopback names (``127.0.0.1``, ``localhost``, any case, a trailing dot;
    ``[::1]``, pinned to ``127.0.0.1`` like the others) through as if public, so what is tested is
    the redirect and credential handling behind the guard; any other host is checked for real."""

    async def check(self, scheme: str, host: str, port: int, *, allow_private: bool):  # type: ignore[override]
        if host.lower().rstrip(".") in ("127.0.0.1", "localhost", "::1"):
            return ipaddress.ip_address("127.0.0.1")
        return await super().check(scheme, host, port, allow_private=allow_private)


def reach_for(tmp_path: Path, settings: dict[str, Any], *, guard: AddressGuard | None = None,
              connectors: dict[str, Any] | None = None) -> Any:
    """A Reach holding the tools of one service ``svc`` (behind :class:`LoopbackOrigins` unless
    ``guard`` says otherwise), without automatic retries."""
    reach = make_reach(config={
        "reach": {"data_dir": str(tmp_path / "data"), "retry_backoff": 0.01},
        "connectors": connectors or {"http_get": {"retries": 0}, "http_request": {"retries": 0}},
    })
    for tool in build_connectors({"services": {"svc": settings}}, guard=guard or LoopbackOrigins(StaticResolver())):
        reach.register(tool)
    return reach


def write_document(tmp_path: Path, paths: dict[str, Any], name: str = "api.json", **top: Any) -> str:
    """A minimal OpenAPI 3.0.3 document with these ``paths`` (and any other top-level keys) written
    as JSON under ``tmp_path``; returns its path."""
    doc = tmp_path / name
    doc.write_text(json.dumps({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, **top, "paths": paths}))
    return str(doc)


RawScript = Callable[[socket.socket, str], None]


def serve_raw(script: RawScript) -> tuple[socket.socket, int]:
    """A socket server on 127.0.0.1 answering each connection with ``script(conn, request_head)``,
    bytes exactly as the script writes them (malformed answers no HTTP server library sends).
    Close the returned listener to stop it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return

            def one(conn: socket.socket = conn) -> None:
                try:
                    script(conn, conn.recv(65536).decode("latin-1"))
                except OSError:
                    pass
                finally:
                    conn.close()

            threading.Thread(target=one, daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]
