"""Every invocation becomes one audit record with the facts an auditor asks for."""

from __future__ import annotations

import json
import sqlite3

import pytest
import reach_audit
from conftest import wait_until

from reach_core import hookimpl


@pytest.fixture
def records(db_rows):
    return lambda: [json.loads(r[1]) for r in db_rows()]


def captures_of(pending: list) -> list[tuple]:
    """The writer's pending values cut into one tuple per capture: a call hook's capture is
    ``FLAT_CALL`` values in a row, the first its time (a float); anything else one item."""
    from reach_audit.record import FLAT_CALL

    out, i = [], 0
    while i < len(pending):
        size = FLAT_CALL if type(pending[i]) is float else 1
        out.append(tuple(pending[i : i + size]))
        i += size
    return out


async def test_success_record_has_the_fields(make_reach, records, db_rows):
    reach = make_reach()
    result = await reach.invoke({"id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'}, agent="planner")
    assert result.ok
    await reach_audit.flush(reach)
    (rec,) = records()
    assert rec["kind"] == "call"
    assert rec["call_id"] == "c1"
    assert rec["tool"] == "add"
    assert rec["agent"] == "planner"
    assert rec["plugin"] == "user"
    assert rec["risk"] == "read"
    assert rec["status"] == "ok"
    assert rec["attempts"] == 1
    assert rec["args"] == {"a": 2, "b": 3}
    assert rec["result"] == 5
    assert rec["trace_id"] == result.trace_id
    assert rec["elapsed_ms"] > 0
    assert rec["ts"].endswith("Z") and rec["started"] <= rec["ts"]


async def test_failures_denials_and_unknown_tools_are_recorded(make_reach, records, db_rows):
    reach = make_reach()
    await reach.invoke("refuse", {"reason": "closed"})
    await reach.invoke("nope", {})
    await reach.invoke("add", {"a": "x", "b": 1})
    await reach.invoke({"id": "bad", "name": "add", "arguments": "{not json"})
    await reach.invoke("wipe", {"path": "/"})  # dangerous, no confirmer: denied
    await reach_audit.flush(reach)
    by_tool = {(r["tool"], r["status"]): r for r in records()}
    assert by_tool[("refuse", "execution_failed")]["error"]["message"].startswith("refused")
    assert ("nope", "unknown_tool") in by_tool
    assert ("add", "invalid_arguments") in by_tool
    assert by_tool[("add", "invalid_json")]["args"] == "{not json"
    denied = by_tool[("wipe", "denied")]
    assert denied["risk"] == "dangerous"
    assert "fix" in denied  # the config line that would allow it


async def test_retries_and_fallback_are_visible(make_reach, records, db_rows):
    reach = make_reach()
    assert (await reach.invoke("flaky", {})).ok
    fb = await reach.invoke("down", {})
    assert fb.ok and fb.content == {"cached": True}
    await reach_audit.flush(reach)
    recs = {r["tool"]: r for r in records()}
    assert recs["flaky"]["attempts"] == 2
    assert recs["down"]["fallback"] is True
    assert recs["down"]["error_code"] == "upstream_unavailable"


async def test_write_calls_carry_their_idempotency_key_and_run(make_reach, records, db_rows):
    reach = make_reach()
    await reach.invoke({"id": "c9", "name": "send", "arguments": {"to": "bob", "text": "hi"}}, run_id="run-1")
    await reach_audit.flush(reach)
    (rec,) = records()
    assert rec["run_id"] == "run-1"
    assert rec["idempotency_key"] == "7:default:5:run-1:c9"  # agent, run id and call id (guard.ledger.derived_key)


async def test_large_arguments_and_results_are_capped(make_reach, records, db_rows):
    reach = make_reach(summary_chars=64)
    await reach.invoke("login", {"user": "u", "password": "p", "note": "x" * 5000})
    await reach_audit.flush(reach)
    (rec,) = records()
    assert rec["args"]["truncated"] is True
    assert rec["args"]["chars"] > 5000
    assert len(rec["args"]["preview"]) == 64
    assert len(db_rows()[0][1]) < 1000


async def test_disabled_audit_writes_nothing(make_reach, db_rows, data_dir):
    reach = make_reach(enabled=False)
    assert (await reach.invoke("add", {"a": 1, "b": 1})).ok
    await reach_audit.flush(reach)
    assert reach_audit.get_audit(reach) is None
    assert not (data_dir / "reach.db").exists() or not db_rows(
        "SELECT name FROM sqlite_master WHERE name = 'audit_log'"
    )


async def test_records_are_written_in_the_background_within_the_interval(make_reach, records, db_rows):
    """No flush(): the writer task commits on its own, after waiting the interval for more
    records. Waited for as a condition (a loaded host may be slow), never timed."""
    reach = make_reach(flush_interval_ms=20)
    writer = reach_audit.get_audit(reach).writer
    assert writer.interval == 0.02
    for i in range(50):
        await reach.invoke("add", {"a": i, "b": 1})
    assert not writer._waiters  # nobody asked for a flush

    def committed() -> int:
        try:
            return len(db_rows())
        except sqlite3.OperationalError:  # no audit_log table yet: the writer has not run
            return 0

    await wait_until(lambda: committed() == 50, "the background writer committing 50 records")
    assert [r["result"] for r in records()] == [i + 1 for i in range(50)]
    assert (await reach_audit.verify(reach)).ok


async def test_concurrent_calls_keep_one_linear_chain(make_reach, records, db_rows):
    reach = make_reach()
    calls = [{"id": f"c{i}", "name": "add", "arguments": {"a": i, "b": i}} for i in range(300)]
    results = await reach.invoke_many(calls)
    assert all(r.ok for r in results)
    report = await reach_audit.verify(reach)
    assert report.ok and report.checked == 300
    assert {json.loads(r[1])["call_id"] for r in db_rows()} == {f"c{i}" for i in range(300)}


class Approver:
    """A stand-in confirmer: approves dangerous calls and reports the decision like reach-confirm."""

    REACH_PLUGIN_NAME = "test-approver"
    REACH_HOOK_PRIORITY = {"reach_pre_invoke": 50}

    @hookimpl
    async def reach_pre_invoke(self, call, tool, ctx):
        if ctx.needs_confirmation:
            ctx.approved = True
            ctx.confirm_reason = "approved by alice"
            event = {"kind": "approved", "confirmation_id": "cf-1", "tool": tool.name, "agent": ctx.agent,
                     "summary": f"wipe {call.arguments['path']} (token=abc123secret)", "by": "alice",
                     "reason": "routine"}
            await ctx.reach.notify("reach_confirmation", event=event, ctx=ctx, reach=ctx.reach)


async def test_confirmation_decisions_are_recorded(make_reach, records):
    reach = make_reach(plugins=(Approver(),))
    result = await reach.invoke({"id": "w1", "name": "wipe", "arguments": {"path": "/tmp/x"}}, agent="ops")
    assert result.ok
    await reach_audit.flush(reach)
    decision, call = records()
    assert decision["kind"] == "confirmation" and decision["status"] == "approved"
    assert (decision["confirmation_id"], decision["by"], decision["call_id"]) == ("cf-1", "alice", "w1")
    assert "abc123secret" not in decision["summary"]
    assert call["kind"] == "call" and call["status"] == "ok"
    assert call["confirmation"] == {"required": True, "approved": True, "reason": "approved by alice"}


async def test_a_denied_confirmation_is_recorded_as_required_not_approved(make_reach, records):
    reach = make_reach()  # no confirmer installed: dangerous calls are denied
    await reach.invoke("wipe", {"path": "/"})
    await reach_audit.flush(reach)
    (rec,) = records()
    assert rec["status"] == "denied"
    assert rec["confirmation"]["required"] is True and rec["confirmation"]["approved"] is False


async def test_sync_durability_means_on_disk_when_invoke_returns(make_reach, db_rows):
    reach = make_reach(durability="sync")
    for i in range(5):
        await reach.invoke({"id": f"s{i}", "name": "add", "arguments": {"a": i, "b": 0}})
        assert [json.loads(r[1])["call_id"] for r in db_rows()][-1] == f"s{i}"  # no flush() needed


async def test_a_failed_write_keeps_the_records_and_flush_says_so(make_reach, records):
    reach = make_reach()
    await reach.invoke({"id": "before", "name": "add", "arguments": {"a": 1, "b": 1}})
    await reach_audit.flush(reach)
    audit = reach_audit.get_audit(reach)
    real = audit.writer.store.transaction
    failures = []

    async def failing_once(fn):
        if not failures:
            failures.append(1)
            raise OSError("disk full")
        return await real(fn)

    audit.writer.store = type("FlakyStore", (), {"transaction": staticmethod(failing_once),
                                                 "migrate": audit.store.migrate})()
    await reach.invoke({"id": "during", "name": "add", "arguments": {"a": 2, "b": 2}})
    with pytest.raises(RuntimeError, match="disk full"):
        await reach_audit.flush(reach)  # not acknowledged: the caller learns it
    await reach_audit.flush(reach)  # the writer retried; now it is durable
    assert [r["call_id"] for r in records()] == ["before", "during"]
    assert (await reach_audit.verify(reach)).ok


@pytest.mark.parametrize("held_for", [0.05, 0.3, 1.2])
async def test_flush_waits_out_another_process_holding_the_database(make_reach, records, data_dir, held_for):
    """A CLI or a second server writing the same log can hold SQLite's write lock past
    busy_timeout (or SQLite can refuse at once, while it recovers a crashed writer's log):
    that is contention, not a broken disk, so flush() waits and then acknowledges."""
    import asyncio
    import sqlite3

    reach = make_reach()
    await reach.invoke({"id": "before", "name": "add", "arguments": {"a": 1, "b": 1}})
    await reach_audit.flush(reach)
    store = reach_audit.get_audit(reach).writer.store
    await store.execute("PRAGMA busy_timeout = 10")  # give up on the lock after 10 ms, as if it had been long
    other = sqlite3.connect(data_dir / "reach.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        await reach.invoke({"id": "during", "name": "add", "arguments": {"a": 2, "b": 2}})
        flushing = asyncio.ensure_future(reach_audit.flush(reach))
        await asyncio.sleep(held_for)
        assert not flushing.done()  # neither acknowledged nor failed while the lock is held
    finally:
        other.execute("ROLLBACK")
        other.close()
    await asyncio.wait_for(flushing, 10)
    assert [r["call_id"] for r in records()] == ["before", "during"]
    assert (await reach_audit.verify(reach)).ok


def test_the_entry_point_module_imports_no_audit_machinery():
    """``reach plugins`` imports the entry-point module: it must stay light."""
    import subprocess
    import sys

    code = ("import sys, reach_audit.plugin; "
            "print(sorted(m for m in ('structlog', 'pydantic', 'reach_audit.audit', 'reach_core.reach') "
            "if m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"


async def test_no_worker_thread_after_a_commit_when_nothing_listens(make_reach, records):
    """Events go to the stdlib logger ``reach.audit`` by default: while nobody listens at
    INFO (and no span is wanted), a committed batch costs no worker-thread hop."""
    import logging

    from reach_audit import get_audit

    reach = make_reach(log="logging", otel=False)
    await reach.start()
    audit = get_audit(reach)
    emitted: list[int] = []
    audit.writer.on_written = lambda items, rows: emitted.append(len(rows))
    await reach.invoke("add", {"a": 1, "b": 2})
    await reach_audit.flush(reach)
    assert emitted == [] and len(records()) == 1
    logger = logging.getLogger("reach.audit")
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        await reach.invoke("add", {"a": 2, "b": 2})
        await reach_audit.flush(reach)
    finally:
        logger.setLevel(level)
    assert emitted == [1] and len(records()) == 2


async def test_a_capture_keeps_the_calls_fields_not_the_call(make_reach, records):
    """Until the writer runs, a capture holds what its record needs and no more: the
    core's ToolCall and ToolResult are copied (their fields), not kept, so a pending
    record costs the garbage collector no object of its own. Its record is unchanged."""
    from reach_audit import get_audit

    from reach_core import ToolCall, ToolResult

    reach = make_reach()
    calls = [
        ({"id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'}, "ok"),
        ({"id": "c2", "name": "login", "arguments": {"user": "ann", "password": "hunter2-secret"}}, "ok"),
        ({"id": "c3", "name": "nope", "arguments": "{}"}, "unknown_tool"),
        ({"id": "c4", "name": "add", "arguments": "{not json"}, "invalid_json"),
        ({"id": "c5", "name": "wipe", "arguments": {"path": "/"}}, "denied"),
        ({"name": "add", "arguments": {"a": 1, "b": 1}}, "ok"),  # the core makes its id up
    ]
    results = [await reach.invoke(call) for call, _ in calls]
    pending = captures_of(get_audit(reach).writer._take(100)[0])
    assert len(pending) == len(calls)
    for capture in pending:  # neither object: their fields (each kept object costs collections)
        assert not any(isinstance(x, ToolCall | ToolResult) for x in capture)
    await reach_audit.flush(reach)
    recs = records()
    assert [r["status"] for r in recs] == [status for _, status in calls]
    assert [r["call_id"] for r in recs] == [res.call_id for res in results]
    assert results[-1].call_id.startswith("call_")
    assert [r["tool"] for r in recs] == ["add", "login", "nope", "add", "wipe", "add"]
    assert recs[0]["args"] == {"a": 2, "b": 3} and recs[5]["args"] == {"a": 1, "b": 1}
    assert recs[1]["args"]["user"] == "ann" and "hunter2-secret" not in json.dumps(recs[1])


async def test_a_usual_capture_makes_nothing_the_garbage_collector_tracks(make_reach, records):
    """A flat argument object, a plain result and its meta are not tracked by CPython's
    collector; the capture keeps them and the call's strings in the writer's pending list
    itself, not in a container of its own, so pending captures add no tracked object: the
    collections the calls still trigger (allocating a dict counts) find none of them to
    walk or carry into older generations. The records are the same."""
    import gc

    from reach_audit import get_audit

    reach = make_reach()
    writer = get_audit(reach).writer
    writer.interval = 3600.0  # the captures stay pending until flush(), however slow the calls (a loaded host)
    for args in ('{"a": 2, "b": 3}', {"a": 1, "b": 1}) * 50:
        await reach.invoke({"id": "c1", "name": "add", "arguments": args})
    assert writer.pending == 100
    # all that reach-audit keeps of the calls: the values in the list, none tracked but the tool
    # (and the caller's OpenTelemetry context, the last value, kept when a tracer provider is set)
    captures = captures_of(writer._take(1000)[0])
    assert len(writer._pending) == 100 * len(captures[0]) and len(captures) == 100
    assert not [v for capture in captures for v in capture[:-1] if gc.is_tracked(v) and v is not reach.tool("add")]
    await reach_audit.flush(reach)
    recs = records()
    assert [r["result"] for r in recs] == [5, 2] * 50
    assert {(r["tool"], r["plugin"], r["risk"], r["status"]) for r in recs} == {("add", "user", "read", "ok")}


async def test_the_records_time_is_the_calls_up_to_the_audit_hook(make_reach, records):
    """``elapsed_ms`` is read when reach-audit's hook runs, from the call's start: it covers
    the earlier post-invoke hooks and not the later ones, and is at most what the caller
    sees. Both sides are 30 ms sleeps, so the bounds hold however loaded the host is."""
    import time

    from reach_core import hookimpl as impl

    class SlowShaper:  # an earlier post-invoke hook that takes 30 ms
        REACH_PLUGIN_NAME = "slow-shaper"
        REACH_HOOK_PRIORITY = {"reach_post_invoke": 50}

        @impl
        def reach_post_invoke(self, call, tool, result, ctx):
            time.sleep(0.03)

    class SlowLater:  # a post-invoke hook after reach-audit's (priority 90) that takes 30 ms
        REACH_PLUGIN_NAME = "slow-later"
        REACH_HOOK_PRIORITY = {"reach_post_invoke": 95}

        @impl
        def reach_post_invoke(self, call, tool, result, ctx):
            time.sleep(0.03)

    reach = make_reach(plugins=(SlowShaper(), SlowLater()))
    res = await reach.invoke("add", {"a": 1, "b": 2})
    await reach_audit.flush(reach)
    (rec,) = records()
    assert 30.0 <= rec["elapsed_ms"]  # the earlier hook is inside the record's time
    assert rec["elapsed_ms"] <= res.elapsed_ms - 30.0 + 0.001  # the later one is not (rounded to the µs)


async def test_meta_a_later_hook_adds_is_recorded(make_reach, records):
    """The capture keeps the result's meta dict itself: what a hook after reach-audit's
    (priority 90) adds to it is in the record, as when the capture kept the result."""
    from reach_core import hookimpl as impl

    class Later:
        REACH_PLUGIN_NAME = "later"
        REACH_HOOK_PRIORITY = {"reach_post_invoke": 100}

        @impl
        def reach_post_invoke(self, call, tool, result, ctx):
            result.meta["receipt"] = "r-1"

    reach = make_reach(plugins=(Later(),))
    await reach.invoke("add", {"a": 1, "b": 2})
    await reach_audit.flush(reach)
    (rec,) = records()
    assert rec["receipt"] == "r-1"
