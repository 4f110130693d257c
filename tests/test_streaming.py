"""Streaming tools: events in order, one validated/shaped/audited result, and clean stops.

The "upstream work" of the streaming tools below is a real child process that
prints one line per item, so cancellation is checked against something that
really keeps running if a generator is not closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from typing import Any

import pytest
from click.testing import CliRunner

from reach_core import BusinessError, Connector, connector, hookimpl
from reach_core.result import ToolResult
from reach_core.streaming import Final, Progress
from reach_core.testing import make_reach

COUNTER = (
    "import sys, time\n"
    "n = int(sys.argv[1]); pause = float(sys.argv[2])\n"
    "for i in range(n):\n"
    "    print(i, flush=True)\n"
    "    time.sleep(pause)\n"
)


class CountLines(Connector):
    """Streams the lines a child process prints; reports progress after each."""

    name = "count_lines"
    description = "Count from 0 to n-1, one line at a time, in a child process."
    risk = "read"
    timeout = 10.0
    input_schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}, "pause": {"type": "number"},
                       "fail_at": {"type": "integer"}},
        "required": ["n"],
    }

    def __init__(self) -> None:
        self.procs: list[asyncio.subprocess.Process] = []
        self.closed = 0

    async def execute_stream(self, params: dict[str, Any], ctx: Any):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", COUNTER, str(params["n"]), str(params.get("pause", 0.0)),
            stdout=asyncio.subprocess.PIPE,
        )
        self.procs.append(proc)
        try:
            yield Progress(0, params["n"], "started")
            done = 0
            assert proc.stdout is not None
            async for line in proc.stdout:
                value = int(line)
                if params.get("fail_at") == value:
                    raise RuntimeError("the counter broke")
                if params.get("fail_at") == -value - 100:
                    raise BusinessError("the counter refused")
                yield {"value": value}
                done += 1
                yield Progress(done, params["n"])
        finally:
            if proc.returncode is None:
                # not proc.kill(): Popen.send_signal polls first, which can reap a child that
                # just exited before asyncio's watcher does, and wait() then reports 255
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()
            self.closed += 1  # counted once the child is reaped, so a test that saw it may look at the child


class Recorder:
    """A local plugin: records progress events and every post_invoke result."""

    REACH_PLUGIN_NAME = "recorder"

    def __init__(self) -> None:
        self.progress: list[dict[str, Any]] = []
        self.results: list[ToolResult] = []

    @hookimpl
    def reach_tool_progress(self, event: Any, ctx: Any) -> None:
        self.progress.append(dict(event))

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: ToolResult, ctx: Any) -> ToolResult:
        self.results.append(result)
        if result.ok and isinstance(result.content, list):  # a "shaper": the aggregate is shaped too
            return ToolResult(result.call_id, result.name, True, {"items": result.content, "n": len(result.content)},
                              None, result.elapsed_ms, result.trace_id, dict(result.meta))
        return None


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def counter() -> CountLines:
    return CountLines()


@pytest.fixture
def reach(tmp_path, recorder, counter):
    r = make_reach(recorder, data_dir=tmp_path / "data")
    r.register(counter)
    return r


async def collect(stream) -> tuple[list[dict[str, Any]], ToolResult]:
    events = [e async for e in stream]
    assert isinstance(events[-1], ToolResult)
    return events[:-1], events[-1]


async def test_events_arrive_in_order_and_the_result_goes_through_the_pipeline(reach, recorder, counter):
    events, result = await collect(reach.invoke_stream({"id": "s1", "name": "count_lines", "arguments": {"n": 3}}))
    kinds = [(e["type"], e.get("done"), e.get("item")) for e in events]
    assert kinds == [
        ("progress", 0, None),
        ("item", None, {"value": 0}), ("progress", 1, None),
        ("item", None, {"value": 1}), ("progress", 2, None),
        ("item", None, {"value": 2}), ("progress", 3, None),
    ]
    assert [e["index"] for e in events if e["type"] == "item"] == [0, 1, 2]
    assert all(e["call_id"] == "s1" and e["tool"] == "count_lines" for e in events)
    # one final result, shaped by post_invoke like any other call
    assert result.ok and result.call_id == "s1"
    assert result.content == {"items": [{"value": 0}, {"value": 1}, {"value": 2}], "n": 3}
    assert [r.name for r in recorder.results] == ["count_lines"]
    # front-ends hear the progress through the hook, in the same order
    assert [e["done"] for e in recorder.progress] == [0, 1, 2, 3]
    assert counter.closed == 1 and counter.procs[0].returncode == 0


async def test_plain_invoke_of_a_streaming_tool_waits_for_the_aggregate(reach):
    result = await reach.invoke("count_lines", {"n": 2})
    assert result.ok
    assert result.content == {"items": [{"value": 0}, {"value": 1}], "n": 2}


async def test_arguments_are_validated_before_the_stream_starts(reach, counter):
    events, result = await collect(reach.invoke_stream("count_lines", {"n": 0}))
    assert events == []
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert counter.procs == []


async def test_cancelling_stops_the_generator_and_its_upstream_process(reach, counter):
    stream = reach.invoke_stream("count_lines", {"n": 1000, "pause": 0.05})
    seen = []
    async for event in stream:
        seen.append(event)
        if event["type"] == "item" and event["item"]["value"] == 2:
            break
    await stream.aclose()
    assert counter.closed == 1, "the generator's finally ran"
    proc = counter.procs[0]
    assert proc.returncode is not None and proc.returncode != 0, "the child process was killed"
    assert [e["item"]["value"] for e in seen if e["type"] == "item"] == [0, 1, 2]


async def test_cancelling_the_task_that_consumes_the_stream(reach, counter):
    started = asyncio.Event()

    async def consume() -> None:
        async for event in reach.invoke_stream("count_lines", {"n": 1000, "pause": 0.05}):
            if event["type"] == "item":
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert counter.closed == 1
    assert counter.procs[0].returncode is not None


async def test_an_idle_stream_times_out_and_reports_what_arrived(tmp_path, recorder):
    closed = []

    class Stalls(Connector):
        name = "stalls"
        description = "Sends one item, then nothing."
        risk = "read"
        timeout = 10.0
        idle_timeout = 0.3

        async def execute_stream(self, params, ctx):
            try:
                yield "first"
                await asyncio.sleep(30)
                yield "never"
            finally:
                closed.append(True)

    r = make_reach(recorder, data_dir=tmp_path / "data")
    r.register(Stalls())
    t0 = time.perf_counter()
    events, result = await collect(r.invoke_stream("stalls", {}))
    elapsed = time.perf_counter() - t0
    assert elapsed < 2.0, f"idle timeout of 0.3 s took {elapsed:.2f} s"
    assert [e["item"] for e in events] == ["first"]
    assert not result.ok and result.error.code == "timeout"
    assert "idle" in result.error.message and '"first"' in result.error.message
    assert result.meta["delivered"] == ["first"]
    assert closed == [True]
    # the failed result was audited like any other (post_invoke saw it)
    assert recorder.results[-1].error.code == "timeout"


async def test_idle_timeout_from_config(tmp_path):
    class Slow(Connector):
        name = "slow"
        description = "Slow stream."
        risk = "read"

        async def execute_stream(self, params, ctx):
            yield 1
            await asyncio.sleep(30)

    r = make_reach(config={"connectors": {"slow": {"idle_timeout": 0.2}}}, data_dir=tmp_path / "data")
    r.register(Slow())
    t0 = time.perf_counter()
    result = await r.invoke("slow", {})
    assert time.perf_counter() - t0 < 2.0
    assert result.error is not None and result.error.code == "timeout"


async def test_the_total_deadline_holds_for_a_stream_that_keeps_talking(tmp_path):
    class Chatty(Connector):
        name = "chatty"
        description = "Never ends."
        risk = "read"
        timeout = 0.6
        idle_timeout = 5.0

        async def execute_stream(self, params, ctx):
            i = 0
            while True:
                await asyncio.sleep(0.05)
                yield i
                i += 1

    r = make_reach(data_dir=tmp_path / "data")
    r.register(Chatty())
    t0 = time.perf_counter()
    events, result = await collect(r.invoke_stream("chatty", {}))
    assert time.perf_counter() - t0 < 2.0
    assert result.error is not None and result.error.code == "timeout"
    assert len(events) >= 3
    assert result.meta["delivered"] == [e["item"] for e in events]


async def test_a_stream_that_fails_midway_reports_what_was_delivered(reach, counter, recorder):
    events, result = await collect(reach.invoke_stream("count_lines", {"n": 5, "fail_at": 2}))
    assert [e["item"] for e in events if e["type"] == "item"] == [{"value": 0}, {"value": 1}]
    assert not result.ok and result.error.code == "execution_failed"
    # the model is told what arrived; the caller gets it as data
    assert "2 item(s) had been delivered" in result.error.message
    assert '{"value":0}' in result.error.message
    assert "the counter broke" not in result.error.message, "exception text stays out of the model's view"
    assert result.meta["delivered"] == [{"value": 0}, {"value": 1}]
    assert counter.closed == 1 and counter.procs[0].returncode is not None


async def test_a_business_error_midway_keeps_its_message_and_adds_the_delivered_part(reach):
    result = await reach.invoke("count_lines", {"n": 5, "fail_at": -101})
    assert result.error is not None and result.error.code == "execution_failed"
    assert result.error.message.startswith("the counter refused")
    assert "1 item(s) had been delivered" in result.error.message


async def test_final_sets_the_result_and_plain_connectors_report_progress(tmp_path, recorder):
    class Summary(Connector):
        name = "summary"
        description = "Streams pages, returns a summary."
        risk = "read"

        async def execute_stream(self, params, ctx):
            yield "page 1"
            yield "page 2"
            yield Final({"pages": 2})

    @connector(risk="read")
    async def crunch(n: int, ctx=None) -> int:
        """Crunch numbers, reporting progress.

        Args:
            n: how many
        """
        for i in range(n):
            await ctx.report_progress(i + 1, n, f"chunk {i + 1}")
        return n

    @connector(risk="read")
    async def ticker(n: int):
        """An async generator function is a streaming tool too.

        Args:
            n: how many ticks
        """
        for i in range(n):
            yield {"tick": i}

    r = make_reach(recorder, data_dir=tmp_path / "data")
    for c in (Summary(), crunch, ticker):
        r.register(c)
    events, result = await collect(r.invoke_stream("summary", {}))
    assert [e["item"] for e in events] == ["page 1", "page 2"]
    assert result.content == {"pages": 2}

    events, result = await collect(r.invoke_stream({"id": "c9", "name": "crunch", "arguments": '{"n": 3}'}))
    assert [(e["type"], e["done"], e["total"], e["message"]) for e in events] == [
        ("progress", 1, 3, "chunk 1"), ("progress", 2, 3, "chunk 2"), ("progress", 3, 3, "chunk 3")]
    assert result.content == 3

    events, result = await collect(r.invoke_stream("ticker", {"n": 2}))
    assert [e["item"] for e in events] == [{"tick": 0}, {"tick": 1}]
    assert result.content == {"items": [{"tick": 0}, {"tick": 1}], "n": 2}
    assert r.tools(names=["ticker"])[0]["function"]["parameters"]["properties"]["n"]["type"] == "integer"


async def test_streams_of_parallel_calls_stay_apart(reach):
    async def run(n: int, cid: str) -> list[Any]:
        events, result = await collect(reach.invoke_stream({"id": cid, "name": "count_lines", "arguments": {"n": n}}))
        assert result.ok
        return [e["item"]["value"] for e in events if e["type"] == "item"]

    a, b = await asyncio.gather(run(3, "a"), run(5, "b"))
    assert a == [0, 1, 2] and b == [0, 1, 2, 3, 4]


def test_cli_call_shows_progress_on_stderr(tmp_path, monkeypatch):
    class Steps(Connector):
        name = "steps"
        description = "Three slow steps."
        risk = "read"

        async def execute_stream(self, params, ctx):
            for i in range(3):
                await asyncio.sleep(0.01)
                yield Progress(i + 1, 3, f"step {i + 1}")
            yield {"done": True}

    from reach_core import cli as cli_mod

    r = make_reach(data_dir=tmp_path / "data")
    r.register(Steps())
    monkeypatch.setattr(cli_mod, "reach_of", lambda ctx, **kw: r)
    result = CliRunner().invoke(cli_mod.cli, ["call", "steps", "--args", "{}"])
    assert result.exit_code == 0, result.output
    assert '"done": true' in result.stdout
    lines = [ln for ln in result.stderr.splitlines() if "/3" in ln]
    assert lines == ["[######              ] 1/3 step 1", "[#############       ] 2/3 step 2",
                     "[####################] 3/3 step 3"]


async def test_a_stream_is_retried_only_before_its_first_item(tmp_path):
    from reach_core import RetryableError

    starts: list[str] = []

    class Flaky(Connector):
        name = "flaky"
        description = "Fails the first time, at a given point."
        risk = "read"
        max_retries = 2

        async def execute_stream(self, params, ctx):
            starts.append(params["when"])
            if len(starts) == 1 and params["when"] == "before":
                raise RetryableError("not yet")
            yield "a"
            if params["when"] == "after":
                raise RetryableError("broke after a")
            yield "b"

    r = make_reach(config={"reach": {"retry_backoff": 0.01}}, data_dir=tmp_path / "data")
    r.register(Flaky())
    before = await r.invoke("flaky", {"when": "before"})
    assert before.ok and before.content == ["a", "b"] and len(starts) == 2
    starts.clear()
    after = await r.invoke("flaky", {"when": "after"})
    assert after.error is not None and after.error.code == "upstream_unavailable"
    assert len(starts) == 1, "a stream that delivered something is not re-run"
    assert "1 item(s) had been delivered" in after.error.message


async def test_breaking_out_of_the_loop_is_enough_to_stop_the_upstream(reach, counter):
    async for event in reach.invoke_stream("count_lines", {"n": 1000, "pause": 0.05}):
        if event["type"] == "item":
            break
    for _ in range(1000):  # the event loop closes the abandoned generator on its next turns
        if counter.closed:
            break
        await asyncio.sleep(0.01)
    assert counter.closed == 1
    assert counter.procs[0].returncode is not None
