"""Real misbehaving servers for guard-rail tests (toxiproxy cannot be installed here).

:class:`FaultyHTTPServer` is a threaded HTTP/1.1 server on 127.0.0.1 whose paths
misbehave on purpose::

    /ok                      200 {"ok": true, "n": <hit number>}
    /status/503              that status (any code), JSON body
    /429?retry_after=1.5     429 with a Retry-After header
    /flaky?fail=2&status=503 the first ``fail`` hits of this exact URL fail, then 200
    /hang?seconds=30         sleeps, then 200 (a hung upstream)
    /reset                   closes the socket with RST, no response
    /truncated               promises 1000 bytes, sends 10, closes
    /write?id=X              200; counts side effects per id in ``server.writes``

Every request is counted in ``server.hits[path]`` (path without query) and
``server.times[path]`` (monotonic arrival times) so tests can assert how often and
when a tool really reached the service.

:class:`FaultProxy` is an asyncio TCP proxy in front of any server, with faults
switchable at run time: ``latency`` (seconds before forwarding each chunk),
``reset`` (RST new connections at once), ``blackhole`` (accept and never answer).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections import defaultdict
from contextlib import ExitStack
from urllib.parse import parse_qs, urlsplit

from reach_core.testing import LoopbackHandler, serve_loopback

__all__ = ["FaultProxy", "FaultyHTTPServer"]


def _rst(sock: socket.socket) -> None:
    """Close with RST instead of FIN (SO_LINGER 0): the client sees 'connection reset'."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class _Handler(LoopbackHandler):
    protocol_version = "HTTP/1.1"
    state: FaultyHTTPServer  # set on the subclass each server makes

    def do_POST(self) -> None:
        self.read_body()
        self.do_GET()

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        path = url.path
        srv = self.state
        with srv.lock:
            srv.hits[path] += 1
            srv.url_hits[self.path] += 1
            srv.times[path].append(time.monotonic())
            n_url = srv.url_hits[self.path]
            n = srv.hits[path]
        if path == "/ok":
            self.reply_json(200, {"ok": True, "n": n})
        elif path.startswith("/status/"):
            code = int(path.rsplit("/", 1)[1])
            self.reply_json(code, {"error": f"status {code}"})
        elif path == "/429":
            self.reply_json(429, {"error": "slow down"}, {"Retry-After": q.get("retry_after", "1")})
        elif path == "/flaky":
            if n_url <= int(q.get("fail", "1")):
                status = int(q.get("status", "503"))
                headers = {"Retry-After": q["retry_after"]} if "retry_after" in q else None
                self.reply_json(status, {"error": "temporarily unavailable"}, headers)
            else:
                self.reply_json(200, {"ok": True, "n": n_url})
        elif path == "/hang":
            time.sleep(float(q.get("seconds", "30")))
            self.reply_json(200, {"ok": True, "late": True})
        elif path == "/reset":
            self.close_connection = True
            _rst(self.connection)
        elif path == "/truncated":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"partial"')
            self.wfile.flush()
            self.close_connection = True
            _rst(self.connection)
        elif path == "/write":
            with srv.lock:
                srv.writes[q.get("id", "")] += 1
            delay = float(q.get("delay", "0"))
            if delay:
                time.sleep(delay)
            self.reply_json(200, {"written": q.get("id", "")})
        else:
            self.reply_json(404, {"error": "no such path"})


class FaultyHTTPServer:
    """Start with ``with FaultyHTTPServer() as srv: srv.url("/ok")``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hits: defaultdict[str, int] = defaultdict(int)
        self.url_hits: defaultdict[str, int] = defaultdict(int)
        self.times: defaultdict[str, list[float]] = defaultdict(list)
        self.writes: defaultdict[str, int] = defaultdict(int)
        self._handler = type("_FaultyHandler", (_Handler,), {"state": self})
        self._running = ExitStack()
        self._base = ""

    @property
    def port(self) -> int:
        port = urlsplit(self._base).port
        assert port is not None, "the server is not started"
        return port

    def url(self, path: str = "/") -> str:
        return f"{self._base}{path}"

    def __enter__(self) -> FaultyHTTPServer:
        self._base = self._running.enter_context(serve_loopback(self._handler))
        return self

    def __exit__(self, *exc: object) -> None:
        self._running.close()


class FaultProxy:
    """An asyncio TCP proxy to ``upstream`` with switchable faults (see module doc)."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.latency = 0.0
        self.reset = False
        self.blackhole = False
        self.connections = 0
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.sockets[0].getsockname()[1]

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> FaultProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if self.reset:
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return
            if self.blackhole:
                await asyncio.sleep(3600)
                return
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            try:
                await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
            finally:
                up_writer.close()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if self.latency:
                    await asyncio.sleep(self.latency)
                writer.write(data)
                await writer.drain()
        finally:
            try:
                writer.write_eof()
            except (OSError, RuntimeError):
                pass
