"""reach-mcp benchmark: what reach costs on each side of MCP.

1. Server side: the same ``echo`` tool served over stateless streamable HTTP on
   loopback by the SDK's own ``MCPServer`` and by ``reach serve mcp``'s app;
   one SDK client, sequential calls.
2. Client side: the SDK client calling that ``MCPServer`` directly, and reach
   (``reach.invoke``, the whole pipeline) calling it as a configured MCP server.

Servers run in their own processes (uvicorn), so client and server do not share
an event loop. Prints medians, p90 and ratios. Run:

    python bench/bench_mcp.py [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

HERE = os.path.abspath(__file__)


# ------------------------------------------------------------------ servers (child processes)
def serve_sdk(port: int) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool(description="Echo a text back.", structured_output=False)
    def echo(text: str) -> str:
        return text

    server.run("streamable-http", host="127.0.0.1", port=port, stateless_http=True, json_response=True)


def serve_reach(port: int) -> None:
    import uvicorn
    from reach_mcp.server import http_app
    from reach_mcp.settings import ServeSettings

    from reach_core import connector
    from reach_core.testing import make_reach

    @connector(risk="read")
    def echo(text: str) -> str:
        """Echo a text back.

        Args:
            text: what to echo
        """
        return text

    reach = make_reach(config={"reach": {"log_calls": False}}, data_dir=tempfile.mkdtemp(prefix="bench-mcp-"))
    reach.register(echo)
    settings = ServeSettings(tokens={"bench-token-0123": "default"})
    uvicorn.run(http_app(reach, settings), host="127.0.0.1", port=port, log_level="warning")


# ------------------------------------------------------------------ helpers
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(mode: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, HERE, mode, str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{mode} did not start")


async def measure_pair(fa: Callable[[], Awaitable[Any]], fb: Callable[[], Awaitable[Any]], calls: int,
                       warmup: int = 30) -> tuple[list[float], list[float]]:
    """Alternate the two calls, so drifting machine load hits both alike."""
    for _ in range(warmup):
        await fa()
        await fb()
    a: list[float] = []
    b: list[float] = []
    for _ in range(calls):
        for fn, out in ((fa, a), (fb, b)):
            t0 = time.perf_counter()
            await fn()
            out.append((time.perf_counter() - t0) * 1000.0)
    return a, b


def stats(xs: list[float]) -> tuple[float, float]:
    xs = sorted(xs)
    return statistics.median(xs), xs[int(len(xs) * 0.9)]


def sdk_client(url: str, token: str | None = None) -> Any:
    from contextlib import asynccontextmanager

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}

    @asynccontextmanager
    async def streams() -> Any:
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with streamable_http_client(url, http_client=http) as s:
                yield s

    return Client(streams(), cache=None)


def row(label: str, xs: list[float]) -> tuple[float, float]:
    med, p90 = stats(xs)
    print(f"  {label:<44} median {med:7.3f} ms   p90 {p90:7.3f} ms")
    return med, p90


# ------------------------------------------------------------------ benchmarks
async def bench(calls: int) -> None:
    sdk_proc, sdk_port = spawn("--serve-sdk")
    reach_proc, reach_port = spawn("--serve-reach")
    try:
        sdk_url = f"http://127.0.0.1:{sdk_port}/mcp"
        reach_url = f"http://127.0.0.1:{reach_port}/mcp"
        print(f"reach-mcp benchmark: {calls} sequential calls of echo, loopback, stateless streamable HTTP")

        print("server side (same SDK client):")
        async with sdk_client(sdk_url) as c1, sdk_client(reach_url, "bench-token-0123") as c2:
            sdk_srv, reach_srv = await measure_pair(lambda: c1.call_tool("echo", {"text": "hello"}),
                                                    lambda: c2.call_tool("echo", {"text": "hello"}), calls)
        a, _ = row("SDK MCPServer", sdk_srv)
        b, _ = row("reach serve mcp (token -> agent, pipeline)", reach_srv)
        print(f"  ratio reach/SDK {b / a:.2f}x   overhead {b - a:+.3f} ms per call")

        print("client side (same SDK MCPServer):")
        import reach_mcp.plugin as plugin

        from reach_core.testing import make_reach

        reach = make_reach(("reach-mcp", plugin), data_dir=tempfile.mkdtemp(prefix="bench-mcp-"),
                           config={"reach": {"log_calls": False},
                                   "plugins": {"reach-mcp": {"servers": {"b": {"url": sdk_url}}}}})
        async with sdk_client(sdk_url) as c:
            direct, via = await measure_pair(lambda: c.call_tool("echo", {"text": "hello"}),
                                             lambda: reach.invoke("b__echo", {"text": "hello"}), calls)
        await reach.aclose()
        a, _ = row("SDK client alone", direct)
        b, _ = row("reach.invoke -> MCP server", via)
        print(f"  ratio reach/SDK {b / a:.2f}x   overhead {b - a:+.3f} ms per call")
    finally:
        for p in (sdk_proc, reach_proc):
            p.terminate()
            p.wait(5)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-sdk":
        serve_sdk(int(sys.argv[2]))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-reach":
        serve_reach(int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(bench(args.calls))


if __name__ == "__main__":
    main()
