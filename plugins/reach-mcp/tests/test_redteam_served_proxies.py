"""Red team: ``reach serve mcp --http``'s token gate counts failed tokens by the peer, not by a header.

uvicorn believes ``X-Forwarded-For`` from 127.0.0.1 and ::1 by default, and the command kept
that default: a client on the same host wrote a new address with every guess and was never
blocked. Now uvicorn's handling is off (``reach_core.tokens.UVICORN_LIMITS``) and only the
proxies ``[plugins.reach-mcp.server] trusted_proxies`` names are believed
(``reach_core.tokens.TrustedProxies``, shared with ``reach serve http``). Real uvicorn on
127.0.0.1 with the options the command uses.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import MCP_HEADERS, ServedMcp, note_reach
from reach_mcp.settings import ServeSettings

from reach_core.testing import FORWARDING_SPOOFS, make_reach, raw_http

SUPPORT = "tok-support-0123456789"
LIMIT = 3
GUESS = b"Authorization: Bearer tok-guess-0000001"
VALID = f"Authorization: Bearer {SUPPORT}".encode()
HEADERS = [f"{k}: {v}".encode() for k, v in MCP_HEADERS.items()]
BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
_addresses = (f"127.0.{i // 250 + 60}.{i % 250 + 2}" for i in itertools.count())


@pytest.fixture
def reach(tmp_path: Any) -> Any:
    return note_reach(tmp_path, "support")


async def send(served: ServedMcp, *lines: bytes, source: str | None = None) -> int:
    status, _, _ = await asyncio.to_thread(raw_http, served.port, "POST", "/mcp", [*HEADERS, *lines], BODY,
                                           source=source)
    return status


@pytest.mark.parametrize(("name", "spoof"), FORWARDING_SPOOFS, ids=[s[0] for s in FORWARDING_SPOOFS])
async def test_forwarding_headers_do_not_reset_the_failed_token_count(reach: Any, name: str,
                                                                      spoof: Callable[[int], list[bytes]]) -> None:
    settings = ServeSettings(tokens={SUPPORT: "support"}, max_token_failures=LIMIT)
    async with ServedMcp(reach, settings) as served:
        for n in range(LIMIT):
            assert await send(served, GUESS, *spoof(n)) == 401
        assert await send(served, VALID, *spoof(LIMIT)) == 429, name  # before: 200, the count dodged
        assert await send(served, VALID, *spoof(0), source=next(_addresses)) == 200  # another client


async def test_behind_a_trusted_proxy_the_right_most_hop_is_the_client(reach: Any) -> None:
    settings = ServeSettings(tokens={SUPPORT: "support"}, max_token_failures=LIMIT, trusted_proxies=["127.0.0.0/8"])
    async with ServedMcp(reach, settings) as served:
        proxy = next(_addresses)
        for n in range(LIMIT):  # what the client wrote left of the address the proxy appended is not read
            assert await send(served, GUESS, f"X-Forwarded-For: 198.51.100.{n}, 203.0.113.9".encode(),
                              source=proxy) == 401
        assert await send(served, VALID, b"X-Forwarded-For: 203.0.113.9", source=proxy) == 429
        assert await send(served, VALID, b"X-Forwarded-For: 203.0.113.10", source=proxy) == 200
        assert await send(served, VALID, b"X-Forwarded-For: unknown, 203.0.113.11", source=proxy) == 200


async def test_a_peer_that_is_no_trusted_proxy_is_not_believed(reach: Any) -> None:
    settings = ServeSettings(tokens={SUPPORT: "support"}, max_token_failures=LIMIT, trusted_proxies=["10.0.0.0/8"])
    async with ServedMcp(reach, settings) as served:
        for n in range(LIMIT):
            assert await send(served, GUESS, f"X-Forwarded-For: 10.0.0.{n}".encode()) == 401
        assert await send(served, VALID, b"X-Forwarded-For: 10.9.9.9") == 429


@pytest.mark.parametrize("entry", ["*", "localhost", "10.0.0.1/8", "127.0.0.1\u200b"], ids=repr)
def test_a_trusted_proxy_that_is_no_address_is_refused_at_start(entry: str) -> None:
    """The whole family is in reach's core tests (``tests/test_trusted_proxies.py``)."""
    import reach_mcp.plugin as mcp_plugin

    from reach_core import ConfigError

    with pytest.raises(ConfigError, match="trusted_proxies"):
        make_reach(("reach-mcp", mcp_plugin),
                   config={"plugins": {"reach-mcp": {"server": {"trusted_proxies": [entry]}}}})
