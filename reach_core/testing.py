"""Test helpers for reach itself and for anyone writing a plugin.

* :func:`make_reach` — a fresh ``Reach`` with entry-point autoload off: only the
  plugins you pass, so tests never depend on what else is installed.
* :class:`HookRecorder` — a plugin that records every runtime hook call.
* :class:`ConnectorConformance` — subclass it in a connector plugin's tests
  (``class TestWeatherConformance(ConnectorConformance): plugin = "reach-weather"``)
  to check the entry point, registration, schemas, lint (as warnings) and one
  example call per tool.
* :func:`serve_loopback` — a real HTTP server on 127.0.0.1 for the service a connector
  talks to, with :class:`LoopbackHandler` as the quiet base of its request handler.
* For the front-ends that serve reach over HTTP (``reach serve http``, ``reach serve mcp
  --http``), one set of attacks and checks both plugins' tests run: :func:`raw_http` (a
  request written byte for byte), :data:`FORWARDING_SPOOFS` (headers a client writes to pass
  for another address), :func:`slow_client` with :data:`SLOW_HEADS` and :func:`slow_bodies`
  (clients that send a request a byte at a time, or stop halfway),
  :func:`assert_connections_capped` (1,000 idle connections).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .hookspecs import hookimpl
from .logs import _quiet_by_default
from .reach import Reach

__all__ = ["FORWARDING_SPOOFS", "SLOW_HEADS", "ConnectorConformance", "HookRecorder", "LoopbackHandler",
           "assert_connections_capped", "make_reach", "raw_http", "serve_loopback", "slow_bodies", "slow_client"]

#: where the loopback servers' access lines (DEBUG) and handler failures (WARNING) go: a test
#: run shows them with a failing test's captured logs, and nothing lands on stdout or stderr.
_LOG = logging.getLogger("reach.testing")


def make_reach(*plugins: Any, config: dict[str, Any] | None = None, data_dir: Path | str | None = None,
               **kwargs: Any) -> Reach:
    """A ``Reach`` holding only ``plugins`` (modules, objects or ``(name, obj)`` pairs)."""
    cfg = dict(config or {})
    if data_dir is not None:
        cfg.setdefault("reach", {})
        cfg["reach"] = {**cfg["reach"], "data_dir": str(data_dir)}
    return Reach(cfg, plugins=list(plugins), **kwargs)


class HookRecorder:
    """Records ``(hook, tool name, details)`` for every runtime hook call."""

    REACH_PLUGIN_NAME = "hook-recorder"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, dict[str, Any]]] = []

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    @hookimpl
    def reach_pre_validate(self, call: Any, tool: Any, ctx: Any) -> None:
        self.calls.append(("reach_pre_validate", tool.name if tool else None, {"arguments": call.arguments}))

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Any, ctx: Any) -> None:
        self.calls.append(("reach_pre_invoke", tool.name if tool else None, {"arguments": call.arguments}))

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: Any, ctx: Any) -> None:
        self.calls.append(("reach_post_invoke", call.name, {"ok": result.ok,
                                                             "code": result.error.code if result.error else None}))

    @hookimpl
    def reach_run_step(self, step: Any, ctx: Any) -> None:
        self.calls.append(("reach_run_step", None, {"step": step}))

    @hookimpl
    def reach_tool_progress(self, event: Any, ctx: Any) -> None:
        self.calls.append(("reach_tool_progress", event.get("tool"), dict(event)))


class ConnectorConformance:
    """Base class of a plugin's conformance tests (pytest collects subclasses named ``Test*``).

    Set ``plugin`` (the entry-point name). Override :meth:`config` to give settings
    (``tmp_path`` is a fresh directory) and :meth:`example_calls` to return
    ``[(tool_name, arguments), ...]`` that must succeed against whatever
    :meth:`config` points at (start local servers in fixtures of the subclass).
    """

    plugin: str = ""

    def config(self, tmp_path: Path) -> dict[str, Any]:
        return {"reach": {"data_dir": str(tmp_path / "data")}}

    def example_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return []

    # -- helpers
    def _entry_point(self) -> Any:
        from importlib.metadata import entry_points

        eps = [ep for ep in entry_points(group="reach") if ep.name == self.plugin]
        assert eps, f"no entry point named {self.plugin!r} in group 'reach': is the distribution installed?"
        return eps[0]

    def make(self, tmp_path: Path) -> Reach:
        module = self._entry_point().load()
        return Reach(self.config(tmp_path), plugins=[(self.plugin, module)], strict=True)

    # -- the checks
    def test_entry_point_named_after_distribution(self) -> None:
        ep = self._entry_point()
        dist = getattr(ep, "dist", None)
        assert dist is not None
        assert dist.name.replace("_", "-").lower() == self.plugin.lower(), (
            f"entry point {self.plugin!r} is provided by {dist.name!r}; name it after the distribution"
        )

    def test_registers_valid_tools(self, tmp_path: Path) -> None:
        reach = self.make(tmp_path)
        info = [p for p in reach.plugin_info if p.name == self.plugin]
        assert info and info[0].status == "loaded", info
        tools = [t for t in reach.all_tools() if t.plugin == self.plugin]
        assert tools, f"{self.plugin} registered no tools"
        for decl in reach.tools():
            fn = decl["function"]
            assert fn["parameters"]["type"] == "object" and "properties" in fn["parameters"]
            assert fn["description"], f"{fn['name']} has no description"
            json.dumps(decl)
        for tool in tools:
            assert tool.risk in ("read", "write", "dangerous")

    def test_lint_warnings(self, tmp_path: Path) -> None:
        from .lint import lint_tool

        reach = self.make(tmp_path)
        for tool in reach.all_tools():
            for problem in lint_tool(tool):
                warnings.warn(f"{tool.name}: {problem.message}", stacklevel=1)

    def test_example_calls_succeed(self, tmp_path: Path) -> None:
        calls = self.example_calls()
        if not calls:
            return
        reach = self.make(tmp_path)

        async def go() -> list[Any]:
            try:
                return [await reach.invoke(name, args, run_id="conformance") for name, args in calls]
            finally:
                await reach.aclose()

        for (name, _), result in zip(calls, asyncio.run(go()), strict=True):
            assert result.ok, f"{name}: {result.error}"
            text = result.to_json()
            assert isinstance(text, str)
            if not isinstance(result.content, str):  # strings are sent to the model as they are
                json.loads(text)


# -- a real HTTP service on loopback


class LoopbackHandler(BaseHTTPRequestHandler):
    """A base for a test server's request handler: quiet, with the chores every one repeats.

    Write ``do_GET``/``do_POST``/... as with :class:`http.server.BaseHTTPRequestHandler`;
    :meth:`read_body` takes the request body, :meth:`reply` and :meth:`reply_json` send a
    whole answer with its ``Content-Length``. The access log goes to the ``reach.testing``
    logger at DEBUG instead of stderr, so a test run's output holds only test results.
    """

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
        _LOG.debug("loopback %s: " + format, self.address_string(), *args)

    def read_body(self) -> bytes:
        """The request body: ``Content-Length`` bytes, none when the header is absent or empty.

        Read it before answering a request that has one, even to ignore it: a body left
        unread can reset the client's connection before it reads the answer.
        """
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def reply(self, status: int, body: bytes = b"", headers: Mapping[str, str] | None = None) -> None:
        """Send ``status``, ``headers``, a ``Content-Length`` and ``body``.

        A client that hung up first (a test of a timeout or a size limit leaves on purpose)
        is not the server's failure: that answer is dropped, logged at DEBUG.
        """
        try:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except ConnectionError as exc:
            self.close_connection = True
            _LOG.debug("loopback %s: the client left before the answer (%s)", self.address_string(), exc)

    def reply_json(self, status: int, value: Any, headers: Mapping[str, str] | None = None) -> None:
        """:meth:`reply` with ``value`` as JSON and ``Content-Type: application/json``."""
        self.reply(status, json.dumps(value).encode(), {"Content-Type": "application/json", **(headers or {})})


class _LoopbackServer(ThreadingHTTPServer):
    # A handler still busy (a hung upstream, a slow answer) never holds up the stop.
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A handler that raised: logged with its traceback (the stdlib prints it to stderr)."""
        _LOG.warning("loopback handler failed on a request from %s", client_address, exc_info=True)


@contextmanager
def serve_loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 at a free port; yields the base URL ``http://127.0.0.1:PORT``.

    The server answers from a daemon thread, one thread a request, from the moment the
    block starts (the port is bound and listening before the URL is handed out, so no
    wait for readiness is needed). Leaving the block stops it and closes the port, without
    waiting for a handler still at work. Any :class:`~http.server.BaseHTTPRequestHandler`
    subclass works; :class:`LoopbackHandler` keeps it quiet. State the test wants to see
    (the requests received, what to answer next) lives where the handler class can reach
    it: a closure, or an attribute of the class. In a pytest fixture::

        @pytest.fixture
        def things_url():
            with serve_loopback(ThingsAPI) as url:
                yield url
    """
    if not (isinstance(handler, type) and issubclass(handler, BaseHTTPRequestHandler)):
        raise TypeError(f"serve_loopback takes a BaseHTTPRequestHandler subclass, not {handler!r}")
    _quiet_by_default()  # a host that configured no logging gets no last-resort lines on stderr
    server = _LoopbackServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name=f"reach-loopback-{server.server_port}", daemon=True)
    try:
        thread.start()
    except BaseException:
        server.server_close()
        raise
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# ---------------------------------------------------------------- front-ends serving reach over HTTP

def raw_http(port: int, method: str, path: str, headers: Sequence[bytes] = (), body: bytes = b"", *,
             source: str | None = None, timeout: float = 20.0) -> tuple[int, bytes, dict[str, str]]:
    """One HTTP/1.1 request to 127.0.0.1:``port`` written byte for byte (HTTP clients refuse odd
    header values, or repeat a header only as they choose), with the header lines ``headers``
    (``b"Name: value"``), from the loopback address ``source`` when given (the whole 127/8 is
    this host: another client). Returns the status, the body and the headers (lower-case
    names). Blocking: from an async test that serves in its own loop, run it in a thread."""
    import socket

    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n").encode() + b"".join(line + b"\r\n" for line in headers)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                  source_address=(source, 0) if source else None) as sock:
        sock.sendall(head + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    top, _, answer = data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    found = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split(" ", 2)[1]), answer, found


#: Headers a client writes so that its ``n``-th request seems to come from another address:
#: ``X-Forwarded-For`` in every spelling (case, whitespace, ports, IPv6, lists, two headers,
#: garbage, hundreds of hops) and the other headers proxies use (``Forwarded``, ``X-Real-IP``
#: ...). A server that counts failed tokens per client must count all of them as the peer's
#: unless the peer is a proxy it was told to trust. ``(name, n -> header lines)``.
FORWARDING_SPOOFS: list[tuple[str, Callable[[int], list[bytes]]]] = [
    ("X-Forwarded-For", lambda n: [f"X-Forwarded-For: 198.51.100.{n}".encode()]),
    ("lower case name", lambda n: [f"x-forwarded-for: 198.51.100.{n}".encode()]),
    ("upper case name", lambda n: [f"X-FORWARDED-FOR: 198.51.100.{n}".encode()]),
    ("spaces around", lambda n: [f"X-Forwarded-For:    198.51.100.{n}   ".encode()]),
    ("tab before", lambda n: [f"X-Forwarded-For:\t198.51.100.{n}".encode()]),
    ("with a port", lambda n: [f"X-Forwarded-For: 198.51.100.7:{4000 + n}".encode()]),
    ("IPv6", lambda n: [f"X-Forwarded-For: 2001:db8:{n}::1".encode()]),
    ("bracketed IPv6 and port", lambda n: [f"X-Forwarded-For: [2001:db8:{n}::1]:443".encode()]),
    ("IPv4-mapped IPv6", lambda n: [f"X-Forwarded-For: ::ffff:198.51.100.{n}".encode()]),
    ("loopback on the right", lambda n: [f"X-Forwarded-For: 198.51.100.{n}, 127.0.0.1".encode()]),
    ("loopback on the left", lambda n: [f"X-Forwarded-For: 127.0.0.1, 198.51.100.{n}".encode()]),
    ("no space after commas", lambda n: [f"X-Forwarded-For: 10.0.0.{n},198.51.100.{n}".encode()]),
    ("two headers", lambda n: [f"X-Forwarded-For: 198.51.100.{n}".encode(),
                               f"X-Forwarded-For: 203.0.113.{n}".encode()]),
    ("garbage word", lambda n: [f"X-Forwarded-For: unknown-{n}".encode()]),
    ("obfuscated id", lambda n: [f"X-Forwarded-For: _hidden{n}".encode()]),
    ("no-break space after", lambda n: [f"X-Forwarded-For: 198.51.100.{n}".encode() + b"\xa0"]),
    ("latin-1 bytes", lambda n: [f"X-Forwarded-For: \xe9vil-{n}".encode("latin-1")]),
    ("200 hops", lambda n: [("X-Forwarded-For: " + ", ".join(f"10.{n}.0.{i}" for i in range(200))).encode()]),
    ("empty then address", lambda n: [b"X-Forwarded-For: ", f"X-Forwarded-For: 198.51.100.{n}".encode()]),
    ("Forwarded for=", lambda n: [f"Forwarded: for=198.51.100.{n}".encode()]),
    ("Forwarded quoted IPv6", lambda n: [f'Forwarded: for="[2001:db8:{n}::1]:80";proto=https'.encode()]),
    ("X-Real-IP", lambda n: [f"X-Real-IP: 198.51.100.{n}".encode()]),
    ("client-IP headers", lambda n: [f"{h}: 198.51.100.{n}".encode() for h in
                                     ("X-Client-IP", "True-Client-IP", "CF-Connecting-IP", "X-Cluster-Client-IP")]),
    ("every header at once", lambda n: [f"X-Forwarded-For: 198.51.100.{n}".encode(),
                                        f"X-Real-IP: 203.0.113.{n}".encode(), f"Forwarded: for=192.0.2.{n}".encode()]),
]


def slow_client(port: int, first: bytes = b"", trickle: bytes = b"", *, pause: float = 0.2,
                bound: float = 30.0) -> bytes:
    """A client of 127.0.0.1:``port`` that sends ``first`` at once, then ``trickle`` one byte every
    ``pause`` seconds, then nothing, until the server closes the connection; returns all the server
    sent (``b""``: it closed without a word). ``AssertionError`` if it is still open after
    ``bound`` seconds: a server that waits for a slow client without end holds a connection
    (of its 1,000) for as long as the client likes. ``bound`` is a generous ceiling, no timing."""
    import select
    import socket
    import time

    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=bound) as sock:
        if first:
            sock.sendall(first)
        end = time.monotonic() + bound
        while time.monotonic() < end:
            if select.select([sock], [], [], pause)[0]:
                try:
                    chunk = sock.recv(65536)
                except ConnectionResetError:
                    return received
                if not chunk:
                    return received
                received += chunk
            elif trickle:
                try:
                    sock.sendall(trickle[:1])
                except (BrokenPipeError, ConnectionResetError):
                    return received
                trickle = trickle[1:]
    raise AssertionError(f"the connection was still open after {bound:g} s; the server sent {received[:200]!r}")


#: Request heads sent slowly: ``(name, first, trickle)`` for :func:`slow_client`, each never
#: completing a head in time (nothing at all, half a line, a byte at a time, no blank line).
SLOW_HEADS: list[tuple[str, bytes, bytes]] = [
    ("nothing", b"", b""),
    ("half a request line", b"GET /heal", b""),
    ("request line only", b"GET /healthz HTTP/1.1\r\n", b""),
    ("headers, no blank line", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n", b""),
    ("a byte at a time", b"", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Pad: " + b"a" * 400),
    ("a header byte at a time", b"GET /healthz HTTP/1.1\r\n", b"X-Slow: " + b"b" * 400),
    ("a second request, half", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /heal", b""),
    ("a second request, a byte at a time", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
     b"GET /healthz HTTP/1.1\r\n" + b"X-Pad: " + b"c" * 400),
]


def slow_bodies(head: bytes, body: bytes) -> list[tuple[str, bytes, bytes]]:
    """Ways to send ``body`` after the request head ``head`` (its lines, without ``Content-Length``,
    ``Transfer-Encoding`` or the blank line) too slowly: ``(name, first, trickle)`` for
    :func:`slow_client`. The server must stop waiting (408) rather than hold the request open."""
    body = body + b" " * max(0, 300 - len(body))  # JSON may end in spaces: long enough to take a minute
    length = head + f"Content-Length: {len(body)}\r\n\r\n".encode()
    chunked = head + b"Transfer-Encoding: chunked\r\n\r\n"
    half = len(body) // 2
    return [
        ("no body at all", length, b""),
        ("half the body", length + body[:half], b""),
        ("a byte at a time", length, body),
        ("one chunk, then nothing", chunked + f"{half:x}\r\n".encode() + body[:half] + b"\r\n", b""),
        ("a chunk size, then nothing", chunked + b"40\r\n", b""),
        ("one-byte chunks", chunked, b"".join(b"1\r\n" + body[i:i + 1] + b"\r\n" for i in range(len(body)))),
    ]


def assert_connections_capped(port: int, path: str = "/", connections: int = 1000) -> None:
    """With ``connections`` idle connections open to 127.0.0.1:``port`` (a slow client's), a request
    to ``path`` is answered 503 rather than each connection holding memory and a file descriptor
    without end (``limit_concurrency`` in ``reach_core.tokens.UVICORN_LIMITS``), and once they
    close the server answers again. The check both served front-ends' command tests run."""
    import socket

    idle: list[socket.socket] = []
    try:
        for _ in range(connections):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        statuses: list[int] = []
        for _ in range(50):  # the server accepts the idle ones in order; a probe soon finds them counted
            statuses.append(raw_http(port, "GET", path)[0])
            if statuses[-1] == 503:
                break
        assert statuses[-1] == 503, statuses
    finally:
        for sock in idle:
            sock.close()
    assert any(raw_http(port, "GET", path)[0] != 503 for _ in range(200)), "still 503 after the connections closed"
