"""Red team of ``reach serve mcp --http``'s token gate: one valid token, or 401; guessing is slowed.

The gate read only the first ``Authorization`` header, let an empty one through as "no
header" (the anonymous agent), and stripped what followed the token (a no-break space, NEL).
It now reads the header(s) with the rule ``reach serve http`` uses
(``reach_core.tokens.bearer_agent``): exactly one header, ``Bearer <a configured token>``.
Failed tokens are counted per client address: past ``max_token_failures`` in a minute that
address gets 429 with ``Retry-After`` whatever it sends, so a right guess looks like a wrong
one. A JSON-RPC request id, which becomes reach's call id (``mcp-<id>``) in logs, the audit
trail and the console, is held to 1-256 printable characters. Real uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import MCP_HEADERS, ServedMcp, note_reach
from conftest import notes as ran
from reach_mcp.settings import ServeSettings

SUPPORT = "tok-support-0123456789"
CYRILLIC = "токен-длинный-01"


def call(text: str = "hello", rpc_id: Any = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call",
                       "params": {"name": "add_note", "arguments": {"text": text}}}).encode()


@pytest.fixture
def reach(tmp_path: Any) -> Iterator[Any]:
    yield note_reach(tmp_path, "support", "guest")


async def post(served: ServedMcp, authorization: list[bytes], body: bytes | None = None) -> httpx.Response:
    """A POST with these ``Authorization`` values, each as the bytes given (none: no header; httpx
    refuses to send a value with spaces at its end, which the server would trim anyway)."""
    headers = [(k.encode(), v.encode()) for k, v in MCP_HEADERS.items()]
    headers += [(b"authorization", value) for value in authorization]
    async with httpx.AsyncClient(timeout=20) as client:
        return await client.post(f"http://127.0.0.1:{served.port}/mcp", content=body or call(), headers=headers)


TOKEN = SUPPORT.encode()
REFUSED = [
    [b""], [b"Basic c3VwcG9ydDp4"], [b"Token " + TOKEN], [TOKEN], [b"Bearer"], [b"Bearer \xa0"],
    [b"Bearer\xa0" + TOKEN], [b"Bearer " + TOKEN + b"\xa0"], [b"Bearer " + TOKEN + b"\x85"],
    [b"Bearer \xa0" + TOKEN], [b"Bearer " + TOKEN + b" x"], [b"Bearer " + TOKEN + b","],
    [b"Bearer " + TOKEN, b"Bearer tok-guess-0000001"], [b"Bearer " + TOKEN, b""], [b"Bearer " + TOKEN] * 2,
    [b"Bearer " + TOKEN, b"Basic eA=="], [b"", b""], [b"Bearer " + CYRILLIC.encode("cp1251")],
]


@pytest.mark.parametrize("authorization", REFUSED, ids=lambda a: repr(a)[:40])
async def test_anything_but_one_valid_token_is_401(reach: Any, authorization: list[bytes]) -> None:
    settings = ServeSettings(tokens={SUPPORT: "support"}, anonymous_agent="guest", max_token_failures=1000)
    async with ServedMcp(reach, settings) as served:
        res = await post(served, authorization)
    assert res.status_code == 401, (res.status_code, res.text[:200])  # before: 200 for many, as support or guest
    assert ran == []


HONEST = [[b"Bearer " + TOKEN], [b"bearer  " + TOKEN], [b"BEARER\t" + TOKEN],
          [b"Bearer " + CYRILLIC.encode("utf-8")], []]


async def test_one_valid_token_or_no_header_with_an_anonymous_agent_still_work(reach: Any) -> None:
    settings = ServeSettings(tokens={SUPPORT: "support", CYRILLIC: "support"}, anonymous_agent="guest")
    async with ServedMcp(reach, settings) as served:
        for authorization in HONEST:
            res = await post(served, authorization)
            assert res.status_code == 200 and res.json()["result"]["isError"] is False, (authorization, res.text)
    assert len(ran) == len(HONEST)


LIMIT = 4
_addresses = (f"127.0.{i // 250}.{i % 250 + 2}" for i in itertools.count(1))


@pytest.mark.parametrize("failure", [[b"Bearer tok-guess-0000001"], [b"Basic eA=="], [b""],
                                     [b"Bearer " + TOKEN, b"Bearer " + TOKEN]], ids=repr)
async def test_failed_tokens_past_the_limit_are_429_even_for_the_valid_one(reach: Any, failure: list[bytes]) -> None:
    settings = ServeSettings(tokens={SUPPORT: "support"}, max_token_failures=LIMIT)
    async with ServedMcp(reach, settings) as served:
        for _ in range(LIMIT):
            assert (await post(served, failure)).status_code == 401
        for authorization in (failure, [b"Bearer tok-guess-0000002"], [b"Bearer " + TOKEN]):
            res = await post(served, authorization)
            assert res.status_code == 429, (authorization, res.status_code)  # before: 401, or 200 for the token
            assert 1 <= int(res.headers["retry-after"]) <= 60 and "rate_limited" in res.json()["error"]
        # another address is not blocked (the whole 127/8 is this machine)
        async with httpx.AsyncClient(timeout=20, transport=httpx.AsyncHTTPTransport(
                local_address=next(_addresses))) as other:
            res = await other.post(f"http://127.0.0.1:{served.port}/mcp", content=call(),
                                   headers={**MCP_HEADERS, "authorization": f"Bearer {SUPPORT}"})
            assert res.status_code == 200
    assert ran == ["hello"]


BAD_IDS = ["x" * 300, "x" * 100_000, "a\nb", "a\r\nINFO forged", "\x1b[31m", "a\x00b", "\u202eid", "a\u200bb",
           "a\u2028b", "a\u00a0b", "\ufeff1", 10**300]


@pytest.mark.parametrize("rpc_id", BAD_IDS, ids=lambda v: repr(v)[:24])
async def test_an_odd_request_id_runs_nothing(reach: Any, rpc_id: Any) -> None:
    async with ServedMcp(reach, ServeSettings()) as served:
        res = await post(served, [], call(rpc_id=rpc_id))
    assert res.status_code < 500, res.text[:200]
    if res.status_code == 200 and "result" in res.json():
        result = res.json()["result"]
        assert result["isError"] and "request id" in result["structuredContent"]["error"]["message"]
    assert ran == []  # before: every one ran, with the id as reach's call id


async def test_honest_request_ids_run(reach: Any) -> None:
    ids: list[Any] = [1, 0, 2**53, "req-1", "b0c1d2e3-f4a5-4b6c-8d7e-9f0a1b2c3d4e", "заказ 17", "x" * 250]
    async with ServedMcp(reach, ServeSettings()) as served:
        for rpc_id in ids:
            res = await post(served, [], call(rpc_id=rpc_id))
            assert res.json()["result"]["isError"] is False, (rpc_id, res.text[:200])
    assert len(ran) == len(ids)
