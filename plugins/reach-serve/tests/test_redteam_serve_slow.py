"""Red team: a client that sends its request slowly is cut off, and others are served meanwhile.

uvicorn has no timeout for reading a request: a connection that sent nothing, half a head, a
byte a minute, or a body slower than that, was held until the client gave up (its keep-alive
timer starts only after a response, and any byte stops it), so 1,000 such connections made
the server answer 503 to everyone. Now ``read_timeout`` bounds both: a head must arrive within
it (``reach_core.tokens.uvicorn_options``, the protocol ``reach serve http`` runs; the
connection is closed), and a body the app reads must arrive within it (408, then closed).
Real server on 127.0.0.1 with ``read_timeout = 1``; the bound asserted is 30 s, no timing.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from reach_core.testing import SLOW_HEADS, slow_bodies, slow_client

READ_TIMEOUT = 1
INVOKE = (b"POST /v1/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer tok-worker-000001\r\n"
          b"Content-Type: application/json\r\n")
CALL = json.dumps({"name": "add_credit", "arguments": {"amount": 5}}).encode()


@pytest.fixture
def served(make_served: Any) -> Any:
    return make_served({"read_timeout": READ_TIMEOUT})


def _port(served: Any) -> int:
    return int(served.base.rsplit(":", 1)[1])


def _while_slow(served: Any, first: bytes, trickle: bytes) -> bytes:
    """Run the slow client; meanwhile an honest client is served. What the slow one got back."""
    got: list[bytes | BaseException] = []

    def slow() -> None:
        try:
            got.append(slow_client(_port(served), first, trickle))
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the test's thread
            got.append(exc)

    thread = threading.Thread(target=slow)
    thread.start()
    try:
        with served.client() as client:
            assert client.get("/v1/tools").status_code == 200
    finally:
        thread.join(60)
    assert got, "the slow client did not finish"
    if isinstance(got[0], BaseException):
        raise got[0]
    return got[0]


@pytest.mark.parametrize(("name", "first", "trickle"), SLOW_HEADS, ids=[h[0] for h in SLOW_HEADS])
def test_a_slow_request_head_is_closed(served: Any, name: str, first: bytes, trickle: bytes) -> None:
    answer = _while_slow(served, first, trickle)
    # closed without an answer to the slow head (a complete first request was answered first)
    assert answer.count(b"HTTP/1.1 ") == first.count(b"\r\n\r\n"), answer[:300]  # before: open after 30 s


@pytest.mark.parametrize(("name", "first", "trickle"), slow_bodies(INVOKE, CALL),
                         ids=[b[0] for b in slow_bodies(b"", b"")])
def test_a_slow_body_is_408_and_runs_nothing(served: Any, name: str, first: bytes, trickle: bytes) -> None:
    answer = _while_slow(served, first, trickle)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:300]  # before: open after 30 s
    assert b'"code":"timeout"' in answer and b"connection: close" in answer.lower()
    assert served.counter.runs == 0


def test_a_body_sent_after_the_answer_is_not_waited_for(served: Any) -> None:
    """A 401 is answered before the body is read; trickling the body after it held the connection
    (each byte stopped uvicorn's keep-alive timer) until the client stopped."""
    head = INVOKE.replace(b"tok-worker-000001", b"tok-guess-0000001") + b"Content-Length: 400\r\n\r\n"
    answer = _while_slow(served, head, b"{" + b" " * 399)
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:300]


def test_a_slow_console_login_form_is_408(served: Any) -> None:
    head = (b"POST /console/login HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://127.0.0.1\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n")
    name, first, trickle = slow_bodies(head, b"token=tok-guess-0000001&csrf=x")[2]
    answer = _while_slow(served, first, trickle)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:300]


def test_honest_clients_are_not_cut_off(served: Any) -> None:
    """Within the deadline nothing changes: a keep-alive client's requests, a body of 500 KB."""
    with httpx.Client(base_url=served.base, headers={"Authorization": "Bearer tok-worker-000001"}, timeout=20) as c:
        for amount in range(5):
            assert c.post("/v1/invoke", json={"name": "add_credit", "arguments": {"amount": amount}}).json()["ok"]
        big = {"name": "lookup", "arguments": {"city": "x" * 500_000}}
        assert c.post("/v1/invoke", content=json.dumps(big)).status_code == 200
    assert served.counter.runs == 5
