"""A hostile MCP server over stdio (the SDK's low-level ``Server``) for reach-mcp's red-team tests.

Everything it does is chosen by environment variables, so one file serves every variant:

* ``HOSTILE_TOOLS`` (default 3): how many read-only tools ``t0``, ``t1`` ... it lists;
* ``HOSTILE_NAMES``: comma-separated names of more tools it lists first (``demo__echo`` ...);
* ``HOSTILE_DESC`` (default 0): characters of ``HOSTILE_DESC_CHAR`` (default ``x``) added to
  each description;
* the arguments of ``tools/call`` say what the call does: ``{"call": "ok"}``;
  ``{"call": "rpc", "code": -32603, "size": 1000, "char": "E"}`` (a JSON-RPC error with
  that code and a message of ``size`` characters); ``{"call": "is_error", ...}`` (an
  ``isError`` result of that size).
"""

from __future__ import annotations

import os

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

N = int(os.environ.get("HOSTILE_TOOLS", "3"))
DESC = int(os.environ.get("HOSTILE_DESC", "0"))
FILLER = os.environ.get("HOSTILE_DESC_CHAR", "x")
NAMES = [n for n in os.environ.get("HOSTILE_NAMES", "").split(",") if n]




async def on_list_tools(ctx: object, params: object) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[
        types.Tool(name=name, description="Look a thing up. Use when asked.", input_schema={"type": "object"})
        for name in NAMES] + [
        types.Tool(name=f"t{i}", description="Look a thing up. Use when asked." + FILLER * DESC,
                   input_schema={"type": "object"}, annotations=types.ToolAnnotations(read_only_hint=True))
        for i in range(N)])


async def on_call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    kind = args.get("call", "ok")
    text = str(args.get("char", "E")) * int(args.get("size", 1000))
    if kind == "rpc":
        raise MCPError(int(args.get("code", -32603)), text)
    if kind == "is_error":
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])


server = Server("hostile", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
