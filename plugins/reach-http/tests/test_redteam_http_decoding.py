"""Red-team: a compressed answer cannot grow past the body cap in memory (issue 19's SSRF class:
any server a redirect reaches chooses the answer).

httpx undid ``Content-Encoding`` one network chunk at a time with no output limit, and
applied stacked encodings (``gzip, gzip``) in turn: a few kilobytes on the wire became
gigabytes before ``max_response_bytes`` was compared. Now each stage has a budget. Real
loopback server sending real gzip/deflate; one child process measures peak memory.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

BODIES: dict[str, tuple[bytes, str]] = {}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        body, encoding = BODIES[self.path]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _zeros_gzip(n: int, level: int = 9) -> bytes:
    """gzip of ``n`` zero bytes, built in pieces (never holding ``n`` bytes)."""
    co = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    piece = b"\0" * (1 << 20)
    out = [co.compress(piece) for _ in range(n >> 20)]
    out.append(co.compress(b"\0" * (n & ((1 << 20) - 1))))
    out.append(co.flush())
    return b"".join(out)


DOC = json.dumps({"items": [{"id": i, "name": f"item {i}"} for i in range(50)]}).encode()


def _raw_deflate(data: bytes) -> bytes:
    co = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return co.compress(data) + co.flush()


HONEST = {
    "/plain": (DOC, ""),
    "/identity": (DOC, "identity"),
    "/gzip": (gzip.compress(DOC), "gzip"),
    "/x-gzip": (gzip.compress(DOC), "x-gzip"),
    "/GZIP": (gzip.compress(DOC), "GZIP"),
    "/deflate-zlib": (zlib.compress(DOC), "deflate"),
    "/deflate-raw": (_raw_deflate(DOC), "deflate"),
    "/gzip-gzip": (gzip.compress(gzip.compress(DOC)), "gzip, gzip"),
    "/deflate-gzip": (gzip.compress(zlib.compress(DOC)), "deflate,gzip"),
    "/identity-gzip": (gzip.compress(DOC), "identity, gzip"),
    "/two-members": (gzip.compress(DOC[:300]) + gzip.compress(DOC[300:]), "gzip"),
}


def _svc(port: int, **extra: Any) -> dict[str, Any]:
    return {"services": {"svc": {"base_url": f"http://127.0.0.1:{port}", "allow_private": True, **extra}}}


@pytest.mark.parametrize("path", sorted(HONEST))
async def test_honest_encodings_decode(port: int, make, path: str) -> None:
    BODIES.update(HONEST)
    reach = make(_svc(port, max_body_chars=100_000))
    result = await reach.invoke("http_get", {"service": "svc", "path": path})
    assert result.ok, result.error
    assert result.content["body"] == json.loads(DOC) and not result.content.get("truncated"), result.content


BOMBS = {
    "/bomb-gzip": lambda: (_zeros_gzip(50_000_000), "gzip"),
    "/bomb-deflate": lambda: (zlib.compress(b"\0" * 50_000_000, 9), "deflate"),
    "/bomb-stacked": lambda: (gzip.compress(_zeros_gzip(200_000_000), 9), "gzip, gzip"),
    "/bomb-stacked-3": lambda: (gzip.compress(gzip.compress(_zeros_gzip(100_000_000), 9), 9), "gzip,gzip,gzip"),
}


@pytest.mark.parametrize("path", sorted(BOMBS))
async def test_bombs_are_cut_at_the_cap(port: int, make, path: str) -> None:
    BODIES[path] = BOMBS[path]()
    reach = make(_svc(port, max_response_bytes=100_000))
    result = await reach.invoke("http_get", {"service": "svc", "path": path})
    assert result.ok, result.error
    assert result.content.get("truncated") is True, result.content


@pytest.mark.parametrize(("body", "encoding"), [(b"not gzip at all", "gzip"), (b"\x1f\x8b\x08garbage", "gzip"),
                                                (b"\x78\x9cgarbage!", "deflate"), (b"\xff\xff\xff\xff", "deflate"),
                                                (gzip.compress(b"x", mtime=0), "gzip, gzip, gzip, gzip, gzip")])
async def test_a_body_that_does_not_decode_is_a_clear_failure(port: int, make, body: bytes, encoding: str) -> None:
    BODIES["/broken"] = (body, encoding)
    reach = make(_svc(port), config={"connectors": {"http_get": {"retries": 0}}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/broken"})
    assert not result.ok and "internal error" not in result.error.message, result.error
    assert "decoded" in result.error.message


def test_a_stacked_bomb_does_not_reach_memory(port: int) -> None:
    """600 MB of zeros, gzip-ed twice (a few hundred bytes on the wire): peak memory stays low."""
    BODIES["/bomb-probe"] = (gzip.compress(_zeros_gzip(600_000_000), 9), "gzip, gzip")
    probe = textwrap.dedent(f"""
        import asyncio, resource, httpx
        from reach_http.client import exchange
        from reach_http.guard import AddressGuard
        async def main():
            raw = await exchange(AddressGuard(), method="GET", url=httpx.URL("http://127.0.0.1:{port}/bomb-probe"),
                                 headers={{}}, request_timeout=30, max_bytes=1_000_000,
                                 private_origins=[("http", "127.0.0.1", {port})])
            assert raw.cut and len(raw.body) == 1_000_000
        asyncio.run(main())
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    peak_mb = int(done.stdout.strip().splitlines()[-1]) / 1024
    assert peak_mb < 300, f"peak memory {peak_mb:.0f} MB for a 1 MB cap"
