"""kill -9 while a tool turn holds a request for approval; a person approves; the run resumes.

A turn with a call that needs a person and a slow read: the request is made at once,
but the turn (one checkpointed step) is not recorded until the read returns. The
process is killed in between, a person approves the request through another instance
(the approved call runs, once), and a second process resumes the run: the turn runs
again with the same run id and call ids. The call that needs a person used to become a
second request (a second "approve" would run the write again) and the run went on as if
nothing had been approved; its repeat now gets the approved execution's receipt
(reach-confirm matches the call's idempotency key), and the run goes on with it.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from reach_openai.scripted import Answer, Call, ScriptedModelServer, ToolCalls
from test_crash import _approve, _child, _counts, _pending, _wait

RUN = "run_crash_approved_in_turn"


@pytest.mark.parametrize("order", ["danger first", "read first"])
def test_a_turn_replayed_after_its_call_was_approved_gets_the_receipt(
    tmp_path: Path, pg_url: str, dbos_schema: str, order: str
) -> None:
    work = tmp_path
    for d in ("counts", "hung", "data"):
        (work / d).mkdir()
    calls = [Call("danger_write", {"account": "F-1"}), Call("slow_read", {"account": "F"})]
    if order == "read first":
        calls.reverse()
    script = {"[F]": [ToolCalls(calls), Answer("F deleted {danger_write[deleted]}")]}
    with ScriptedModelServer(script) as server:
        cfg = work / "cfg.json"
        cfg.write_text(json.dumps({
            "work": str(work), "model_url": server.url, "database_url": pg_url, "schema": dbos_schema,
            "runs": [{"run_id": RUN, "question": "[F] please do it"}], "hang": [f"{RUN}:slow_read"],
        }))
        first = _child("start", cfg)
        try:
            _wait(lambda: (work / "hung" / RUN).exists() and bool(_pending(work)), "the request and the hung read",
                  first)
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        finally:
            if first.poll() is None:
                first.kill()
        [cid] = _pending(work)
        approved = asyncio.run(_approve(work, cid))  # a person approves while no instance runs
        assert approved.ok, approved
        assert _counts(work, "danger_write") == Counter({RUN: 1})

        second = _child("resume", cfg)
        out, err = second.communicate(timeout=240)
        assert second.returncode == 0, err.decode()[-4000:]
        result = json.loads(next(work.glob("results-*.json")).read_text())[RUN]

    assert _counts(work, "danger_write") == Counter({RUN: 1})  # the approved write ran once, in all
    with sqlite3.connect(work / "data" / "reach.db") as conn:
        assert conn.execute("SELECT id, status FROM confirmations").fetchall() == [(cid, "executed")]
    danger = next(r for r in result["steps"][0]["results"] if r["name"] == "danger_write")
    assert danger["ok"] is True and danger["content"] == {"deleted": "F-1"}, danger
    assert danger["meta"]["confirmation_id"] == cid
    assert result["outcome"] == "answered" and result["text"] == "F deleted F-1"
