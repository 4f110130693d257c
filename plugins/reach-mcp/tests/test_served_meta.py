"""A served call's ``_meta`` is refused clearly when it is odd: an idempotency key that is
not a string, empty, too long or holds control/invisible characters, a ``_meta`` too
large or too deep. Before, such a key was silently dropped, so a client's retry of a
payment ran twice. The official SDK's client against reach's MCP server, in memory."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from reach_mcp.server import build_server
from reach_mcp.settings import ServeSettings

from reach_core import Connector
from reach_core.testing import make_reach

KEY = "reach/idempotency_key"
ran: list[Any] = []


class Pay(Connector):
    name = "pay"
    description = "Pay an amount. Use when the user asks to pay."
    risk = "write"
    input_schema = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}

    async def execute(self, params: Any, ctx: Any = None) -> Any:
        ran.append((params["amount"], ctx.idempotency_key if ctx else None))
        return {"paid": params["amount"], "n": len(ran)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    reach = make_reach(data_dir=tmp_path_factory.mktemp("meta") / "data")
    reach.register(Pay())
    return build_server(reach, ServeSettings(), agent=None)


@pytest.fixture
def server(built):
    """The module's server (each test's keys are its own), with a fresh record of what ran."""
    ran.clear()
    return built


def _deep(n: int) -> Any:
    value: Any = "x"
    for _ in range(n):
        value = {"a": value}
    return value


BAD_META = [
    {KEY: 17}, {KEY: 1.5}, {KEY: True}, {KEY: ["k"]}, {KEY: {"k": "v"}}, {KEY: ""}, {KEY: "k\n"},
    {KEY: "a\x00b"}, {KEY: "k\u200b"}, {KEY: "\u202ek"}, {KEY: "k" * 513}, {KEY: "k" * 100_000},
    {"big": "x" * 70_000}, {"many": {str(i): i for i in range(5000)}}, {"deep": _deep(40)},
    {"x" * 10_000: 1}, {"bad\nname": 1}, {KEY: "ok-key", "deep": _deep(40)},
]


@pytest.mark.parametrize("meta", BAD_META, ids=lambda m: repr(m)[:30])
async def test_odd_meta_refused_and_nothing_runs(server, meta):
    async with Client(server, cache=None) as client:
        res = await client.call_tool("pay", {"amount": 5}, meta=meta)
    assert res.is_error
    error = res.structured_content["error"]
    assert error["code"] == "invalid_arguments" and "_meta" in error["message"]
    assert len(error["message"]) < 400
    assert ran == []


GOOD_META = [None, {}, {KEY: "pay-7"}, {KEY: "k" * 512}, {KEY: "заказ 17"}, {"progressToken": "t-1"},
             {KEY: "pay-8", "progressToken": 3, "vendor/trace": {"id": "abc", "n": [1, 2]}}]


@pytest.mark.parametrize("meta", GOOD_META, ids=lambda m: repr(m)[:30])
async def test_honest_meta_runs_and_a_key_makes_a_receipt(server, meta):
    async with Client(server, cache=None) as client:
        first = await client.call_tool("pay", {"amount": 5}, meta=meta)
        again = await client.call_tool("pay", {"amount": 5}, meta=meta)
    assert not first.is_error and not again.is_error
    keyed = bool(meta and KEY in meta)
    assert len(ran) == (1 if keyed else 2)
    if keyed:
        assert first.structured_content == again.structured_content
