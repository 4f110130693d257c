"""Benchmark of reach-dbos: what a durable run costs per step over the in-process loop,
in PostgreSQL round trips too, and how long a restarted process takes to resume a run.

    source /work/services.env   # REACH_TEST_POSTGRES_URL
    python bench/bench_durable.py [--runs 30] [--steps 4] [--quick]

Figures:
  in-process      ``reach.run`` with an instant in-process model and a trivial read tool, per run
  durable         the same run with ``durable=True`` (a DBOS workflow), per run
  overhead/step   (durable - in-process) / checkpointed steps; a step is one model call or one
                  turn of tool calls (target: <= 5 ms on this machine)
  round trips     SQL statements and commits DBOS sends to PostgreSQL per run and per step
  restart         a process killed (SIGKILL) in the middle of a run; a new one starts:
                  from the start of ``reach.start()`` (imports done) to the run's result, and
                  the whole new process including imports

Wall and CPU time are both shown: the machine may be shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
for name in ("reach-dbos",):
    sys.path.insert(0, str(ROOT / "plugins" / name))

from reach_core import Reach, connector  # noqa: E402
from reach_core.adapter import ModelRequest, ModelResponse, ModelToolCall, Usage  # noqa: E402


@connector(risk="read")
async def lookup(city: str) -> dict[str, str]:
    """Look a city up.

    Args:
        city: the city's name
    """
    return {"city": city, "country": "中国"}


class InstantModel:
    """Calls ``lookup`` for ``tool_steps`` steps, then answers; no network, no waiting."""

    name = "instant"

    def __init__(self, tool_steps: int, hang_at: int | None = None, marker: Path | None = None) -> None:
        self.tool_steps = tool_steps
        self.hang_at = hang_at
        self.marker = marker

    def describe(self) -> str:
        return "instant in-process model"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self.hang_at is not None and request.step == self.hang_at:
            if self.marker is not None:
                self.marker.write_text("hung")  # noqa: ASYNC240 - a marker for the parent, once
            await asyncio.sleep(3600)
        if request.step <= self.tool_steps:
            return ModelResponse(tool_calls=[ModelToolCall(f"c{request.step}", "lookup", '{"city": "北京"}')],
                                 usage=Usage(10, 5))
        return ModelResponse(text="done", usage=Usage(10, 2))


def make_reach(data_dir: Path, url: str, schema: str, synchronous_commit: bool = True) -> Reach:
    import reach_dbos.plugin

    reach = Reach({"reach": {"data_dir": str(data_dir)},
                   "plugins": {"reach-dbos": {"database_url": url, "schema": schema,
                                              "synchronous_commit": synchronous_commit}}},
                  plugins=[("reach-dbos", reach_dbos.plugin)])
    reach.register(lookup)
    return reach


class RoundTrips:
    """Counts statements and commits SQLAlchemy sends (DBOS talks to PostgreSQL through it), plus the
    single autocommit statements reach-dbos sends itself to checkpoint steps (``reach_dbos.checkpoint``)."""

    def __init__(self) -> None:
        from reach_dbos.checkpoint import STATS
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        self._own = STATS
        self._own_start = STATS.statements
        self.statements = 0
        self.commits = 0
        event.listen(Engine, "before_cursor_execute", self._stmt)
        event.listen(Engine, "commit", self._commit)

    def _stmt(self, *args: Any) -> None:
        self.statements += 1

    def _commit(self, *args: Any) -> None:
        self.commits += 1

    def own(self) -> int:
        return self._own.statements - self._own_start

    def total(self) -> int:
        return self.statements + self.commits + self.own()


async def per_step(
    url: str, schema: str, runs: int, tool_steps: int, synchronous_commit: bool = True
) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix="reach-bench-durable-"))
    reach = make_reach(data, url, schema, synchronous_commit)
    model = InstantModel(tool_steps)
    await reach.run("warm up", adapter=model, max_steps=tool_steps + 1)
    await reach.run("warm up", adapter=model, max_steps=tool_steps + 1, durable=True)
    steps = 2 * tool_steps + 1  # model calls + tool turns

    async def timed(durable: bool) -> tuple[list[float], float]:
        walls = []
        cpu0 = time.process_time()
        for _ in range(runs):
            t0 = time.perf_counter()
            result = await reach.run("北京 twice", adapter=model, max_steps=tool_steps + 1, durable=durable)
            walls.append((time.perf_counter() - t0) * 1000)
            assert result.outcome == "answered", result.error
        return walls, (time.process_time() - cpu0) * 1000 / runs

    plain, plain_cpu = await timed(False)
    trips = RoundTrips()
    durable, durable_cpu = await timed(True)
    await reach.aclose()
    med_plain, med_durable = statistics.median(plain), statistics.median(durable)
    return {
        "steps_per_run": steps,
        "in_process_ms": round(med_plain, 2), "in_process_cpu_ms": round(plain_cpu, 2),
        "durable_ms": round(med_durable, 2), "durable_cpu_ms": round(durable_cpu, 2),
        "overhead_per_step_ms": round((med_durable - med_plain) / steps, 2),
        "overhead_per_step_cpu_ms": round((durable_cpu - plain_cpu) / steps, 2),
        "round_trips_per_run": round(trips.total() / runs, 1),
        "round_trips_per_step": round(trips.total() / runs / steps, 2),
        "statements_per_run": round((trips.statements + trips.own()) / runs, 1),
        "reach_dbos_statements_per_run": round(trips.own() / runs, 1),
    }


def restart(url: str, schema: str) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="reach-bench-restart-"))
    cfg = {"work": str(work), "url": url, "schema": schema, "run_id": f"run_bench_{uuid.uuid4().hex[:8]}"}
    (work / "cfg.json").write_text(json.dumps(cfg))
    first = subprocess.Popen([sys.executable, __file__, "--child", "start", str(work / "cfg.json")])
    while not (work / "hung").exists():
        if first.poll() is not None:
            raise SystemExit(f"the first process exited ({first.returncode}) before hanging")
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--child", "resume", str(work / "cfg.json")], check=True)
    whole = (time.perf_counter() - t0) * 1000
    out = json.loads((work / "resumed.json").read_text())
    return {"start_to_resumed_ms": out["ms"], "process_with_imports_ms": round(whole, 1), "outcome": out["outcome"]}


async def child(mode: str, cfg: dict[str, Any]) -> None:
    work = Path(cfg["work"])
    reach = make_reach(work / "data", cfg["url"], cfg["schema"])
    if mode == "start":
        model = InstantModel(3, hang_at=3, marker=work / "hung")
        await reach.run("北京", adapter=model, max_steps=4, durable=True, run_id=cfg["run_id"])
        return
    # the resumed run asks the configured adapter; give it the instant one (no hang this time)
    import reach_dbos.runner as runner
    from reach_dbos.runner import shutdown, wait_for

    t0 = time.perf_counter()
    runner._STATE.adapters.clear()
    reach.runtime.providers.setdefault("adapter", {})
    from reach_core.reach import Provider

    reach.runtime.providers["adapter"]["instant"] = Provider("adapter", "instant", "bench", InstantModel(3))
    await reach.start()
    result = await wait_for(cfg["run_id"], 120)
    ms = (time.perf_counter() - t0) * 1000
    (work / "resumed.json").write_text(  # noqa: ASYNC240 - once, after timing
        json.dumps({"ms": round(ms, 1), "outcome": result.outcome}))
    await reach.aclose()
    shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=4, help="tool steps per run (model calls: steps + 1)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--async-commit", action="store_true",
                        help="[plugins.reach-dbos] synchronous_commit = false (no disk flush wait per checkpoint)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = os.environ.get("REACH_DBOS_DATABASE_URL") or os.environ.get("REACH_TEST_POSTGRES_URL")
    if args.child:
        asyncio.run(child(args.child[0], json.loads(Path(args.child[1]).read_text())))
        return
    if not url:
        print("bench_durable: not run: it needs PostgreSQL; set REACH_TEST_POSTGRES_URL "
              "(eval \"$(scripts/start-postgres.sh)\") or REACH_DBOS_DATABASE_URL", file=sys.stderr)
        return
    schema = f"reach_dbos_bench_{uuid.uuid4().hex[:8]}"
    try:
        figures = asyncio.run(per_step(url, schema, 5 if args.quick else args.runs, args.steps,
                                       not args.async_commit))
        figures["synchronous_commit"] = not args.async_commit
        from reach_dbos.runner import shutdown

        shutdown()
        figures["restart"] = restart(url, schema + "_r")
    finally:
        import psycopg

        with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
            for s in (schema, schema + "_r"):
                conn.execute(f'DROP SCHEMA IF EXISTS "{s}" CASCADE')
    print(json.dumps(figures, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
