"""The operation ledger: at most once per idempotency key, receipts, and crash recovery
with a real process killed by SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

from reach_core import Connector


def writer(name: str = "send_email", **attrs):
    sent: list[tuple[str, str | None]] = []

    class Send(Connector):
        description = "sends"
        risk = "write"
        input_schema = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}

        async def execute(self, params, ctx):
            sent.append((params["to"], ctx.idempotency_key))
            return {"sent_to": params["to"]}

    c = Send()
    c.name = name
    for k, v in attrs.items():
        setattr(c, k, v)
    return c, sent


async def test_same_key_returns_a_receipt_without_running(make_reach):
    tool, sent = writer()
    r = make_reach(tool)
    first = await r.invoke("send_email", {"to": "a@x.org"}, idempotency_key="order-17")
    again = await r.invoke("send_email", {"to": "a@x.org"}, idempotency_key="order-17")
    assert first.ok and again.ok
    assert again.content == first.content and again.meta["receipt"] is True
    assert sent == [("a@x.org", "order-17")]  # the key reached the connector


async def test_run_id_and_call_id_make_the_key(make_reach):
    tool, sent = writer()
    r = make_reach(tool)
    call = {"id": "call_9", "name": "send_email", "arguments": '{"to": "b@x.org"}'}
    await r.invoke(dict(call), run_id="run-5")
    second = await r.invoke(dict(call), run_id="run-5")
    assert second.meta.get("receipt") is True
    assert sent == [("b@x.org", "7:default:5:run-5:call_9")]  # agent, run id, call id (guard-rails.md)
    # a bare invoke has no key: no receipt, it runs each time
    await r.invoke("send_email", {"to": "c@x.org"})
    await r.invoke("send_email", {"to": "c@x.org"})
    assert [s for s in sent if s[0] == "c@x.org"] == [("c@x.org", None), ("c@x.org", None)]


async def test_same_key_other_arguments_is_refused(make_reach):
    tool, sent = writer()
    r = make_reach(tool)
    await r.invoke("send_email", {"to": "a@x.org"}, idempotency_key="k")
    res = await r.invoke("send_email", {"to": "evil@x.org"}, idempotency_key="k")
    assert res.error.code == "denied" and "different arguments" in res.error.message
    assert len(sent) == 1


async def test_same_key_same_arguments_in_another_order_is_a_receipt(make_reach):
    """A client that resends a call may serialise its arguments in another key order."""
    tool, sent = writer()
    r = make_reach(tool)
    first = await r.invoke({"id": "c1", "name": "send_email", "arguments": '{"to": "a@x.org", "cc": "b@x.org"}'},
                           idempotency_key="k2")
    again = await r.invoke({"id": "c2", "name": "send_email", "arguments": '{"cc": "b@x.org", "to": "a@x.org"}'},
                           idempotency_key="k2")
    assert first.ok and again.ok and again.meta["receipt"] is True
    assert len(sent) == 1


async def test_claim_is_on_disk_before_the_connector_runs(make_reach, tmp_path):
    seen: list[tuple] = []

    class Probe(Connector):
        name = "send_probe"
        description = "looks at the database from another connection while it runs"
        risk = "write"
        input_schema = {"type": "object", "properties": {"to": {"type": "string"}}}

        async def execute(self, params, ctx):
            conn = sqlite3.connect(tmp_path / "d" / "reach.db")
            seen.append(conn.execute("SELECT state FROM reach_ledger WHERE idem_key = 'durable'").fetchone())
            conn.close()
            return {"sent_to": params["to"]}

    r = make_reach(Probe(), data_dir=tmp_path / "d")
    assert (await r.invoke("send_probe", {"to": "a@x.org"}, idempotency_key="durable")).ok
    assert seen == [("running",)]
    await r.store.flush()
    conn = sqlite3.connect(tmp_path / "d" / "reach.db")
    row = conn.execute("SELECT state, result FROM reach_ledger WHERE idem_key = 'durable'").fetchone()
    assert row[0] == "done" and '"sent_to":"a@x.org"' in row[1].replace(" ", "")


CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from reach_core import Connector, Reach

    data, marker = sys.argv[1], Path(sys.argv[2])

    class Pay(Connector):
        name = "make_payment"
        description = "pays"
        risk = "write"
        timeout = 60
        input_schema = {"type": "object", "properties": {"amount": {"type": "integer"}}}

        def execute(self, params, ctx):
            tmp = marker.with_suffix(".tmp")         # the side effect has begun
            tmp.write_text(ctx.idempotency_key)
            tmp.rename(marker)                       # atomic: the parent never reads it half-written
            time.sleep(60)                           # ... and the process dies here
            return {"paid": params["amount"]}

    async def main():
        r = Reach({"reach": {"data_dir": data, "log_calls": False},
                   "connectors": {"make_payment": {"daily_budget": 10}}}, plugins=[])
        r.register(Pay())
        await r.invoke("make_payment", {"amount": 5}, idempotency_key="pay-1")

    asyncio.run(main())
    """
)


def _run_child_and_kill_it_mid_call(script, data, marker) -> None:
    """Start the child, wait until its payment has begun, then SIGKILL it."""
    proc = subprocess.Popen([sys.executable, str(script), str(data), str(marker)])
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert proc.poll() is None, "the child died before starting the payment"
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


async def test_sigkill_mid_call_leaves_unknown_rows_that_are_not_rerun(make_reach, tmp_path):
    data = tmp_path / "crash"
    marker = tmp_path / "started"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    _run_child_and_kill_it_mid_call(script, data, marker)
    assert marker.read_text() == "pay-1"

    # the store is consistent and holds the claim
    conn = sqlite3.connect(data / "reach.db")
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("SELECT state FROM reach_ledger WHERE idem_key = 'pay-1'").fetchone() == ("running",)
    assert conn.execute("SELECT used FROM reach_budget WHERE name = 'make_payment'").fetchone() == (1,)
    conn.close()

    # a new process: the row becomes unknown, the same key is not re-executed
    ran: list[int] = []

    class Pay(Connector):
        name = "make_payment"
        description = "pays"
        risk = "write"
        input_schema = {"type": "object", "properties": {"amount": {"type": "integer"}}}

        async def execute(self, params):
            ran.append(params["amount"])
            return {"paid": params["amount"]}

    r = make_reach(Pay(), data_dir=data, connectors={"make_payment": {"daily_budget": 10}})
    res = await r.invoke("make_payment", {"amount": 5}, idempotency_key="pay-1")
    assert res.error.code == "outcome_unknown"
    assert "will not be re-run" in res.error.message
    assert ran == []
    assert await r.store.fetchone("SELECT state FROM reach_ledger WHERE idem_key = 'pay-1'") == ("unknown",)
    # a new key is a new payment; the budget remembers the crashed call
    assert (await r.invoke("make_payment", {"amount": 6}, idempotency_key="pay-2")).ok
    assert r.runtime.guards.budgets.used("tool", "make_payment") == 2


async def test_reconcile_settles_unknown_rows_at_start(make_reach, tmp_path):
    data = tmp_path / "rec"
    tool, sent = writer("send_sms", timeout=0.1)

    async def slow(params, ctx):
        sent.append((params["to"], ctx.idempotency_key))
        import asyncio

        await asyncio.sleep(1)

    tool.execute = slow
    r1 = make_reach(tool, data_dir=data)
    res = await r1.invoke("send_sms", {"to": "+1"}, idempotency_key="sms-1")
    assert res.error.code == "outcome_unknown"
    await r1.aclose()

    checked: list[str] = []
    tool2, sent2 = writer("send_sms")

    async def reconcile(key):
        checked.append(key)
        return {"delivered": True}  # the provider says it went out

    tool2.reconcile = reconcile
    r2 = make_reach(tool2, data_dir=data)
    res = await r2.invoke("send_sms", {"to": "+1"}, idempotency_key="sms-1")
    assert checked == ["sms-1"]
    assert res.ok and res.meta["receipt"] is True and res.content == {"delivered": True}
    assert sent2 == []
