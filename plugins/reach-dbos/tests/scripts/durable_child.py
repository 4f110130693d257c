"""A reach process for the crash tests: starts durable runs (and may hang inside a step), or resumes them.

    python durable_child.py start  CONFIG.json  # start every run named in the config, never returns
    python durable_child.py resume CONFIG.json  # start reach (DBOS resumes the runs), write results
    python durable_child.py take   CONFIG.json  # `reach runs resume --executor ...` of CONFIG["take"]

The connectors count their real executions on their own side, in files that
outlive a kill -9: one line per execution in ``counts/<tool>``. With
``hang`` set, a connector whose run id is listed there, after counting, writes
``hung/<run_id>`` and sleeps: the parent kills the process then.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import reach_confirm.plugin
import reach_dbos.plugin
import reach_notes.plugin
import reach_openai.plugin

from reach_core import Connector, Reach

CHILD = __name__ == "__main__"  # the test process imports this module for its connectors
CFG = json.loads(Path(sys.argv[2]).read_text()) if CHILD else {}
WORK = Path(CFG["work"]) if CHILD else Path()
HANG = set(CFG.get("hang", [])) if CHILD and sys.argv[1] == "start" else set()


def _count(tool: str, ctx: Any, params: dict[str, Any], work: Path | None = None) -> None:
    line = json.dumps({"run_id": ctx.run_id, "key": ctx.idempotency_key, "args": params}) + "\n"
    fd = os.open((work or WORK) / "counts" / tool, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


async def _maybe_hang(ctx: Any, tool: str) -> None:
    if f"{ctx.run_id}:{tool}" in HANG:
        (WORK / "hung" / ctx.run_id).write_text(tool)
        await asyncio.sleep(3600)


class CountWrite(Connector):
    """A write with no way to check it afterwards: cut off, its outcome is unknown."""

    name = "count_write"
    description = "Record an amount. Use when asked to record."
    risk = "write"
    input_schema = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        _count(self.name, ctx, params)
        await _maybe_hang(ctx, self.name)
        return {"recorded": params["amount"]}


class KeyedWrite(Connector):
    """A write whose upstream keeps the idempotency key: ``reconcile(key)`` settles a cut-off call."""

    name = "keyed_write"
    description = "Transfer an amount. Use when asked to transfer."
    risk = "write"
    input_schema = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        _count(self.name, ctx, params)
        await _maybe_hang(ctx, self.name)
        return {"transferred": params["amount"]}

    def reconcile(self, key: str) -> Any:
        path = WORK / "counts" / self.name
        lines = path.read_text().splitlines() if path.exists() else []
        for line in lines:
            rec = json.loads(line)
            if rec["key"] == key:
                return {"transferred": rec["args"]["amount"], "reconciled": True}
        return None


class DangerWrite(Connector):
    """Needs a person's approval (dangerous): the run waits for it, durably."""

    name = "danger_write"
    description = "Delete an account. Use when asked to delete."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]}

    def __init__(self, work: Path | None = None) -> None:
        self.work = work or WORK

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        _count(self.name, ctx, params, self.work)
        return {"deleted": params["account"]}


class SlowRead(Connector):
    name = "slow_read"
    description = "Read a balance. Use to look a balance up."
    risk = "read"
    input_schema = {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        _count(self.name, ctx, params)
        await _maybe_hang(ctx, self.name)
        return {"account": params["account"], "balance": 42}


def make_reach() -> Reach:
    config: dict[str, Any] = {
        "reach": {"data_dir": str(WORK / "data")},
        "plugins": {
            "reach-openai": {"base_url": CFG["model_url"], "api_key": "scripted", "model": "scripted",
                             "max_retries": 0, "timeout": 3600},
            "reach-dbos": {"database_url": CFG["database_url"], "schema": CFG["schema"],
                           "executor_id": CFG.get("executor_id", "local"), "poll_interval": 0.05,
                           **{k: CFG[k] for k in ("takeover_after", "heartbeat") if k in CFG}},
            "reach-notes": {"path": str(WORK / "notes.jsonl")},
        },
        "connectors": {name: {"timeout": 3600} for name in ("count_write", "keyed_write", "slow_read")},
    }
    plugins = [("reach-openai", reach_openai.plugin), ("reach-dbos", reach_dbos.plugin),
               ("reach-notes", reach_notes.plugin), ("reach-confirm", reach_confirm.plugin)]
    reach = Reach(config, plugins=plugins)
    for conn in (CountWrite(), KeyedWrite(), SlowRead(), DangerWrite()):
        reach.register(conn)
    return reach


async def start() -> None:
    reach = make_reach()
    await reach.start()
    tasks = [asyncio.create_task(reach.run(run["question"], durable=True, run_id=run["run_id"], max_steps=6,
                                           confirm_wait=run.get("confirm_wait", 0.0)))
             for run in CFG["runs"]]
    (WORK / "started").write_text(str(os.getpid()))
    await asyncio.gather(*tasks)
    (WORK / "finished-without-kill").write_text("1")


async def resume() -> None:
    from reach_dbos.runner import shutdown, wait_for

    reach = make_reach()
    await reach.start()  # DBOS launches here and resumes this executor's unfinished runs
    out = {}
    for run in CFG["runs"]:
        result = await wait_for(run["run_id"], CFG.get("resume_timeout", 120))
        out[run["run_id"]] = result.to_dict()
    (WORK / f"results-{os.getpid()}.json").write_text(json.dumps(out, ensure_ascii=False))
    await reach.aclose()
    shutdown()


async def take() -> None:
    from reach_dbos.commands import _take_over

    results = await _take_over(make_reach(), CFG["take"], CFG.get("resume_timeout", 120))
    out = {rid: r.to_dict() for rid, r in results.items()}
    (WORK / f"results-{os.getpid()}.json").write_text(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run({"start": start, "resume": resume, "take": take}[sys.argv[1]]())
