"""reach as an MCP server: the official SDK's client against `reach serve mcp` (a real subprocess)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from conftest import PY, free_port, start, stop
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from reach_mcp.server import build_server

from reach_core import NeedsConfirmation, connector, hookimpl
from reach_core.testing import make_reach

SUPPORT = "tok-support-0123456789"
OPS = "tok-ops-from-env-0123456789"

CONFIG = """
[reach]
data_dir = "{data}"
log_calls = false

[plugins]
load = ["reach-mcp"]

[plugins.reach-mcp.servers.demo]
url = "{demo}"

[plugins.reach-mcp.server]
tokens = {{ "{support}" = "support" }}
clients = [{{ token = {{ env = "REACH_TEST_OPS_TOKEN" }}, agent = "ops" }}]

[agents.support]
allow = ["demo__weather", "demo__echo"]

[agents.ops]
deny = ["demo__rug_pull", "demo__crash"]
max_tier = "write"
"""


REACH_CLI = [PY, "-c", "from reach_core.cli import main; main()"]


@pytest.fixture(scope="module")
def serve_config(demo_http: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("serve")
    cfg = tmp / "reach.toml"
    cfg.write_text(CONFIG.format(data=tmp / "data", demo=demo_http, support=SUPPORT))
    return cfg


@pytest.fixture(scope="module")
def reach_server(serve_config: Path) -> Iterator[str]:
    """`reach serve mcp --http` in a subprocess, in front of the demo server; yields its URL."""
    port = free_port()
    cmd = [*REACH_CLI, "--config", str(serve_config), "serve", "mcp", "--http", f"127.0.0.1:{port}"]
    # REACH_CONFIG too: the CLI collects plugin commands before it reads --config
    proc = start(cmd, port, env={"REACH_TEST_OPS_TOKEN": OPS, "REACH_CONFIG": str(serve_config)})
    yield f"http://127.0.0.1:{port}/mcp"
    stop(proc)


def sdk_client(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    @asynccontextmanager
    async def streams() -> Any:
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with streamable_http_client(url, http_client=http) as s:
                yield s

    return Client(streams(), cache=None)


async def test_tools_are_filtered_and_checked_per_agent(reach_server: str) -> None:
    async with sdk_client(reach_server, SUPPORT) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == {"demo__weather", "demo__echo"}
        weather = listed["demo__weather"]
        assert weather.annotations is not None and weather.annotations.read_only_hint is True
        assert weather.annotations.open_world_hint is True  # another MCP server's tool reaches outside
        assert weather.output_schema is not None and "temp_c" in weather.output_schema["properties"]
        res = await client.call_tool("demo__weather", {"city": "Zürich"})
        assert not res.is_error
        assert res.structured_content == {"city": "Zürich", "temp_c": 21.5}
        # not offered, and refused when called anyway
        res = await client.call_tool("demo__transfer", {"amount": 1})
        assert res.is_error
        assert res.structured_content["error"]["code"] == "denied"
        # reach validates the arguments: the model reads what to fix
        res = await client.call_tool("demo__weather", {})
        assert res.is_error and res.structured_content["error"]["code"] == "invalid_arguments"

    async with sdk_client(reach_server, OPS) as client:  # token from an { env = ... } secret
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert {"demo__weather", "demo__transfer", "demo__create_note"} <= set(listed)
        assert "demo__delete_all_notes" not in listed and "demo__rug_pull" not in listed
        note = listed["demo__create_note"].annotations
        assert note is not None and (note.read_only_hint, note.destructive_hint, note.idempotent_hint) == (
            False, False, True)
        res = await client.call_tool("demo__transfer", {"amount": 500})
        assert res.is_error and res.structured_content["error"]["code"] == "execution_failed"
        assert "daily limit" in res.structured_content["error"]["message"]
        # a repeated non-idempotent call with the same key runs once: the second answer is the receipt
        meta: Any = {"reach/idempotency_key": "pay-7"}
        first = await client.call_tool("demo__transfer", {"amount": 7}, meta=meta)
        again = await client.call_tool("demo__transfer", {"amount": 7}, meta=meta)
        other = await client.call_tool("demo__transfer", {"amount": 7})
        assert not first.is_error and first.structured_content == again.structured_content
        assert other.structured_content != first.structured_content


async def test_unknown_or_missing_token_is_refused(reach_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx.AsyncClient(timeout=10) as http:
        r = await http.post(reach_server, json=body, headers=headers)
        assert r.status_code == 401
        r = await http.post(reach_server, json=body, headers={**headers, "Authorization": "Bearer wrong-token-123"})
        assert r.status_code == 401


async def test_reach_as_client_of_reach_serve(reach_for: Any, reach_server: str) -> None:
    """reach -> reach serve mcp -> demo server; the bearer token comes from an { env } secret."""
    os.environ["REACH_TEST_SUPPORT_AUTH"] = f"Bearer {SUPPORT}"
    from reach_core.config import resolve_secrets

    headers = resolve_secrets({"Authorization": {"env": "REACH_TEST_SUPPORT_AUTH"}}, where="test")
    reach = reach_for({"front": {"url": reach_server, "headers": headers, "prefix": "f"}})
    assert {t.name for t in reach.all_tools()} == {"f__demo__weather", "f__demo__echo"}
    res = await reach.invoke("f__demo__echo", {"text": "через два сервера"})
    assert (res.ok, res.content) == (True, "через два сервера")
    await reach.aclose()


async def test_serve_over_stdio_as_one_agent(serve_config: Path) -> None:
    params = StdioServerParameters(command=PY, args=[*REACH_CLI[1:], "--config", str(serve_config), "serve", "mcp",
                                                     "--stdio", "--agent", "support"],
                                   env={"REACH_TEST_OPS_TOKEN": OPS, "REACH_CONFIG": str(serve_config)})
    async with Client(params, cache=None) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"demo__weather", "demo__echo"}
        res = await client.call_tool("demo__echo", {"text": "stdio"})
        assert not res.is_error and res.content[0].text == "stdio"
        res = await client.call_tool("demo__transfer", {"amount": 1})
        assert res.is_error and res.structured_content["error"]["code"] == "denied"


class AskFirst:
    """Stands in for a confirmer: every call that needs a person gets a confirmation id."""

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Any, ctx: Any) -> None:
        if ctx.needs_confirmation:
            raise NeedsConfirmation(f"delete {call.arguments['path']}", confirmation_id="cf-42")


async def test_needs_confirmation_comes_back_as_a_tool_error(tmp_path: Path) -> None:
    @connector(risk="dangerous")
    def delete_file(path: str) -> dict[str, str]:
        """Delete a file. Use only when the user asks to delete it.

        Args:
            path: the file to delete
        """
        return {"deleted": path}

    reach = make_reach(AskFirst(), data_dir=tmp_path)
    reach.register(delete_file)
    from reach_mcp.settings import ServeSettings

    server = build_server(reach, ServeSettings(), agent=None)
    async with Client(server, cache=None) as client:
        tool = (await client.list_tools()).tools[0]
        assert tool.annotations is not None and tool.annotations.destructive_hint is True
        assert tool.output_schema is not None
        res = await client.call_tool("delete_file", {"path": "/tmp/x"})
        assert res.is_error
        err = res.structured_content["error"]
        assert err["code"] == "needs_confirmation" and err["confirmation_id"] == "cf-42"
        assert "cf-42" in res.content[0].text
    # an HTTP server whose request carries no agent (no token gate in front) refuses, never guesses
    from mcp import MCPError

    gateless = build_server(reach, ServeSettings(), from_request=True)
    async with Client(gateless, cache=None) as client:
        with pytest.raises(MCPError, match="no reach agent"):
            await client.list_tools()
        with pytest.raises(MCPError, match="no reach agent"):
            await client.call_tool("delete_file", {"path": "/tmp/x"})
    await reach.aclose()


async def test_tool_progress_reaches_the_mcp_client(tmp_path: Path) -> None:
    """A client that asks for progress gets the tool's progress as MCP notifications."""
    from reach_core import Connector, Progress

    class Export(Connector):
        name = "export_report"
        description = "Export the monthly report. Use when the user asks for the report."
        risk = "read"

        async def execute_stream(self, params, ctx):
            for i in range(1, 4):
                yield Progress(i, 3, f"page {i} of 3")
            yield {"pages": 3}

    import reach_mcp.plugin

    reach = make_reach(("reach-mcp", reach_mcp.plugin), data_dir=tmp_path)
    reach.register(Export())
    from reach_mcp.settings import ServeSettings

    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    server = build_server(reach, ServeSettings(), agent=None)
    async with Client(server, cache=None) as client:
        res = await client.call_tool("export_report", {}, progress_callback=on_progress)
        assert not res.is_error
        plain = await client.call_tool("export_report", {})  # no progress asked: nothing sent
        assert not plain.is_error
    assert seen == [(1.0, 3, "page 1 of 3"), (2.0, 3, "page 2 of 3"), (3.0, 3, "page 3 of 3")]
    await reach.aclose()


def test_idle_connections_are_bounded_by_the_command(reach_server: str) -> None:
    """``reach serve mcp --http`` runs uvicorn with ``reach_core.tokens.uvicorn_options``: past
    1,000 connections a request is answered 503, and it serves again once they close. Before:
    no bound, every request answered. (The check is reach-serve's too: reach_core.testing.)"""
    from reach_core.testing import assert_connections_capped

    assert_connections_capped(int(reach_server.rsplit(":", 1)[1].split("/")[0]), "/mcp")
