"""Timeouts and retries against a real misbehaving HTTP server and a TCP proxy."""

from __future__ import annotations

import asyncio
import time

import httpx
from faulty import FaultProxy

from reach_core import BusinessError, Connector


class HttpTool(Connector):
    """GET/POST a path of the faulty server; HTTP errors surface the way real connectors do."""

    description = "test tool"
    input_schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}

    def __init__(self, name: str, base: str, *, risk: str = "read", **attrs):
        self.name = name
        self.base = base
        self.risk = risk
        for k, v in attrs.items():
            setattr(self, k, v)

    async def execute(self, params, ctx):
        # a fresh connection per attempt (the proxy counts them), no SSL context to build
        transport = httpx.AsyncHTTPTransport(verify=False, retries=0)
        async with httpx.AsyncClient(timeout=5, transport=transport, verify=False) as client:
            resp = await client.get(self.base + params["path"])
        if resp.status_code in (429, 502, 503, 504):
            resp.raise_for_status()  # the executor knows httpx's HTTPStatusError
        if resp.status_code >= 400:
            raise BusinessError(f"the service answered {resp.status_code}")
        return resp.json()


async def test_idempotent_read_is_retried_until_it_succeeds(make_reach, faulty):
    r = make_reach(HttpTool("get_flaky", faulty.url()))
    res = await r.invoke("get_flaky", {"path": "/flaky?fail=2&k=read1"})
    assert res.ok, res.error
    assert res.meta["attempts"] == 3
    assert faulty.hits["/flaky"] >= 3


async def test_write_is_never_retried(make_reach, faulty):
    r = make_reach(HttpTool("post_flaky", faulty.url(), risk="write"))
    before = faulty.hits["/flaky"]
    res = await r.invoke("post_flaky", {"path": "/flaky?fail=2&k=write1"}, idempotency_key="w-1")
    assert not res.ok and res.error.code == "upstream_unavailable"
    assert faulty.hits["/flaky"] - before == 1


async def test_business_error_is_never_retried(make_reach, faulty):
    r = make_reach(HttpTool("get_missing", faulty.url()))
    before = faulty.hits["/nothing-here"]
    res = await r.invoke("get_missing", {"path": "/nothing-here"})
    assert res.error.code == "execution_failed"
    assert faulty.hits["/nothing-here"] - before == 1


async def test_backoff_grows_exponentially(make_reach, faulty, monkeypatch):
    import reach_core.execute as execute

    # jitter off (always the full delay) so the schedule is exact: 0.1, 0.2, 0.4 s
    monkeypatch.setattr(execute.random, "random", lambda: 1.0)
    r = make_reach(HttpTool("get_backoff", faulty.url(), max_retries=3), reach={"retry_backoff": 0.1})
    res = await r.invoke("get_backoff", {"path": "/flaky?fail=3&k=backoff"})
    assert res.ok and res.meta["attempts"] == 4
    t = faulty.times["/flaky"][-4:]
    gaps = [b - a for a, b in zip(t, t[1:], strict=False)]
    for gap, delay in zip(gaps, (0.1, 0.2, 0.4), strict=True):
        assert delay <= gap < delay + 0.3, gaps  # the delay, plus request time on a busy machine
    assert gaps[0] < gaps[1] < gaps[2]


async def test_retry_after_is_honoured(make_reach, faulty):
    r = make_reach(HttpTool("get_429", faulty.url(), timeout=5))
    res = await r.invoke("get_429", {"path": "/flaky?fail=1&status=429&retry_after=1&k=ra"})
    assert res.ok and res.meta["attempts"] == 2
    t = faulty.times["/flaky"][-2:]
    assert t[1] - t[0] >= 0.99


async def test_retry_after_past_the_deadline_gives_up_at_once(make_reach, faulty):
    r = make_reach(HttpTool("get_slowdown", faulty.url(), timeout=1))
    t0 = time.monotonic()
    res = await r.invoke("get_slowdown", {"path": "/429?retry_after=30"})
    assert time.monotonic() - t0 < 0.5
    assert res.error.code == "rate_limited"
    assert res.error.retry_after == 30


async def test_whole_call_deadline_includes_every_attempt(make_reach, faulty):
    r = make_reach(HttpTool("get_hang", faulty.url(), timeout=1.0, attempt_timeout=0.3))
    before = faulty.hits["/hang"]
    t0 = time.monotonic()
    res = await r.invoke("get_hang", {"path": "/hang?seconds=3"})
    took = time.monotonic() - t0
    assert res.error.code == "timeout"
    assert took < 1.2
    assert faulty.hits["/hang"] - before >= 2  # attempt_timeout let it retry inside the deadline


async def test_timed_out_write_runs_exactly_once_and_is_outcome_unknown(make_reach, faulty):
    r = make_reach(HttpTool("post_slow", faulty.url(), risk="write", timeout=0.3))
    res = await r.invoke("post_slow", {"path": "/write?id=once&delay=0.8"}, idempotency_key="k-once")
    assert res.error.code == "outcome_unknown"
    assert "may or may not" in res.error.message
    await asyncio.sleep(1.0)
    assert faulty.writes["once"] == 1
    # the same key again is not re-run either
    again = await r.invoke("post_slow", {"path": "/write?id=once&delay=0.8"}, idempotency_key="k-once")
    assert again.error.code == "outcome_unknown"
    assert faulty.writes["once"] == 1


async def test_connection_reset_and_truncated_body(make_reach, faulty):
    r = make_reach(
        HttpTool("get_reset", faulty.url(), max_retries=2),
        HttpTool("post_truncated", faulty.url(), risk="write"),
    )
    before = faulty.hits["/reset"]
    res = await r.invoke("get_reset", {"path": "/reset"})
    assert res.error.code == "upstream_unavailable"
    assert faulty.hits["/reset"] - before == 3
    before = faulty.hits["/truncated"]
    res = await r.invoke("post_truncated", {"path": "/truncated"}, idempotency_key="t-1")
    assert res.error.code == "outcome_unknown"  # the request reached the service
    assert faulty.hits["/truncated"] - before == 1


async def test_fallback_after_last_attempt(make_reach, faulty):
    r = make_reach(HttpTool("get_down", faulty.url(), max_retries=1, fallback={"forecast": "unavailable"}))
    res = await r.invoke("get_down", {"path": "/status/503"})
    assert res.ok and res.content == {"forecast": "unavailable"}
    assert res.meta["fallback"] is True and res.meta["attempts"] == 2


async def test_proxy_latency_and_resets(make_reach, faulty):
    async with FaultProxy("127.0.0.1", faulty.port) as proxy:
        r = make_reach(HttpTool("get_via_proxy", proxy.url(), timeout=2, attempt_timeout=0.25, max_retries=2))
        proxy.latency = 0.4
        res = await r.invoke("get_via_proxy", {"path": "/ok"})
        assert res.error.code == "timeout"
        proxy.latency = 0.0
        proxy.reset = True
        n = proxy.connections
        res = await r.invoke("get_via_proxy", {"path": "/ok"})
        assert res.error.code == "upstream_unavailable"
        assert proxy.connections - n == 3
        proxy.reset = False
        res = await r.invoke("get_via_proxy", {"path": "/ok"})
        assert res.ok


def _sleepy(name, seconds, *, risk="read", **attrs):
    ran: list[float] = []

    class Sleepy(Connector):
        description = "sleeps in a thread"

        def execute(self, params):
            ran.append(time.monotonic())
            time.sleep(seconds)
            return {"slept": seconds}

    c = Sleepy()
    c.name, c.risk = name, risk
    for k, v in attrs.items():
        setattr(c, k, v)
    return c, ran


async def test_sync_tools_time_out_and_keep_their_slot(make_reach):
    read, _ = _sleepy("sleep_read", 1.0, timeout=0.2, max_retries=0)
    write, _ = _sleepy("sleep_write", 1.0, risk="write", timeout=0.2)
    hung, hung_ran = _sleepy("sleep_capped", 0.8, timeout=0.2, max_retries=0, max_concurrency=1)
    r = make_reach(read, write, hung)
    t0 = time.monotonic()
    res = await r.invoke("sleep_read", {})
    assert res.error.code == "timeout" and time.monotonic() - t0 < 0.5
    res = await r.invoke("sleep_write", {}, idempotency_key="sw")
    assert res.error.code == "outcome_unknown"
    first = await r.invoke("sleep_capped", {})
    assert first.error.code == "timeout"
    # the hung thread still holds the only slot: the next call cannot start and never runs
    second = await r.invoke("sleep_capped", {})
    assert second.error.code == "timeout" and "did not run" in second.error.message
    assert len(hung_ran) == 1
    await asyncio.sleep(0.8)  # the thread ends, the slot comes back
    third = await r.invoke("sleep_capped", {})
    assert len(hung_ran) == 2 and third.error.code == "timeout"


async def test_refused_connection_means_a_write_did_not_happen(make_reach):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = make_reach(
        HttpTool("post_nowhere", f"http://127.0.0.1:{port}", risk="write"),
        HttpTool("get_nowhere", f"http://127.0.0.1:{port}", max_retries=2),
    )
    res = await r.invoke("post_nowhere", {"path": "/write"}, idempotency_key="nowhere-1")
    assert res.error.code == "upstream_unavailable" and res.meta["attempts"] == 1
    res = await r.invoke("get_nowhere", {"path": "/ok"})
    assert res.error.code == "upstream_unavailable" and res.meta["attempts"] == 3
    # the write never happened, so its key is free again: the same key runs once the service is back
    assert await r.store.fetchone("SELECT state FROM reach_ledger WHERE idem_key = 'nowhere-1'") is None
