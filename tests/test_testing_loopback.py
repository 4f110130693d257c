"""``reach_core.testing.serve_loopback`` and ``LoopbackHandler``: the loopback HTTP server that
reach's own tests and plugin authors' tests stand a connector's service up with.

What a test author relies on: the URL answers at once, on 127.0.0.1 only; leaving the block
closes the port even while a handler is still at work; nothing is printed (access lines and
handler failures go to the ``reach.testing`` logger); bad input is refused before a port is
bound. Every request here is a real one over a socket (``http.client``: no proxy settings).
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import pytest

from reach_core.testing import LoopbackHandler, serve_loopback


def _request(url: str, method: str = "GET", path: str = "/", body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


class Echo(LoopbackHandler):
    """Answers every request with what it received, as JSON."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.read_body()
        self.reply_json(201, {"path": self.path, "body": body.decode(), "length": len(body)}, {"X-Seen": "yes"})

    do_PUT = do_POST

    def do_GET(self) -> None:  # noqa: N802
        self.reply(200, b"plain", {"Content-Type": "text/plain"})


def test_the_url_is_loopback_on_a_real_port_and_answers_at_once() -> None:
    with serve_loopback(Echo) as url:
        parts = urlsplit(url)
        assert (parts.scheme, parts.hostname, parts.path) == ("http", "127.0.0.1", "")
        assert parts.port and parts.port > 0
        status, headers, body = _request(url)
    assert (status, body, headers["content-length"], headers["content-type"]) == (200, b"plain", "5", "text/plain")


@pytest.mark.parametrize("body", [b"", b"x", "ünïcödé ✅".encode(), b"\x00\r\n" * 1000, b"a" * 200_000])
def test_read_body_takes_exactly_the_declared_bytes(body: bytes) -> None:
    with serve_loopback(Echo) as url:
        status, headers, raw = _request(url, "POST", "/hook?a=1", body)
    assert status == 201 and headers["x-seen"] == "yes" and headers["content-type"] == "application/json"
    assert json.loads(raw) == {"path": "/hook?a=1", "body": body.decode(), "length": len(body)}
    assert headers["content-length"] == str(len(raw))


@pytest.mark.parametrize("declared", [None, ""])
def test_read_body_without_a_length_is_empty(declared: str | None) -> None:
    """No Content-Length (or an empty one): no body is waited for."""
    with serve_loopback(Echo) as url:
        parts = urlsplit(url)
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            head = "PUT /x HTTP/1.0\r\n" + ("" if declared is None else f"Content-Length: {declared}\r\n") + "\r\n"
            sock.sendall(head.encode())
            raw = b"".join(iter(lambda: sock.recv(65536), b""))
    assert json.loads(raw.split(b"\r\n\r\n", 1)[1]) == {"path": "/x", "body": "", "length": 0}


def test_servers_side_by_side_get_ports_of_their_own() -> None:
    with serve_loopback(Echo) as one, serve_loopback(Echo) as two:
        assert one != two
        assert _request(one)[0] == _request(two)[0] == 200


def test_leaving_the_block_closes_the_port_and_ends_the_thread() -> None:
    with serve_loopback(Echo) as url:
        name = f"reach-loopback-{urlsplit(url).port}"
        assert name in {t.name for t in threading.enumerate()}
    assert name not in {t.name for t in threading.enumerate()}
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", urlsplit(url).port), timeout=30).close()


def test_an_error_in_the_block_still_stops_the_server() -> None:
    with pytest.raises(KeyError), serve_loopback(Echo) as url:
        raise KeyError("the test failed")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", urlsplit(url).port), timeout=30).close()


def test_a_handler_still_at_work_does_not_hold_up_the_stop() -> None:
    """A hung upstream is a thing tests serve on purpose: the block ends while it still hangs."""
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()

    class Hung(LoopbackHandler):
        def do_GET(self) -> None:  # noqa: N802
            entered.set()
            release.wait(30)  # were the stop waiting for it, the block would end only after this
            finished.set()
            self.reply(200)

    client = threading.Thread(target=lambda: _swallow(lambda: _request(url)), daemon=True)
    with serve_loopback(Hung) as url:
        client.start()
        assert entered.wait(30)
    stopped_before_the_handler_finished = not finished.is_set()
    release.set()
    client.join(30)
    assert stopped_before_the_handler_finished


def _swallow(call: Any) -> None:
    try:
        call()
    except OSError:
        pass


def test_nothing_is_printed_access_lines_go_to_the_log(capfd: pytest.CaptureFixture[str],
                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="reach.testing")
    with serve_loopback(Echo) as url:
        _request(url, path="/visible-path")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert any("/visible-path" in r.getMessage() and r.levelno == logging.DEBUG for r in caplog.records)


def test_a_failing_handler_is_logged_with_its_traceback_not_printed(capfd: pytest.CaptureFixture[str],
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    class Broken(LoopbackHandler):
        def do_GET(self) -> None:  # noqa: N802
            raise RuntimeError("handler bug 7731")

    logged = threading.Event()
    signal = logging.Handler(logging.WARNING)
    signal.emit = lambda record: logged.set()  # type: ignore[method-assign]
    logging.getLogger("reach.testing").addHandler(signal)
    try:
        with serve_loopback(Broken) as url, pytest.raises(http.client.RemoteDisconnected):
            _request(url)
        assert logged.wait(30)  # the handler's thread logs after the client saw the hang-up
    finally:
        logging.getLogger("reach.testing").removeHandler(signal)
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    [record] = [r for r in caplog.records if r.name == "reach.testing" and r.levelno == logging.WARNING]
    assert record.exc_info and "handler bug 7731" in str(record.exc_info[1])


def test_a_client_that_left_before_the_answer_is_no_failure(capfd: pytest.CaptureFixture[str],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    asked, answered = threading.Event(), threading.Event()
    gone = threading.Event()

    class Late(LoopbackHandler):
        def do_GET(self) -> None:  # noqa: N802
            asked.set()
            gone.wait(30)
            for _ in range(50):  # the first write after a reset may still be accepted by the kernel
                self.reply(200, b"x" * 65536)
            answered.set()

    with serve_loopback(Late) as url:
        parts = urlsplit(url)
        sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert asked.wait(30)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # reset: the handler's writes fail
        gone.set()
        assert answered.wait(30)
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert not [r for r in caplog.records if r.name == "reach.testing" and r.levelno >= logging.WARNING]


@pytest.mark.parametrize("bad", [Echo.__new__(Echo), "Echo", None, object, BaseHTTPRequestHandler.handle, int])
def test_anything_but_a_handler_class_is_refused_before_a_port_is_bound(bad: Any) -> None:
    before = {t.name for t in threading.enumerate()}
    with pytest.raises(TypeError, match="BaseHTTPRequestHandler subclass"), serve_loopback(bad):
        pass  # pragma: no cover - never reached
    assert {t.name for t in threading.enumerate()} == before


def test_a_plain_stdlib_handler_works_too() -> None:
    class Plain(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    with serve_loopback(Plain) as url:
        assert _request(url)[0] == 204


@pytest.fixture
def echo_url() -> Iterator[str]:
    with serve_loopback(Echo) as url:
        yield url


def test_as_a_fixture(echo_url: str) -> None:
    assert _request(echo_url, "POST", "/f", b"{}")[0] == 201
