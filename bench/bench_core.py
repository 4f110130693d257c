"""reach's invoke path against a bare baseline and peer frameworks, in one run.

Baseline: ``json.loads`` of the arguments + a direct ``await add(a, b)`` +
``json.dumps`` of the result. reach's path: decode, pre-validate hook, compiled
schema validation, policy, one pre-invoke and one post-invoke hook from a
plugin, the deadline machinery, a ``ToolResult`` and its JSON message.
Peers do the same trivial work through their own tool-call path.

Run: ``nox -s bench -- bench/bench_core.py`` or ``python bench/bench_core.py``.
Prints medians of several rounds and ratios to the baseline.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

# No logging set-up here: reach's per-call event is measured as a host that configured
# nothing gets it (the stdlib logger "reach" at its default level: not even built).
from reach_core import connector, hookimpl
from reach_core.testing import make_reach

N = int(os.environ.get("BENCH_N", "20000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
ARGS = '{"a": 1, "b": 2}'


async def add_impl(a: int, b: int) -> int:
    return a + b


async def _round(fn) -> float:
    t0 = time.perf_counter()
    for _ in range(N):
        await fn()
    return (time.perf_counter() - t0) / N


async def time_loop(fn) -> float:
    """Seconds per call (median over rounds)."""
    return statistics.median([await _round(fn) for _ in range(ROUNDS)])


async def ratio(fn) -> tuple[float, float, float]:
    """Median of per-round ratios, each round timing the baseline right before ``fn``.

    The machine is shared and noisy; pairing rounds keeps load changes out of the ratio.
    """
    ratios, times, bases = [], [], []
    for _ in range(ROUNDS):
        b = await _round(baseline)
        t = await _round(fn)
        ratios.append(t / b)
        times.append(t)
        bases.append(b)
    return statistics.median(ratios), statistics.median(times), statistics.median(bases)


async def baseline() -> None:
    args = json.loads(ARGS)
    res = await add_impl(**args)
    json.dumps(res)


class HookPlugin:
    REACH_PLUGIN_NAME = "bench-hooks"

    @hookimpl
    def reach_pre_invoke(self, call, tool, ctx):
        return None

    @hookimpl
    def reach_post_invoke(self, call, tool, result, ctx):
        return None


def make_reach_bench():
    @connector(risk="read")
    async def add(a: int, b: int) -> int:
        """Add two integers. Use when asked for a sum."""
        return a + b

    reach = make_reach(HookPlugin(), config={"reach": {"log_calls": True}}, data_dir="/tmp/reach-bench")
    reach.register(add)
    return reach


async def peers() -> dict[str, Any]:
    """Each peer's tool-call path for the same trivial tool, as a coroutine function."""
    out: dict[str, Any] = {}
    try:
        from agents import FunctionTool, function_tool
        from agents.tool_context import ToolContext

        @function_tool
        async def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        assert isinstance(add, FunctionTool)
        tctx = ToolContext(context=None, tool_name="add", tool_call_id="c1", tool_arguments=ARGS)

        async def oa() -> None:
            json.dumps(await add.on_invoke_tool(tctx, ARGS))

        out["openai-agents FunctionTool.on_invoke_tool"] = oa
    except Exception as exc:  # noqa: BLE001 - a missing peer is reported, not fatal
        print(f"  (openai-agents not measured: {type(exc).__name__}: {exc})")
    try:
        from langchain_core.tools import tool as lc_tool

        @lc_tool
        async def add_lc(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        async def lc() -> None:
            json.dumps(await add_lc.ainvoke(json.loads(ARGS)))

        out["langchain-core ainvoke"] = lc
    except Exception as exc:  # noqa: BLE001
        print(f"  (langchain-core not measured: {type(exc).__name__}: {exc})")
    try:
        try:
            from mcp.server.mcpserver import MCPServer as FastMCP  # mcp 2.x
        except ImportError:
            from mcp.server.fastmcp import FastMCP  # mcp 1.x

        mcp = FastMCP("bench")

        @mcp.tool()
        async def add_mcp(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        async def mc() -> None:
            await mcp.call_tool("add_mcp", json.loads(ARGS))

        out["mcp server call_tool"] = mc
    except Exception as exc:  # noqa: BLE001
        print(f"  (mcp not measured: {type(exc).__name__}: {exc})")
    return out


#: ten first-party plugins: the "10 plugins installed" of the target. The others
#: installed in a dev environment (bridges, test fixtures such as reach-sample, which
#: imports pydantic on purpose as the old-style example) are blocked by REACH_PLUGINS,
#: so they are listed but never imported.
TEN = ("reach-weather,reach-notes,reach-http,reach-sql,reach-files,reach-shell,reach-notify,"
       "reach-preselect,reach-audit,reach-confirm")


def cli_times() -> dict[str, float]:
    res = {}
    runs_of = [("reach --version", ["--version"], {}),
               ("reach plugins (10 plugins loaded)", ["plugins"], {"REACH_PLUGINS": TEN}),
               ("reach plugins (every installed plugin)", ["plugins"], {})]
    for label, args, extra in runs_of:
        env = {**os.environ, **extra}
        runs = []
        for _ in range(7):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "reach_core.cli", *args], capture_output=True, check=False, env=env)
            runs.append(time.perf_counter() - t0)
        res[label] = statistics.median(runs)
    return res


async def main() -> None:
    reach = make_reach_bench()
    await reach.invoke("add", ARGS)

    async def full() -> None:
        res = await reach.invoke({"id": "c1", "name": "add", "arguments": ARGS})
        res.to_message()

    rr, r, base = await ratio(full)
    print(f"calls per round: {N}, rounds: {ROUNDS} (medians; each round paired with a baseline round)")
    print(f"baseline (json.loads + await + json.dumps): {base * 1e6:.2f} µs/call")
    print(f"reach full invoke path:                      {r * 1e6:.2f} µs/call  = {rr:.2f}x baseline "
          f"(target <= 2.0x)")
    for name, fn in (await peers()).items():
        pr, t, _ = await ratio(fn)
        print(f"{name:44s} {t * 1e6:.2f} µs/call  = {pr:.2f}x baseline")
    from importlib.metadata import entry_points

    n_plugins = len(list(entry_points(group="reach")))
    for name, t in cli_times().items():
        print(f"{name:44s} {t * 1000:.0f} ms wall, {n_plugins} plugins installed (target < 300 ms)")


if __name__ == "__main__":
    asyncio.run(main())
