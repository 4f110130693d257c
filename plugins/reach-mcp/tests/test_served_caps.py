"""Calls that arrive over MCP are held to reach's argument caps and checks: the
official SDK's client against reach's MCP server (in memory, and over HTTP through
uvicorn on 127.0.0.1 for the body limit), with small caps so the variants stay quick."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from conftest import MCP_HEADERS, ServedMcp
from mcp import Client
from reach_mcp.server import body_limit, build_server
from reach_mcp.settings import ServeSettings

from reach_core import Connector, connector
from reach_core.testing import make_reach

CAPS = {"max_argument_bytes": 20_000, "max_argument_depth": 12}
ran: list[Any] = []


@connector(risk="read")
def note(text: str, tags: list[str] | None = None) -> str:
    """Keep a note. Use when the user asks to remember something.

    Args:
        text: the note
        tags: labels
    """
    ran.append(text)
    return text[:20]


class Store(Connector):
    name = "store"
    description = "Store any JSON document. Use when the user asks to store data."
    risk = "read"
    input_schema = {"type": "object"}

    async def execute(self, params: Any, ctx: Any = None) -> Any:
        ran.append(params)
        return {"ok": True}


@pytest.fixture
def reach(tmp_path):
    ran.clear()
    r = make_reach(config={"reach": CAPS}, data_dir=tmp_path / "data")
    r.register(note)
    r.register(Store())
    yield r


def nested(depth: int, kind: str) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if kind == "list" or (kind == "mixed" and i % 2) else {"k": value}
    return value


def error_of(res: Any) -> dict[str, Any]:
    assert res.is_error, res
    err = res.structured_content["error"]
    assert "internal error" not in err["message"]
    return err


HOSTILE = [
    ("store", {"blob": "a" * 30_000}, "invalid_arguments", "20000"),
    ("store", {"blob": "北" * 7_000}, "invalid_arguments", "20000"),
    ("store", {"items": ["x" * 100] * 300}, "invalid_arguments", "20000"),
    ("store", {f"k{i}": i for i in range(3_000)}, "invalid_arguments", "20000"),
    ("note", {"text": "t" * 25_000}, "invalid_arguments", "20000"),
    ("note", {"text": "hi", "tags": ["t" * 1000] * 25}, "invalid_arguments", "20000"),
    ("store", {"deep": nested(12, "dict")}, "invalid_arguments", "deeper than 12"),
    ("store", {"deep": nested(20, "list")}, "invalid_arguments", "deeper than 12"),
    ("store", {"deep": nested(60, "mixed")}, "invalid_arguments", "deeper than 12"),
    ("note", {"text": "hi", "tags": nested(15, "list")}, "invalid_arguments", "deeper than 12"),
    ("note", {"text": "\ud800"}, "invalid_arguments", "surrogate"),
    ("note", {"text": "ok \udfff ok"}, "invalid_arguments", "surrogate"),
    ("store", {"x": {"k": "\udc00"}}, "invalid_arguments", "surrogate"),
    ("store", {"x": ["a", {"y": "\ud83d"}]}, "invalid_arguments", "surrogate"),
    ("note", {"text": "hi", "colour": "red"}, "invalid_arguments", "colour"),
    ("note", {"text": "hi", "ctx": {"agent": "admin"}}, "invalid_arguments", "ctx"),
    ("store", {"n": 10**30}, "invalid_arguments", "64 bits"),
    ("store", {"n": [-(2**70)]}, "invalid_arguments", "64 bits"),
    ("note", {"text": 5}, "invalid_arguments", "text"),
]


@pytest.mark.parametrize(("tool", "args", "code", "says"), HOSTILE,
                         ids=[f"{t}-{i}" for i, (t, *_rest) in enumerate(HOSTILE)])
async def test_a_served_call_is_held_to_reachs_checks(reach, tool, args, code, says):
    server = build_server(reach, ServeSettings(), agent=None)
    async with Client(server, cache=None) as client:
        res = await client.call_tool(tool, args)
    err = error_of(res)
    assert err["code"] == code and says in err["message"], err
    assert ran == []


async def test_a_served_call_within_the_caps_runs(reach):
    server = build_server(reach, ServeSettings(), agent=None)
    async with Client(server, cache=None) as client:
        assert not (await client.call_tool("note", {"text": "北京 " * 1000, "tags": ["a"]})).is_error
        assert not (await client.call_tool("store", {"deep": nested(10, "mixed")})).is_error
    assert len(ran) == 2


# ------------------------------------------------------------------ over HTTP: the body limit holds as it streams

def rpc(name: str, arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


async def _raw(port: int, head: bytes, chunks: Any) -> tuple[bytes, int]:
    """Send ``head`` then chunked body parts until the server answers; the response and
    how many body bytes were sent before it came."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)
    sent = 0
    response = b""
    try:
        for chunk in chunks:
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
            await writer.drain()
            try:
                response = await asyncio.wait_for(reader.read(65536), 0.001)
            except TimeoutError:
                continue
            if response:
                break
        else:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            response = await asyncio.wait_for(reader.read(65536), 10)
    except (ConnectionError, OSError):  # the server answered and closed while we were still sending
        try:
            response = response or await reader.read(65536)
        except (ConnectionError, OSError):
            response = response or b"(reset)"
    finally:
        writer.close()
    return response, sent


@pytest.mark.parametrize("chunk", [1024, 65_536, 1_000_000])
async def test_a_chunked_body_without_length_is_refused_once_past_the_limit(reach, chunk):
    limit = body_limit(reach)
    assert limit == 6 * CAPS["max_argument_bytes"] + 65_536
    head = ("POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: chunked\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in MCP_HEADERS.items()) + "\r\n").encode()
    total = 50 * limit
    parts = (b"x" * chunk for _ in range(total // chunk + 1))
    async with ServedMcp(reach) as served:
        response, sent = await _raw(served.port, head, parts)
    # a large chunk in flight may turn the server's close into a reset before its 413 is read
    assert response.startswith(b"HTTP/1.1 413") or (chunk >= 1_000_000 and response == b"(reset)"), response[:200]
    assert sent < total // 2, f"the server read {sent} bytes before refusing"
    assert ran == []


@pytest.mark.parametrize("declared", ["200000", "10000000", "300000000", "99999999999999"])
async def test_a_declared_length_over_the_limit_is_refused_before_reading(reach, declared):
    async with ServedMcp(reach) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write((f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: {declared}\r\n"
                      + "".join(f"{k}: {v}\r\n" for k, v in MCP_HEADERS.items()) + "\r\n").encode())
        await writer.drain()
        response = await asyncio.wait_for(reader.read(65536), 10)
        writer.close()
    assert response.startswith(b"HTTP/1.1 413"), response[:200]


@pytest.mark.parametrize("depth", [13, 1_000, 100_000])
async def test_deep_json_over_http_is_a_client_error_not_a_crash(reach, depth):
    body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"store","arguments":{"x":' + \
        "[" * depth + "]" * depth + "}}}"
    async with ServedMcp(reach) as served:
        res = await served.post({}, body)
    assert res.status_code < 500, (res.status_code, res.text[:300])
    if res.status_code == 200:
        err = res.json().get("result", {}).get("structuredContent", {}).get("error") or res.json().get("error")
        assert err, res.text[:300]
    assert ran == []


async def test_a_call_within_the_limit_runs_over_http(reach):
    async with ServedMcp(reach) as served:
        res = await served.post({}, json.dumps(rpc("note", {"text": "北京" * 3000}), ensure_ascii=True))
    assert res.status_code == 200, res.text[:300]
    assert res.json()["result"]["isError"] is False
    assert len(ran) == 1
