"""reach's invoke path against a bare baseline and peer frameworks, in one run.

Baseline (1.0): ``json.loads`` of the arguments + a direct ``await add(a, b)`` +
``json.dumps`` of the result. reach's path, on a default ``Reach()`` (default
config, logs quiet): decode, validation, policy, one pre-invoke and one
post-invoke hook from a plugin, the deadline machinery, a ``ToolResult`` and its
JSON message. Rows:

* reach, core only, a read tool and a write tool (``plugins=[hooks]``);
* reach with every plugin installed in this venv (``plugins=["auto", hooks]``):
  the bench session installs every plugin of this repo, so under
  ``nox -s bench`` this is "every plugin of this repo" (reach-audit, reach-shape ...
  hook the path; plugins that need settings they were not given stay unloaded);
* peers doing the same trivial tool through their own tool-call path:
  pydantic-ai ``FunctionToolset`` (args validated from the JSON text by the tool's
  pydantic-core validator, then ``call_tool``), openai-agents ``on_invoke_tool``,
  mcp ``call_tool`` (FastMCP/MCPServer in process), langchain-core ``ainvoke``.
  Peers are bench-only dependencies (bench/requirements.txt); a missing one is
  reported and skipped.

Run: ``nox -s bench -- bench/bench_core.py`` or ``python bench/bench_core.py``.
Prints medians over rounds, each round paired with a baseline round, as ratios
to the baseline and as calls per second, in CPU time of the process (see
``_clock``). ``BENCH_N``/``BENCH_ROUNDS`` set the size, ``BENCH_CLI=0`` skips the
CLI start-up timings. Between rounds, untimed, reach-audit's pending records are
written and garbage is collected (``settle``), so each round starts alike; the
"audit writer" column says in how many timed rounds the writer committed records
(0 for the every-plugin row: a loop of awaits that never waits does not let it run;
every round for the "records written" row, which flushes every 1,000 calls).
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

# No logging set-up here: reach's per-call event is measured as a host that configured
# nothing gets it (the stdlib logger "reach" at its default level: not even built).
from reach_core import Reach, connector, hookimpl

N = int(os.environ.get("BENCH_N", "20000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
ARGS = '{"a": 1, "b": 2}'


async def add_impl(a: int, b: int) -> int:
    return a + b


#: CPU time of this process (every thread), not wall time: the machine is shared, and
#: wall time counts whatever else runs; ``BENCH_CLOCK=wall`` measures wall time instead.
_clock = time.perf_counter if os.environ.get("BENCH_CLOCK") == "wall" else time.process_time


async def _round(fn) -> float:
    t0 = _clock()
    for _ in range(N):
        await fn()
    return (_clock() - t0) / N


async def time_loop(fn) -> float:
    """Seconds per call (median over rounds)."""
    return statistics.median([await _round(fn) for _ in range(ROUNDS)])


async def ratio(fn, reach: Any = None, runs: list[int] | None = None) -> tuple[float, float, float]:
    """Median of per-round ratios, each round timing the baseline right before ``fn``.

    The machine is shared and noisy; pairing rounds keeps load changes out of the ratio.
    Before each pair, untimed (``settle``): ``reach``'s pending audit records are written
    and garbage is collected, so every round starts from the same state: no backlog
    carried from round to round, no collection of an earlier round's garbage falling in
    some rounds and not others. ``runs``, when given, gets the number of timed rounds
    of ``fn`` in which reach-audit's writer committed anything (what the row's time then
    includes besides the calls).
    """
    ratios, times, bases = [], [], []
    writer = _audit_writer(reach)
    ran = 0
    for _ in range(ROUNDS):
        await settle(reach)
        b = await _round(baseline)
        written = writer._written if writer is not None else 0
        t = await _round(fn)
        ran += writer is not None and writer._written != written
        ratios.append(t / b)
        times.append(t)
        bases.append(b)
    if runs is not None:
        runs.append(ran)
    return statistics.median(ratios), statistics.median(times), statistics.median(bases)


def _audit_writer(reach: Any) -> Any:
    """reach-audit's writer in ``reach`` (``None`` without one)."""
    if reach is None:
        return None
    try:
        from reach_audit.audit import get_audit
    except ImportError:
        return None
    audit = get_audit(reach)
    return audit.writer if audit is not None else None


async def settle(reach: Any = None) -> None:
    """Untimed, between rounds: write ``reach``'s pending audit records, collect garbage."""
    if _audit_writer(reach) is not None:
        import reach_audit

        await reach_audit.flush(reach)
    gc.collect()


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


def make_reach_bench(plugins: Any = None) -> Reach:
    """A default ``Reach()`` (default config; its data, such as the audit log, in a fresh
    temporary folder) with the bench's hook plugin, a read tool ``add`` and a write tool ``put``."""

    @connector(risk="read")
    async def add(a: int, b: int) -> int:
        """Add two integers. Use when asked for a sum."""
        return a + b

    @connector(risk="write")
    async def put(a: int, b: int) -> int:
        """Store the sum of two integers. Use when asked to record a sum."""
        return a + b

    data_dir = tempfile.mkdtemp(prefix="reach-bench-")
    atexit.register(shutil.rmtree, data_dir, True)
    reach = Reach({"reach": {"data_dir": data_dir}},
                  plugins=[HookPlugin()] if plugins is None else plugins)
    reach.register(add)
    reach.register(put)
    return reach


def reach_call(reach: Reach, name: str):
    async def call() -> None:
        res = await reach.invoke({"id": "c1", "name": name, "arguments": ARGS})
        res.to_message()

    return call


def with_audit_writes(reach: Reach, fn: Any) -> Any:
    """``fn``, and every 1,000 calls ``reach_audit.flush``: a loop of awaits that never
    waits never lets reach-audit's writer run, so without this the row above leaves out
    building, redacting, hashing and committing the calls' records (see bench_plugins.py)."""
    import reach_audit

    count = 0

    async def call() -> None:
        nonlocal count
        await fn()
        count += 1
        if count % 1000 == 0:
            await reach_audit.flush(reach)

    return call


async def peers() -> dict[str, Any]:
    """Each peer's tool-call path for the same trivial tool, as a coroutine function."""
    out: dict[str, Any] = {}
    try:
        from pydantic_ai import FunctionToolset, RunContext
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.usage import RunUsage

        toolset: Any = FunctionToolset()

        @toolset.tool_plain
        async def add_pa(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        rctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        pa_tool = (await toolset.get_tools(rctx))["add_pa"]

        async def pa() -> None:
            args = pa_tool.args_validator.validate_json(ARGS)
            json.dumps(await toolset.call_tool("add_pa", args, rctx, pa_tool))

        out["pydantic-ai FunctionToolset"] = pa
    except Exception as exc:  # noqa: BLE001 - a missing peer is reported, not fatal
        print(f"  (pydantic-ai not measured: {type(exc).__name__}: {exc})")
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

        out["openai-agents on_invoke_tool"] = oa
    except Exception as exc:  # noqa: BLE001
        print(f"  (openai-agents not measured: {type(exc).__name__}: {exc})")
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

        out["mcp call_tool (in process)"] = mc
    except Exception as exc:  # noqa: BLE001
        print(f"  (mcp not measured: {type(exc).__name__}: {exc})")
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
            subprocess.run([sys.executable, "-m", "reach_core", *args], capture_output=True, check=False, env=env)
            runs.append(time.perf_counter() - t0)
        res[label] = statistics.median(runs)
    return res


async def main() -> None:
    core = make_reach_bench()
    every = make_reach_bench(["auto", HookPlugin()])
    rows: list[tuple[str, Any, str, Any]] = [
        ("reach core, read tool", reach_call(core, "add"), "<= 1.5x", core),
        ("reach core, write tool", reach_call(core, "put"), "<= 1.5x", core),
        ("reach, every installed plugin, read tool", reach_call(every, "add"), "<= 2.0x", every),
    ]
    if "reach-audit" in [p.name for p in every.plugin_info if p.status == "loaded"]:
        rows.append(("  same, audit records written (flush/1000)", with_audit_writes(every, reach_call(every, "add")),
                     "<= 2.0x", every))
    for reach in (core, every):
        for name in ("add", "put"):
            res = await reach.invoke(name, ARGS)
            assert res.ok, res.to_dict()
    loaded = [p.name for p in every.plugin_info if p.status == "loaded"]
    # One-off start-up work plugins do in background threads (reach-shape loads its
    # tokenizer tables) is not a call's cost: process CPU time counts every thread, so
    # let it finish before any round is timed.
    for thread in threading.enumerate():
        if thread.name == "reach-shape-tokens":
            thread.join(timeout=60)
    # a peer may configure logging when imported (a root handler at INFO): put it back as
    # it was, so every row runs with logs quiet, as a host that configured nothing
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    rows += [(name, fn, "", None) for name, fn in (await peers()).items()]
    for h in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(h)
    root.setLevel(level)
    clock = "wall" if _clock is time.perf_counter else "process CPU"
    print(f"calls per round: {N}, rounds: {ROUNDS} (medians; each round paired with a baseline round; {clock} time)")
    print(f"every-plugin Reach loaded {len(loaded)} plugins: {', '.join(loaded)}")
    results = []
    base_times = []
    for name, fn, target, reach in rows:
        for _ in range(N // 10):  # warm up
            await fn()
        runs: list[int] = []
        pr, t, base = await ratio(fn, reach, runs)
        base_times.append(base)
        writer = f"{runs[0]}/{ROUNDS} rounds" if _audit_writer(reach) is not None else ""
        results.append((name, t, pr, target, writer))
    base = statistics.median(base_times)
    # "audit writer": in how many timed rounds reach-audit's writer committed records (the
    # row's time includes that work then); between rounds it writes what is pending, untimed
    print(f"{'path':44s} {'µs/call':>8s} {'calls/s':>9s} {'ratio':>6s}  {'target':7s}  audit writer")
    print(f"{'baseline (json.loads + await + json.dumps)':44s} {base * 1e6:8.2f} {1 / base:9.0f} {1.0:5.2f}x")
    for name, t, pr, target, writer in results:
        print(f"{name:44s} {t * 1e6:8.2f} {1 / t:9.0f} {pr:5.2f}x  {target:7s}  {writer}")
    if os.environ.get("BENCH_CLI", "1") == "0":
        return
    from importlib.metadata import entry_points

    n_plugins = len(list(entry_points(group="reach")))
    for name, t in cli_times().items():
        target = "<= 50 ms" if "--version" in name else "<= 150 ms"
        print(f"{name:44s} {t * 1000:.0f} ms wall, {n_plugins} plugins installed (target {target})")


if __name__ == "__main__":
    asyncio.run(main())
