"""kill -9 in the middle of durable runs, at each kind of step; a new process finishes them.

One child process starts several runs at once, each of which stops (hangs) at a
different kind of step; the parent kills it with SIGKILL once every run hangs,
then starts a second process, which resumes all of them. Counts are taken where
the effects happen: the scripted model server counts model calls per step, the
connectors count their executions in files, reach-notes keeps its notes file.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from reach_openai.scripted import Answer, Call, ScriptedModelServer, ToolCalls

CHILD = Path(__file__).parent / "scripts" / "durable_child.py"

#: Question marker -> (run id, script). The model hangs (delay) in run A's second step.
SCRIPTS: dict[str, list[Any]] = {
    "[A]": [ToolCalls([Call("append_note", {"content": "A: the note"})]),
            Answer("A done", delay=3600)],
    "[B]": [ToolCalls([Call("count_write", {"amount": 1})]),
            ToolCalls([Call("slow_read", {"account": "B"})]),
            Answer("B balance {slow_read[balance]}")],
    "[C]": [ToolCalls([Call("slow_read", {"account": "C"})]),
            ToolCalls([Call("count_write", {"amount": 3})]),
            Answer(lambda ctx: "C " + json.dumps(ctx.results.get("count_write"), ensure_ascii=False))],
    "[D]": [ToolCalls([Call("keyed_write", {"amount": 4})]),
            Answer("D transferred {keyed_write[transferred]}")],
    "[E]": [ToolCalls([Call("danger_write", {"account": "E-1"})]),
            Answer("E deleted {danger_write[deleted]}")],
}
HANGS = {"[B]": "slow_read", "[C]": "count_write", "[D]": "keyed_write"}


def _run_id(marker: str) -> str:
    return "run_crash_" + marker.strip("[]").lower()


def _wait(pred: Any, what: str, proc: subprocess.Popen[bytes] | None, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the child exited ({proc.returncode}) before {what}: "
                                 f"{proc.stderr.read().decode()[-3000:] if proc.stderr else ''}")
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _executors(pg_url: str, schema: str) -> dict[str, str]:
    import psycopg

    with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://", 1)) as conn:
        rows = conn.execute(f'SELECT workflow_uuid, executor_id FROM "{schema}".workflow_status').fetchall()
    return {r[0]: r[1] for r in rows}


def _child(mode: str, cfg: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, str(CHILD), mode, str(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)


def _counts(work: Path, tool: str) -> Counter[str]:
    path = work / "counts" / tool
    lines = path.read_text().splitlines() if path.exists() else []
    return Counter(json.loads(line)["run_id"] for line in lines)


def _model_calls(server: ScriptedModelServer, marker: str) -> Counter[int]:
    """Model requests per step (number of assistant messages already in the request) for one run."""
    out: Counter[int] = Counter()
    for body in server.requests:
        first_user = next(m for m in body["messages"] if m["role"] == "user")
        if marker in str(first_user["content"]):
            out[sum(1 for m in body["messages"] if m["role"] == "assistant")] += 1
    return out


def _pending(work: Path) -> list[str]:
    """Ids of the approval requests waiting in the confirmation store the runs share."""
    import sqlite3

    db = work / "data" / "reach.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            rows = conn.execute("SELECT id FROM confirmations WHERE status = 'pending'").fetchall()
        except sqlite3.OperationalError:
            return []
    return [r[0] for r in rows]


async def _approve(work: Path, cid: str) -> Any:
    """A person approves through another reach instance (this process, with the same store)."""
    import reach_confirm.plugin
    from reach_confirm.plugin import queue_for

    from reach_core import Reach

    sys.path.insert(0, str(CHILD.parent))
    try:
        from durable_child import DangerWrite
    finally:
        sys.path.remove(str(CHILD.parent))
    reach = Reach({"reach": {"data_dir": str(work / "data")}}, plugins=[("reach-confirm", reach_confirm.plugin)])
    reach.register(DangerWrite(work))
    try:
        return await queue_for(reach).approve(cid, by="ops")
    finally:
        await reach.aclose()


def test_kill_9_at_each_kind_of_step_then_resume(tmp_path: Path, pg_url: str, dbos_schema: str) -> None:
    work = tmp_path
    for d in ("counts", "hung", "data"):
        (work / d).mkdir()
    script = {m: list(s) for m, s in SCRIPTS.items()}
    with ScriptedModelServer(script) as server:
        runs = [{"run_id": _run_id(m), "question": f"{m} please do it", "confirm_wait": 3600.0 if m == "[E]" else 0.0}
                for m in SCRIPTS]
        cfg = work / "cfg.json"
        cfg.write_text(json.dumps({
            "work": str(work), "model_url": server.url, "database_url": pg_url, "schema": dbos_schema,
            "runs": runs, "hang": [f"{_run_id(m)}:{tool}" for m, tool in HANGS.items()],
        }))
        first = _child("start", cfg)
        try:
            # every run stopped where it should: B in a read, C in a write, D in a keyed write, A in the model
            _wait(lambda: all((work / "hung" / _run_id(m)).exists() for m in HANGS), "the hung tool calls", first)
            _wait(lambda: _model_calls(server, "[A]")[1] == 1, "run A's second model call", first)
            _wait(lambda: bool(_pending(work)), "run E's request for approval", first)
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        finally:
            if first.poll() is None:
                first.kill()
        assert not (work / "finished-without-kill").exists()
        # the person approves while no instance runs: the approved call runs once, here
        approved = asyncio.run(_approve(work, _pending(work)[0]))
        assert approved.ok, approved
        # the model answers at once from now on (a restarted process asks again for the step in flight)
        server.script = {**script, "[A]": [script["[A]"][0], Answer("A done")]}

        second = _child("resume", cfg)
        out, err = second.communicate(timeout=240)
        assert second.returncode == 0, err.decode()[-4000:]
        assert out == b"", "nothing may print to stdout"
        results = json.loads(next(work.glob("results-*.json")).read_text())

        # A: the finished write (a note) is not repeated; only the model call in flight is asked again
        a = results[_run_id("[A]")]
        assert a["outcome"] == "answered" and a["text"] == "A done"
        notes = [json.loads(line) for line in (work / "notes.jsonl").read_text().splitlines()]
        assert [n["content"] for n in notes] == ["A: the note"]
        assert _model_calls(server, "[A]") == Counter({0: 1, 1: 2})

        # B: the write of step 1 ran once; the read in flight ran again (reads may)
        b = results[_run_id("[B]")]
        assert b["outcome"] == "answered" and b["text"] == "B balance 42"
        assert _counts(work, "count_write")[_run_id("[B]")] == 1
        assert _counts(work, "slow_read")[_run_id("[B]")] == 2
        assert _model_calls(server, "[B]") == Counter({0: 1, 1: 1, 2: 1})

        # C: the write in flight, with no way to check it, is not run again: outcome_unknown to the model
        c = results[_run_id("[C]")]
        assert c["outcome"] == "answered"
        assert _counts(work, "count_write")[_run_id("[C]")] == 1
        assert _counts(work, "slow_read")[_run_id("[C]")] == 1
        c_write = c["steps"][1]["results"][0]
        assert c_write["ok"] is False and c_write["error"]["code"] == "outcome_unknown"
        assert _model_calls(server, "[C]") == Counter({0: 1, 1: 1, 2: 1})

        # D: the keyed write in flight is settled by its connector's reconcile(key): one execution, a receipt
        d = results[_run_id("[D]")]
        assert d["outcome"] == "answered" and d["text"] == "D transferred 4"
        assert _counts(work, "keyed_write")[_run_id("[D]")] == 1
        d_write = d["steps"][0]["results"][0]
        assert d_write["ok"] is True and d_write["content"]["reconciled"] is True
        assert _model_calls(server, "[D]") == Counter({0: 1, 1: 1})

        # E: waited for a person across the crash; the approved call ran once, the run went on
        e = results[_run_id("[E]")]
        assert e["outcome"] == "answered" and e["text"] == "E deleted E-1"
        assert _counts(work, "danger_write") == Counter({_run_id("[E]"): 1})
        e_result = e["steps"][0]["results"][0]
        assert e_result["ok"] is True and e_result["meta"]["approved"] is True
        assert _model_calls(server, "[E]") == Counter({0: 1, 1: 1})


def test_two_instances_racing_to_resume_the_same_runs_execute_each_write_once(
    tmp_path: Path, pg_url: str, dbos_schema: str
) -> None:
    work = tmp_path
    for d in ("counts", "hung", "data"):
        (work / d).mkdir()
    markers = ["[B]", "[C]"]
    script = {m: list(SCRIPTS[m]) for m in markers}
    with ScriptedModelServer(script) as server:
        cfg = work / "cfg.json"
        cfg.write_text(json.dumps({
            "work": str(work), "model_url": server.url, "database_url": pg_url, "schema": dbos_schema,
            "runs": [{"run_id": _run_id(m), "question": f"{m} please do it"} for m in markers],
            "hang": [f"{_run_id(m)}:{HANGS[m]}" for m in markers],
        }))
        first = _child("start", cfg)
        try:
            _wait(lambda: all((work / "hung" / _run_id(m)).exists() for m in markers), "the hung tool calls", first)
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        finally:
            if first.poll() is None:
                first.kill()
        # two instances of the same executor start at once: both resume both runs
        racers = [_child("resume", cfg), _child("resume", cfg)]
        for proc in racers:
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err.decode()[-4000:]
        outcomes = [json.loads(p.read_text()) for p in sorted(work.glob("results-*.json"))]
        assert len(outcomes) == 2
        for marker in markers:
            seen = {json.dumps(o[_run_id(marker)]["text"]) for o in outcomes}
            assert len(seen) == 1, f"the two instances disagree on run {marker}: {seen}"  # one recorded result
            assert all(o[_run_id(marker)]["outcome"] == "answered" for o in outcomes)
        # one execution of each write, whoever won
        assert _counts(work, "count_write") == Counter({_run_id("[B]"): 1, _run_id("[C]"): 1})
        c = outcomes[0][_run_id("[C]")]
        assert c["steps"][1]["results"][0]["error"]["code"] == "outcome_unknown"
        assert _model_calls(server, "[B]")[2] >= 1 and _model_calls(server, "[C]")[2] >= 1


@pytest.mark.parametrize("how", ["heartbeat", "by-hand"])
def test_the_runs_of_a_killed_instance_are_taken_over_by_an_instance_of_another_name(
    tmp_path: Path, pg_url: str, dbos_schema: str, how: str
) -> None:
    """pod-a dies (kill -9) mid-run; pod-b, another executor id, finishes its runs: by itself once pod-a's
    heartbeat is older than takeover_after, or when told (`reach runs resume --executor pod-a`)."""
    work = tmp_path
    for d in ("counts", "hung", "data"):
        (work / d).mkdir()
    markers = ["[B]", "[D]"]
    script = {m: list(SCRIPTS[m]) for m in markers}
    auto = {"takeover_after": 1.5, "heartbeat": 0.5} if how == "heartbeat" else {}
    base = {"work": str(work), "database_url": pg_url, "schema": dbos_schema,
            "runs": [{"run_id": _run_id(m), "question": f"{m} please do it"} for m in markers],
            "hang": [f"{_run_id(m)}:{HANGS[m]}" for m in markers]}
    with ScriptedModelServer(script) as server:
        cfg_a, cfg_b = work / "cfg-a.json", work / "cfg-b.json"
        cfg_a.write_text(json.dumps({**base, **auto, "model_url": server.url, "executor_id": "pod-a"}))
        cfg_b.write_text(json.dumps({**base, **auto, "model_url": server.url, "executor_id": "pod-b",
                                     "take": ["pod-a"]}))
        first = _child("start", cfg_a)
        try:
            _wait(lambda: all((work / "hung" / _run_id(m)).exists() for m in markers), "the hung tool calls", first)
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        finally:
            if first.poll() is None:
                first.kill()
        owners = _executors(pg_url, dbos_schema)
        assert {owners[_run_id(m)] for m in markers} == {"pod-a"}

        second = _child("resume" if how == "heartbeat" else "take", cfg_b)
        out, err = second.communicate(timeout=240)
        assert second.returncode == 0, err.decode()[-4000:]
        assert out == b""
        results = json.loads(next(work.glob("results-*.json")).read_text())
        assert set(results) == {_run_id(m) for m in markers}
        assert results[_run_id("[B]")]["outcome"] == "answered" and results[_run_id("[B]")]["text"] == "B balance 42"
        assert results[_run_id("[D]")]["text"] == "D transferred 4"
        # each write once (counted by the connectors), each finished model step not asked again
        assert _counts(work, "count_write") == Counter({_run_id("[B]"): 1})
        assert _counts(work, "keyed_write") == Counter({_run_id("[D]"): 1})
        assert _model_calls(server, "[B]") == Counter({0: 1, 1: 1, 2: 1})
        assert _model_calls(server, "[D]") == Counter({0: 1, 1: 1})
        owners = _executors(pg_url, dbos_schema)
        assert {owners[_run_id(m)] for m in markers} == {"pod-b"}
