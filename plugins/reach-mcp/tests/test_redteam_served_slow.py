"""Red team: ``reach serve mcp --http`` cuts off a client that sends its request slowly.

uvicorn has no timeout for reading a request: a connection that sent nothing, half a head, or
a body a byte at a time was held for as long as the client liked (its keep-alive timer starts
only after a response, and any byte stops it). Now ``[plugins.reach-mcp.server] read_timeout``
bounds both, as for ``reach serve http``: the head by the protocol the command runs
(``reach_core.tokens.uvicorn_options``; the connection is closed), the body by the token gate
(408, then closed). Real uvicorn on 127.0.0.1 with ``read_timeout = 1``; the bound asserted is
30 s, no timing. The attacks are reach_core.testing's, shared with reach-serve's tests.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from conftest import MCP_HEADERS, ServedMcp, note_reach
from conftest import notes as ran
from reach_mcp.settings import ServeSettings

from reach_core import connector
from reach_core.testing import SLOW_HEADS, slow_bodies, slow_client

SUPPORT = "tok-support-0123456789"
HEAD = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + f"Authorization: Bearer {SUPPORT}\r\n".encode()
        + b"".join(f"{k}: {v}\r\n".encode() for k, v in MCP_HEADERS.items()))
CALL = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "add_note", "arguments": {"text": "slow"}}}).encode()


@pytest.fixture
def reach(tmp_path: Any) -> Any:
    return note_reach(tmp_path, "support")


async def while_slow(reach: Any, first: bytes, trickle: bytes) -> bytes:
    """The slow client's answer; meanwhile an honest client is served."""
    settings = ServeSettings(tokens={SUPPORT: "support"}, read_timeout=1)
    async with ServedMcp(reach, settings) as served:
        slow = asyncio.create_task(asyncio.to_thread(slow_client, served.port, first, trickle))
        res = await served.post({"authorization": f"Bearer {SUPPORT}"},
                                json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}))
        assert res.status_code == 200 and res.json()["result"]["tools"]
        return await slow


@pytest.mark.parametrize(("name", "first", "trickle"), SLOW_HEADS, ids=[h[0] for h in SLOW_HEADS])
async def test_a_slow_request_head_is_closed(reach: Any, name: str, first: bytes, trickle: bytes) -> None:
    first, trickle = first.replace(b"/healthz", b"/mcp"), trickle.replace(b"/healthz", b"/mcp")
    answer = await while_slow(reach, first, trickle)
    assert answer.count(b"HTTP/1.1 ") == first.count(b"\r\n\r\n"), answer[:300]  # before: open after 30 s


@pytest.mark.parametrize(("name", "first", "trickle"), slow_bodies(HEAD, CALL),
                         ids=[b[0] for b in slow_bodies(b"", b"")])
async def test_a_slow_body_is_408_and_runs_nothing(reach: Any, name: str, first: bytes, trickle: bytes) -> None:
    answer = await while_slow(reach, first, trickle)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:300]  # before: open after 30 s
    assert b"timeout" in answer and b"connection: close" in answer.lower()
    assert ran == []


async def test_a_body_sent_after_a_401_is_not_waited_for(reach: Any) -> None:
    head = HEAD.replace(SUPPORT.encode(), b"tok-guess-000000000001") + b"Content-Length: 400\r\n\r\n"
    answer = await while_slow(reach, head, b"{" + b" " * 399)
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:300]


async def test_honest_clients_are_not_cut_off(reach: Any) -> None:
    settings = ServeSettings(tokens={SUPPORT: "support"}, read_timeout=1)
    async with ServedMcp(reach, settings) as served, httpx.AsyncClient(timeout=20) as client:
        for n in range(3):  # one keep-alive connection
            res = await client.post(f"http://127.0.0.1:{served.port}/mcp", content=CALL.replace(b'"slow"', b'"%d"' % n),
                                    headers={**MCP_HEADERS, "authorization": f"Bearer {SUPPORT}"})
            assert res.json()["result"]["isError"] is False, res.text[:200]
    assert ran == ["0", "1", "2"]


async def test_a_tool_that_runs_longer_than_read_timeout_is_answered(reach: Any) -> None:
    """The deadlines are for the client's sending, never for the server's work: a call that takes
    longer than ``read_timeout`` is answered on the same connection."""

    @connector(risk="read")
    async def slow_lookup(city: str) -> str:
        """Look a city up slowly. Use for city facts.

        Args:
            city: the city
        """
        await asyncio.sleep(2.5)
        return city

    reach.register(slow_lookup)
    settings = ServeSettings(tokens={SUPPORT: "support"}, read_timeout=1)
    async with ServedMcp(reach, settings) as served:
        res = await served.post({"authorization": f"Bearer {SUPPORT}"}, json.dumps(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
             "params": {"name": "slow_lookup", "arguments": {"city": "Oslo"}}}))
    assert res.status_code == 200 and res.json()["result"]["isError"] is False, res.text[:300]
