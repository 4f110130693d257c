"""Attack families against ``reach serve http``: idempotency keys across agents,
bodies that stream past the limit, and bodies built to break the parser.

Every refusal is a 4xx with a JSON error; none is a 500 or a bare page.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

AGENTS = {
    "tok-support-00001": "support",
    "tok-guest-0000001": "guest",
    "tok-a-00000000001": "a",
    "tok-ab-0000000001": "a:b",
    "tok-sup-000000001": "sup",
    "tok-ops-000000001": "ops",
}
TOKEN = {agent: token for token, agent in AGENTS.items()}


def _client(served: Any, agent: str) -> httpx.Client:
    return served.client(TOKEN[agent])


@pytest.fixture
def agents(make_served: Any) -> Any:
    return make_served({"tokens": AGENTS})


def _credit(c: httpx.Client, **extra: Any) -> dict[str, Any]:
    body = {"name": "add_credit", "arguments": {"amount": extra.pop("amount", 5)}, **extra}
    resp = c.post("/v1/invoke", json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]


# -- idempotency keys are per agent -----------------------------------------------------

KEYS = ["credit-77", "k", "support:credit-77", "http:7:support:credit-77", "a" * 200, "ключ-北京", "  spaced  ",
        "run-1:call-1"]


@pytest.mark.parametrize("key", KEYS)
def test_another_agent_cannot_replay_a_key(agents: Any, key: str) -> None:
    with _client(agents, "support") as sup, _client(agents, "guest") as guest:
        first = _credit(sup, idempotency_key=key, amount=5)
        assert first["ok"] and agents.counter.runs == 1
        same = _credit(guest, idempotency_key=key, amount=5)
        assert same["ok"] and not same.get("meta", {}).get("receipt"), "guest got support's recorded result"
        assert agents.counter.runs == 2
        other_args = _credit(guest, idempotency_key=key + "x", amount=9)
        assert other_args["ok"]
        # the owner still gets its own receipt
        again = _credit(sup, idempotency_key=key, amount=5)
        assert again["meta"]["receipt"] is True and again["content"] == first["content"]
    assert agents.counter.runs == 3


@pytest.mark.parametrize("length", [480, 490, 500, 512])
def test_a_long_key_near_the_core_limit_still_replays_for_its_agent_only(agents: Any, length: int) -> None:
    """The scoped key (``http:<n>:<agent>:<key>``) would pass the core's 512 characters:
    it is written as its SHA-256, so the client's key still works, per agent."""
    key = "k" * length
    with _client(agents, "support") as sup, _client(agents, "guest") as guest:
        first = _credit(sup, idempotency_key=key, amount=5)
        assert first["ok"], first
        again = _credit(sup, idempotency_key=key, amount=5)
        assert again["meta"]["receipt"] is True and again["content"] == first["content"]
        other = _credit(guest, idempotency_key=key, amount=5)
        assert other["ok"] and not other.get("meta", {}).get("receipt")
    assert agents.counter.runs == 2


@pytest.mark.parametrize("key", KEYS[:4])
def test_another_agent_cannot_claim_a_key_first(agents: Any, key: str) -> None:
    with _client(agents, "support") as sup, _client(agents, "guest") as guest:
        squat = _credit(guest, idempotency_key=key, amount=5)
        assert squat["ok"]
        # different arguments under the same key: not "denied: key used with different arguments"
        mine = _credit(sup, idempotency_key=key, amount=6)
        assert mine["ok"] and mine["content"]["credited"] == 6 and not mine.get("meta", {}).get("receipt")
    assert agents.counter.runs == 2


@pytest.mark.parametrize(("one", "two", "key_one", "key_two"), [
    ("a:b", "a", "c", "b:c"),          # "a:b" + ":" + "c" == "a" + ":" + "b:c"
    ("a", "a:b", "b:c", "c"),
    ("sup", "support", "port:k", "k"),
    ("support", "sup", "k", "port:k"),
])
def test_agent_names_and_keys_cannot_spell_each_other(agents: Any, one: str, two: str, key_one: str,
                                                      key_two: str) -> None:
    with _client(agents, one) as c1, _client(agents, two) as c2:
        assert _credit(c1, idempotency_key=key_one)["ok"]
        second = _credit(c2, idempotency_key=key_two)
        assert second["ok"] and not second.get("meta", {}).get("receipt")
    assert agents.counter.runs == 2


@pytest.mark.parametrize("ids", [("run-1", "call-1"), ("r", "c"), ("run:1", "call:1")])
def test_a_run_id_and_call_id_pair_is_per_agent_too(agents: Any, ids: tuple[str, str]) -> None:
    run_id, call_id = ids
    with _client(agents, "support") as sup, _client(agents, "guest") as guest:
        assert _credit(sup, run_id=run_id, id=call_id)["ok"]
        replay = _credit(guest, run_id=run_id, id=call_id)
        assert replay["ok"] and not replay.get("meta", {}).get("receipt")
        own = _credit(sup, run_id=run_id, id=call_id)
        assert own["meta"]["receipt"] is True
    assert agents.counter.runs == 2


# -- bodies that stream past the limit ------------------------------------------------------

def _chunked(c: httpx.Client, pieces: Any) -> httpx.Response:
    return c.post("/v1/invoke", content=pieces, headers={"Content-Type": "application/json"})


@pytest.mark.parametrize(("limit", "piece"), [(4096, 1), (4096, 7), (4096, 4097), (100_000, 1000),
                                             (1_000_000, 65_536), (1_000_000, 400_000), (1_000_000, 3_000_000)])
def test_a_chunked_body_over_the_limit_is_413(make_served: Any, limit: int, piece: int) -> None:
    served = make_served({"max_body_bytes": limit})

    def pieces() -> Any:
        yield b'{"name": "lookup", "arguments": {"city": "'
        for _ in range(2 * limit // piece + 2):
            yield b"x" * piece
        yield b'"}}'

    with served.client() as c:
        try:
            resp = _chunked(c, pieces())
        except (httpx.WriteError, httpx.RemoteProtocolError):
            pytest.fail("the server must answer 413, not drop the connection")
    assert resp.status_code == 413
    assert resp.json()["error"]["code"] == "too_large"


def test_a_chunked_body_under_the_limit_works(served: Any) -> None:
    def pieces() -> Any:
        yield from (b'{"name": "lookup", ', b'"arguments": {"city"', b': "', "北京".encode(), b'"}}')

    with served.client() as c:
        resp = _chunked(c, pieces())
    assert resp.status_code == 200 and resp.json()["content"]["city"] == "北京"


@pytest.mark.parametrize("declared", ["1000001", "99999999999999999999", "1" + "0" * 30])
def test_a_declared_length_over_the_limit_is_refused_before_reading(served: Any, declared: str) -> None:
    with socket.create_connection(("127.0.0.1", int(served.base.rsplit(":", 1)[1])), timeout=10) as s:
        s.sendall(f"POST /v1/invoke HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-worker-000001\r\n"
                  f"Content-Length: {declared}\r\n\r\n".encode())
        status, body = _read_response(s)
    assert status in (400, 413), body  # the HTTP parser may refuse an absurd length itself
    if status == 413:
        assert b'"too_large"' in body


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _read_response(s: socket.socket) -> tuple[int, bytes]:
    data = b""
    s.settimeout(10)
    while b"\r\n\r\n" not in data:
        more = s.recv(65536)
        if not more:
            break
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length")), 0)
    while len(body) < length:
        more = s.recv(65536)
        if not more:
            break
        body += more
    return int(head.split(b" ")[1]), body


def test_a_50_mb_chunked_body_is_cut_at_the_limit_without_growing_the_server(tmp_path: Path) -> None:
    """A real server in its own process: the body streams in 64 KiB chunks with no
    Content-Length; the answer is 413 long before 50 MB were sent, and the server's
    resident memory does not grow by anything near the body size."""
    script = Path(__file__).parent / "scripts" / "serve_once.py"
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "data"), "1000000"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        port, pid = (int(x) for x in line.split())
        assert pid == proc.pid
        # warm up (imports, first request), then measure
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10,
                          headers={"Authorization": "Bearer tok-worker-000001"}) as c:
            assert c.get("/healthz").status_code == 200
            assert c.post("/v1/invoke", content=b"x" * 2_000_000).status_code == 413
        before = _rss_kb(pid)
        total, sent, status, body = 50 * 1024 * 1024, 0, None, b""
        chunk = b" " * 65536  # whitespace: valid JSON padding, so only the size can be refused
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        peak = before
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"POST /v1/invoke HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-worker-000001\r\n"
                      b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            s.setblocking(False)
            pending = b""
            deadline = time.monotonic() + 60
            while sent < total and time.monotonic() < deadline:
                readable, writable, _ = select.select([s], [s], [], 1.0)
                if readable:
                    break  # the server answered (or closed)
                if writable:
                    if not pending:
                        pending = frame
                    try:
                        n = s.send(pending)
                    except (BrokenPipeError, ConnectionResetError):
                        break
                    pending = pending[n:]
                    sent += n
                    if sent % (4 * 1024 * 1024) < n:
                        peak = max(peak, _rss_kb(pid))
            s.setblocking(True)
            status, body = _read_response(s)
        peak = max(peak, _rss_kb(pid))
    finally:
        proc.terminate()
        proc.wait(10)
    assert status == 413 and b'"too_large"' in body
    assert sent < 20 * 1024 * 1024, f"the server kept reading: {sent} bytes were accepted"
    assert (peak - before) < 30 * 1024, f"the server grew by {(peak - before) // 1024} MB"


# -- bodies built to break the parser ------------------------------------------------------

def _deep(n: int, open_: str = "[", close: str = "]") -> str:
    return open_ * n + close * n


DEEP = [
    _deep(100_000),
    '{"name": "lookup", "arguments": ' + _deep(100_000) + "}",
    '{"name": "lookup", "arguments": {"city": ' + '{"a":' * 50_000 + "1" + "}" * 50_000 + "}}",
    '{"a":' * 100_000 + "1" + "}" * 100_000,
    "[" * 100_000,  # never closed
    '{"name": "lookup", "arguments": ' + _deep(5_000) + "}",
    '{"name": "lookup", "arguments": {"city": "x", "n": ' + _deep(990) + "}}",
    '{"name": "lookup", "arguments": {"city": "x", "n": ' + _deep(101) + "}}",
    '{"name": "lookup", "x": ' + '[{"a": ' * 20_000 + "1" + "}]" * 20_000 + "}",
]


@pytest.mark.parametrize("body", DEEP, ids=[f"deep{i}" for i in range(len(DEEP))])
def test_deep_nesting_is_400_not_500(served: Any, body: str) -> None:
    with served.client() as c:
        resp = c.post("/v1/invoke", content=body.encode())
    assert resp.status_code == 400, resp.text[:200]
    assert resp.json()["error"]["code"] == "invalid_json"


BAD_UTF8 = [
    b'{"name": "lookup", "arguments": {"city": "\xff"}}',
    b'{"name": "lookup", "arguments": {"city": "\xc0\xaf"}}',  # overlong "/"
    b'{"name": "lookup", "arguments": {"city": "\xe4\xb8"}}',  # cut multibyte
    b'{"name": "lookup", "arguments": {"city": "\xed\xa0\x80"}}',  # a surrogate, CESU-8 style
    b'{"name": "lookup", "arguments": {"city": "\xf8\x88\x80\x80\x80"}}',  # 5-byte form
    b'{"name": "\x80lookup"}',
    b'{"na\xfeme": "lookup"}',
    "{\"name\": \"lookup\"}".encode("utf-16"),
    "{\"name\": \"lookup\"}".encode("utf-32"),
    b"\xef\xbb\xbf" + b'{"name": "lookup"}',  # a BOM
    b'{"name": "lookup", "arguments": {"city": "Paris"}}\xff',
]


@pytest.mark.parametrize("body", BAD_UTF8, ids=[f"utf8-{i}" for i in range(len(BAD_UTF8))])
def test_bytes_that_are_not_utf8_json_are_400(served: Any, body: bytes) -> None:
    with served.client() as c:
        resp = c.post("/v1/invoke", content=body)
    assert resp.status_code == 400, resp.text[:200]
    assert resp.json()["error"]["code"] == "invalid_json"


SURROGATES = [
    r'{"name": "lookup", "arguments": {"city": "\ud800"}}',
    r'{"name": "lookup", "arguments": {"city": "\udfff"}}',
    r'{"name": "lookup", "arguments": {"city": "a\udc00b"}}',
    r'{"name": "lookup", "arguments": {"city": "\ud83d"}}',  # half an emoji
    r'{"name": "lookup", "arguments": {"city": "\ude00\ud83d"}}',  # the halves reversed
    r'{"name": "lookup", "arguments": {"\ud800": "x"}}',
    r'{"name": "look\ud800up", "arguments": {}}',
    r'{"name": "lookup", "arguments": "{\"city\": \"\\ud800\"}", "id": "\udbff"}',
    r'{"name": "lookup", "arguments": {"city": ["ok", {"deep": "\uDBFF"}]}}',
    r'{"name": "lookup", "idempotency_key": "\ud800", "arguments": {"city": "x"}}',
]


@pytest.mark.parametrize("body", SURROGATES, ids=[f"surrogate-{i}" for i in range(len(SURROGATES))])
def test_lone_surrogates_are_400(served: Any, body: str) -> None:
    with served.client() as c:
        resp = c.post("/v1/invoke", content=body.encode())
    assert resp.status_code == 400, resp.text[:200]
    assert "surrogate" in resp.json()["error"]["message"]


def test_a_surrogate_pair_is_fine(served: Any) -> None:
    with served.client() as c:
        resp = c.post("/v1/invoke", content=rb'{"name": "lookup", "arguments": {"city": "\ud83d\ude00"}}')
    assert resp.status_code == 200 and resp.json()["content"]["city"] == "\U0001F600"


NUMBERS = ["1e999999", "-1e999999", "1E400", "9" * 5000, "-" + "9" * 100_000, "9" * 65, "NaN", "Infinity",
           "-Infinity", "1" + "0" * 4400]


@pytest.mark.parametrize("number", NUMBERS, ids=[f"number-{i}" for i in range(len(NUMBERS))])
def test_numbers_that_are_not_numbers_are_400(served: Any, number: str) -> None:
    body = '{"name": "add_credit", "arguments": {"amount": ' + number + "}}"
    with served.client() as c:
        resp = c.post("/v1/invoke", content=body.encode())
    assert resp.status_code == 400, resp.text[:200]
    assert resp.json()["error"]["code"] == "invalid_json"
    assert served.counter.runs == 0


DUPLICATES = [
    '{"name": "lookup", "name": "add_credit", "arguments": {"amount": 1}}',
    '{"name": "add_credit", "arguments": {"amount": 1, "amount": 1000000}}',
    '{"name": "add_credit", "arguments": {"amount": 1}, "arguments": {"amount": 2}}',
    r'{"name": "lookup", "\u006eame": "add_credit", "arguments": {"amount": 1}}',
    '{"name": "add_credit", "arguments": {"amount": 1}, "agent": "worker", "agent": "ops"}',
    '{"name": "add_credit", "arguments": {"amount": 1}, "idempotency_key": "a", "idempotency_key": "b"}',
    '{"name": "add_credit", "arguments": {"amount": 1, "x": [{"k": 1, "k": 2}]}}',
]


@pytest.mark.parametrize("body", DUPLICATES, ids=[f"dup-{i}" for i in range(len(DUPLICATES))])
def test_duplicate_keys_are_400(served: Any, body: str) -> None:
    with served.client() as c:
        resp = c.post("/v1/invoke", content=body.encode())
    assert resp.status_code == 400, resp.text[:200]
    assert "twice" in resp.json()["error"]["message"]
    assert served.counter.runs == 0


MALFORMED = [b"{", b"}", b'{"name": "lookup"} trailing', b'{"name": "lookup",}', b"{'name': 'lookup'}",
             b'{"name": lookup}', b"[]", b'"lookup"', b"null", b"1", b"true", b"\x00", b'{"name": "lookup"}\x00',
             b'{"name": "look\nup"}', b"{" + b" " * 900_000 + b"}"]


@pytest.mark.parametrize("body", MALFORMED, ids=[f"malformed-{i}" for i in range(len(MALFORMED))])
def test_malformed_bodies_are_400_with_a_json_error(served: Any, body: bytes) -> None:
    with served.client() as c:
        resp = c.post("/v1/invoke", content=body)
    assert resp.status_code == 400, resp.text[:200]
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.json()["error"]["message"]


@pytest.mark.parametrize("query", ["limit=" + "9" * 5000, "limit=-1", "limit=%C2%B2", "limit=1e3", "limit=0x10",
                                   "limit=%EF%BC%91", "limit=1.5", "limit= 1"])
def test_query_numbers_are_checked(served: Any, query: str) -> None:
    with served.client() as c:
        tools = c.get(f"/v1/tools?{query}")
    with served.client("tok-ops-000000001") as ops:
        tail = ops.get(f"/v1/audit/tail?{query}")
        after = ops.get(f"/v1/audit/tail?{query.replace('limit', 'after')}")
    assert tools.status_code == 400 and tools.json()["error"]["code"] == "invalid_request"
    for resp in (tail, after):  # checked before looking for reach-audit
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_request", resp.text[:200]
