"""Rate limits, budgets, run limits, the identical/failing-call guards and caps on
concurrency, exact under 200 concurrent calls."""

from __future__ import annotations

import asyncio

import pytest

from reach_core import BusinessError, ConfigError, Connector, Reach, connector


def counting(name: str, *, risk: str = "read", delay: float = 0.0, fail: bool = False, **attrs):
    """A tool that counts its runs and its peak concurrency."""
    state = {"runs": 0, "inflight": 0, "peak": 0}

    class Counting(Connector):
        description = "counts"
        input_schema = {"type": "object", "properties": {"x": {"type": "integer"}}}

        async def execute(self, params):
            state["runs"] += 1
            state["inflight"] += 1
            state["peak"] = max(state["peak"], state["inflight"])
            try:
                if delay:
                    await asyncio.sleep(delay)
                if fail:
                    raise BusinessError("the service refused")
                return {"x": params.get("x"), "run": state["runs"]}
            finally:
                state["inflight"] -= 1

    c = Counting()
    c.name, c.risk = name, risk
    for k, v in attrs.items():
        setattr(c, k, v)
    return c, state


async def test_tool_rate_limit_exact_under_200_concurrent_calls(make_reach):
    tool, state = counting("get_rated")
    r = make_reach(tool, connectors={"get_rated": {"rate_limit": "50/minute"}})
    results = await asyncio.gather(*(r.invoke("get_rated", {"x": i}) for i in range(200)))
    ok = [x for x in results if x.ok]
    limited = [x for x in results if not x.ok]
    assert len(ok) == 50 and state["runs"] == 50
    assert {x.error.code for x in limited} == {"rate_limited"}
    assert all(0 < x.error.retry_after <= 60 for x in limited)
    assert "wait" in limited[0].error.message


async def test_agent_rate_limit_is_shared_across_tools(make_reach):
    a, _ = counting("get_a")
    b, _ = counting("get_b")
    r = make_reach(a, b, agents={"bot": {"rate_limit": "3/minute"}})
    results = [await r.invoke(n, {}, agent="bot") for n in ("get_a", "get_b", "get_a", "get_b")]
    assert [x.ok for x in results] == [True, True, True, False]
    assert results[-1].error.code == "rate_limited"
    assert (await r.invoke("get_a", {}, agent="other")).ok  # other agents are not affected


async def test_daily_budget_exact_under_200_concurrent_calls(make_reach):
    tool, state = counting("get_budgeted", delay=0.01)
    r = make_reach(tool, connectors={"get_budgeted": {"daily_budget": 37}})
    results = await asyncio.gather(*(r.invoke("get_budgeted", {"x": i}) for i in range(200)))
    assert sum(x.ok for x in results) == 37 == state["runs"]
    failed = [x for x in results if not x.ok]
    assert {x.error.code for x in failed} == {"budget_exceeded"}
    assert "resets at 00:00 UTC" in failed[0].error.message
    assert failed[0].error.retry_after > 0


async def test_budgets_survive_restart(make_reach, tmp_path):
    data = tmp_path / "persist"
    tool, _ = counting("get_daily")
    cfg = {"agents": {"bot": {"daily_budget": 7}}}
    r1 = make_reach(tool, data_dir=data, **cfg)
    assert all([(await r1.invoke("get_daily", {"x": i}, agent="bot")).ok for i in range(5)])
    await r1.aclose()
    tool2, state2 = counting("get_daily")
    r2 = make_reach(tool2, data_dir=data, **cfg)
    results = [await r2.invoke("get_daily", {"x": i}, agent="bot") for i in range(5)]
    assert [x.ok for x in results] == [True, True, False, False, False]
    assert state2["runs"] == 2
    assert "agent `bot`" in results[-1].error.message


async def test_budget_given_back_when_the_call_never_runs(make_reach):
    tool, state = counting("send_paid", risk="write")
    r = make_reach(tool, connectors={"send_paid": {"daily_budget": 2}})
    assert (await r.invoke("send_paid", {"x": 1}, idempotency_key="k1")).ok
    receipt = await r.invoke("send_paid", {"x": 1}, idempotency_key="k1")  # a receipt: nothing runs
    assert receipt.ok and receipt.meta["receipt"] is True
    assert (await r.invoke("send_paid", {"x": 2}, idempotency_key="k2")).ok
    assert (await r.invoke("send_paid", {"x": 3}, idempotency_key="k3")).error.code == "budget_exceeded"
    assert state["runs"] == 2
    assert r.runtime.guards.budgets.used("tool", "send_paid") == 2


async def test_max_calls_per_run(make_reach):
    tool, _ = counting("get_step", max_calls_per_run=3)
    r = make_reach(tool)
    results = [await r.invoke("get_step", {"x": i}, run_id="run-1") for i in range(4)]
    assert [x.ok for x in results] == [True, True, True, False]
    assert results[-1].error.code == "budget_exceeded"
    assert (await r.invoke("get_step", {"x": 9}, run_id="run-2")).ok
    assert (await r.invoke("get_step", {"x": 9})).ok  # no run, no run limit


async def test_run_limits_of_the_agent_the_tool_and_reach_each_hold_in_one_run(make_reach):
    capped, _ = counting("get_page", max_calls_per_run=2)
    free, _ = counting("get_time")
    r = make_reach(capped, free, reach={"max_calls_per_run": 6}, agents={"intern": {"max_calls_per_run": 3}})

    async def codes(agent: str, run: str, calls: list[tuple[str, int]]) -> list[str]:
        out = []
        for name, x in calls:
            res = await r.invoke(name, {"x": x}, agent=agent, run_id=run)
            out.append(res.error.code if res.error else "ok")
        return out

    # the tool's own cap (2) holds among other tools' calls; [reach]'s cap (6) ends the run
    assert await codes("default", "a", [("get_time", 1), ("get_page", 1), ("get_time", 2), ("get_page", 2),
                                        ("get_page", 3), ("get_time", 3), ("get_time", 4), ("get_time", 5),
                                        ("get_time", 6)]) == [
        "ok", "ok", "ok", "ok", "budget_exceeded", "ok", "ok", "budget_exceeded", "budget_exceeded"]
    # an agent's own cap (3) is lower than [reach]'s; another agent's run is not affected
    assert await codes("intern", "b", [("get_time", i) for i in range(4)]) == ["ok"] * 3 + ["budget_exceeded"]
    assert await codes("default", "c", [("get_time", i) for i in range(4)]) == ["ok"] * 4


async def test_a_call_refused_by_a_rate_limit_or_budget_does_not_count_in_its_run(make_reach):
    limited, _ = counting("get_quote", rate_limit="1/minute")
    budgeted, _ = counting("get_fx", daily_budget=1)
    free, _ = counting("get_time")
    r = make_reach(limited, budgeted, free, reach={"max_calls_per_run": 4})
    codes = []
    for name, x in (("get_quote", 1), ("get_quote", 2), ("get_fx", 1), ("get_fx", 2),
                    ("get_time", 1), ("get_time", 2), ("get_time", 3)):
        res = await r.invoke(name, {"x": x}, run_id="r")
        codes.append(res.error.code if res.error else "ok")
    # 4 calls ran; the two refusals took nothing from the run's limit of 4
    assert codes == ["ok", "rate_limited", "ok", "budget_exceeded", "ok", "ok", "budget_exceeded"]


async def test_identical_read_gets_the_earlier_result_and_says_so(make_reach):
    tool, state = counting("get_report")
    r = make_reach(tool)
    results = [await r.invoke("get_report", {"x": 1}, run_id="r") for _ in range(4)]
    assert state["runs"] == 3
    last = results[-1]
    assert last.ok and last.meta["repeated"] is True
    assert last.content["result"] == results[2].content
    assert "already called 3 times" in last.content["note"]


async def test_identical_read_after_a_failed_try_gets_the_last_good_result(make_reach):
    """ok, ok, failed, then the same read again: the earlier good result, not a refusal."""
    state = {"runs": 0}

    @connector(risk="read")
    async def get_price(item: str) -> dict:
        """Price of an item. Use when asked what something costs."""
        state["runs"] += 1
        if state["runs"] == 3:
            raise BusinessError("the price service refused")
        return {"item": item, "run": state["runs"]}

    r = make_reach(get_price)
    results = [await r.invoke("get_price", {"item": "tea"}, run_id="r") for _ in range(4)]
    assert [x.ok for x in results] == [True, True, False, True]
    assert state["runs"] == 3  # the fourth was not run
    assert results[-1].meta["repeated"] is True and results[-1].content["result"] == {"item": "tea", "run": 2}


async def test_a_run_keeps_no_result_of_calls_that_were_not_repeated(make_reach):
    """A long-lived run must not hold every result it saw: only a call repeated up to the
    identical-call limit can be replayed, so only such calls keep their result."""
    import gc
    import tracemalloc

    @connector(risk="read")
    async def get_page(n: int) -> str:
        """A large page. Use to read page n."""
        return f"{n}:" + "x" * 200_000

    r = make_reach(get_page)
    await r.invoke("get_page", {"n": -1}, run_id="warm-up")
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for n in range(50):  # 50 distinct calls, 10 MB of results in all
            assert (await r.invoke("get_page", {"n": n}, run_id="r")).ok
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert kept < 1_000_000, f"{kept:,} bytes still held by the run"
    # a repeated call still gets its earlier result
    results = [await r.invoke("get_page", {"n": 7}, run_id="r") for _ in range(3)]
    assert results[-1].meta["repeated"] is True and results[-1].content["result"].startswith("7:")


async def test_an_identical_call_is_recognised_whatever_its_key_order(make_reach):
    tool, state = counting("get_range")
    tool.input_schema = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}}
    r = make_reach(tool)
    texts = ['{"x": 1, "y": 2}', '{"y": 2, "x": 1}', '{"x":1,"y":2}', '{ "y" : 2 , "x" : 1 }']
    results = [await r.invoke({"id": f"c{i}", "name": "get_range", "arguments": t}, run_id="r")
               for i, t in enumerate(texts)]
    assert state["runs"] == 3 and results[-1].meta["repeated"] is True


async def test_identical_write_is_refused(make_reach):
    tool, state = counting("send_note", risk="write")
    r = make_reach(tool, connectors={"send_note": {"identical_call_limit": 2}})
    results = [await r.invoke({"id": f"c{i}", "name": "send_note", "arguments": '{"x": 1}'}, run_id="r")
               for i in range(3)]
    assert [x.ok for x in results] == [True, True, False]
    assert results[-1].error.code == "denied"
    assert state["runs"] == 2


async def test_same_failing_call_refused_after_two_failures(make_reach):
    tool, state = counting("get_broken", fail=True)
    r = make_reach(tool)
    results = [await r.invoke("get_broken", {"x": 1}, run_id="r") for _ in range(3)]
    assert [x.error.code for x in results] == ["execution_failed", "execution_failed", "denied"]
    assert "Change the arguments or stop" in results[-1].error.message
    assert state["runs"] == 2
    assert (await r.invoke("get_broken", {"x": 2}, run_id="r")).error.code == "execution_failed"


async def test_read_cache_cleared_by_a_write(make_reach):
    read, rstate = counting("get_item")
    write, _ = counting("put_item", risk="write")
    r = make_reach(read, write, reach={"read_cache": True})
    a = await r.invoke("get_item", {"x": 1}, run_id="r")
    b = await r.invoke("get_item", {"x": 1}, run_id="r")
    assert rstate["runs"] == 1 and b.meta["cached"] is True and b.content == a.content
    await r.invoke("put_item", {"x": 1}, run_id="r")
    await r.invoke("get_item", {"x": 1}, run_id="r")
    assert rstate["runs"] == 2


async def test_max_concurrency_per_connector_is_process_wide(make_reach):
    tool, state = counting("get_capped", delay=0.02, max_concurrency=3)
    r = make_reach(tool)
    turns = [r.invoke_many([{"id": f"{t}-{i}", "name": "get_capped", "arguments": {"x": i}} for i in range(5)],
                           run_id=f"run-{t}")
             for t in range(8)]
    results = await asyncio.gather(*turns, *(r.invoke("get_capped", {"x": i}) for i in range(20)))
    assert state["peak"] == 3
    assert state["runs"] == 60
    assert all(x.ok for turn in results[:8] for x in turn)


async def test_a_capped_function_tool_that_only_sometimes_waits_stays_within_its_cap(make_reach):
    """Calls that finish on their first step take no slot (they never run beside
    another); calls that wait take one then. Neither may push the count over the cap."""
    state = {"inflight": 0, "peak": 0}

    @connector(name="lookup", risk="read", max_concurrency=2)
    async def lookup(x: int) -> int:
        """Look x up."""
        state["inflight"] += 1
        state["peak"] = max(state["peak"], state["inflight"])
        try:
            if x % 3 == 0:
                await asyncio.sleep(0.01)
            return x
        finally:
            state["inflight"] -= 1

    r = make_reach(lookup)
    results = await asyncio.gather(*(r.invoke("lookup", {"x": i}) for i in range(60)))
    assert [res.content for res in results] == list(range(60))
    assert state["peak"] == 2
    cap = r.runtime.guards.tool_plan(r.runtime.tools["lookup"]).caps[0]
    assert (cap.free, len(cap._waiters)) == (2, 0)  # every slot came back


async def test_max_concurrency_per_plugin(make_reach):
    a, sa = counting("get_p1", delay=0.02)
    b, sb = counting("get_p2", delay=0.02)
    inflight = {"now": 0, "peak": 0}
    r = make_reach(a, b, limits={"plugins": {"user": {"max_concurrency": 2}}})
    orig = [a.execute, b.execute]

    def track(fn):
        async def run(params):
            inflight["now"] += 1
            inflight["peak"] = max(inflight["peak"], inflight["now"])
            try:
                return await fn(params)
            finally:
                inflight["now"] -= 1
        return run

    a.execute, b.execute = track(orig[0]), track(orig[1])
    await asyncio.gather(*(r.invoke(n, {"x": i}) for i in range(10) for n in ("get_p1", "get_p2")))
    assert inflight["peak"] == 2 and sa["runs"] == sb["runs"] == 10


async def test_invoke_many_limit_weights_and_sequential(make_reach):
    units = {"now": 0, "peak": 0}
    log: list[tuple[str, int]] = []

    def tool(name, weight=1, sequential=False):
        class T(Connector):
            description = "tracks units in flight"
            input_schema = {"type": "object", "properties": {"x": {"type": "integer"}}}

            async def execute(self, params):
                units["now"] += weight
                units["peak"] = max(units["peak"], units["now"])
                log.append((name, units["now"]))
                try:
                    await asyncio.sleep(0.02)
                finally:
                    units["now"] -= weight
                return params.get("x")

        t = T()
        t.name, t.risk, t.weight, t.sequential = name, "read", weight, sequential
        return t

    r = make_reach(tool("get_light"), tool("get_heavy", weight=3), tool("get_alone", sequential=True))
    calls = [{"id": f"l{i}", "name": "get_light", "arguments": {"x": i}} for i in range(12)]
    results = await r.invoke_many(calls)
    assert [x.content for x in results] == list(range(12))
    assert units["peak"] == 5
    units["peak"] = 0
    mixed = [{"id": f"m{i}", "name": "get_heavy" if i % 2 else "get_light", "arguments": {"x": i}} for i in range(10)]
    results = await r.invoke_many(mixed)
    assert [x.content for x in results] == list(range(10))
    assert units["peak"] <= 5
    log.clear()
    seq = [{"id": "a", "name": "get_light", "arguments": {"x": 0}},
           {"id": "b", "name": "get_light", "arguments": {"x": 1}},
           {"id": "c", "name": "get_alone", "arguments": {"x": 2}},
           {"id": "d", "name": "get_light", "arguments": {"x": 3}}]
    results = await r.invoke_many(seq)
    assert [x.content for x in results] == [0, 1, 2, 3]
    names = [n for n, _ in log]
    assert names.index("get_alone") == 2  # after every earlier call, before every later one
    assert ("get_alone", 1) in log  # and alone


async def test_a_hanging_call_holds_nobody_else(make_reach):
    fast, fs = counting("get_fast", delay=0.01)
    hang, _ = counting("get_hang", delay=5, timeout=0.3, max_retries=0)
    r = make_reach(fast, hang)
    calls = [{"id": "h", "name": "get_hang", "arguments": {}}] + [
        {"id": f"f{i}", "name": "get_fast", "arguments": {"x": i}} for i in range(20)]
    t0 = asyncio.get_running_loop().time()
    results = await r.invoke_many(calls)
    took = asyncio.get_running_loop().time() - t0
    assert results[0].error.code == "timeout"
    assert all(x.ok for x in results[1:]) and fs["runs"] == 20
    assert took < 0.6


async def test_cancelling_invoke_many_cancels_in_flight_calls(make_reach):
    started, cancelled = [], []

    @connector(risk="read")
    async def get_slowly(i: int) -> int:
        """Sleep."""
        started.append(i)
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise
        return i

    r = make_reach(get_slowly)
    task = asyncio.create_task(r.invoke_many([{"id": str(i), "name": "get_slowly", "arguments": {"i": i}}
                                              for i in range(3)]))
    for _ in range(500):  # until all three are in flight (slow machines)
        if len(started) == 3:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(started) == sorted(cancelled) == [0, 1, 2]


def test_bad_guard_config_fails_at_start(tmp_path):
    with pytest.raises(ConfigError, match="connectors.x"):
        Reach({"reach": {"data_dir": str(tmp_path)}, "connectors": {"x": {"rate_limit": "lots"}}}, plugins=[])
    with pytest.raises(ConfigError, match="budget_timezone"):
        Reach({"reach": {"data_dir": str(tmp_path), "budget_timezone": "Mars/Base"}}, plugins=[])
