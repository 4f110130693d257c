"""The pipeline decides once per (agent, tool) what a call needs (``pipeline.Route``) and
runs the plain call straight through. These tests hold that the shortcut never skips a
check a call is owed: keyed write calls still go through the ledger after unkeyed ones,
limits and caps still hold once the route is cached, a cached route follows a change of
policy, and hooks that hand back awaitables are still awaited."""

from __future__ import annotations

import asyncio

from test_guard_ledger import writer  # tests/guard is on sys.path (rootdir-less test folders)

from reach_core import Reach, connector, hookimpl
from reach_core.pipeline import PLAIN, PLAIN_UNKEYED


def reader(name: str = "get_value"):
    calls: list[int] = []

    @connector(name=name, risk="read")
    async def get_value(n: int) -> int:
        """Return n."""
        calls.append(n)
        return n

    return get_value, calls


async def test_a_write_tool_route_is_plain_only_without_a_key(make_reach):
    tool, sent = writer()
    r = make_reach(tool)
    for _ in range(2):  # unkeyed: each call runs (nothing to deduplicate)
        assert (await r.invoke("send_email", {"to": "a@x.org"})).ok
    assert r.runtime.routes[None]["send_email"].plain == PLAIN_UNKEYED
    for key_in in ("kwarg", "call"):
        key = f"order-{key_in}"
        for _ in range(3):
            if key_in == "kwarg":
                res = await r.invoke("send_email", {"to": "b@x.org"}, idempotency_key=key)
            else:
                res = await r.invoke({"id": "c", "name": "send_email", "arguments": '{"to": "b@x.org"}',
                                      "idempotency_key": key})
            assert res.ok
    # two keys, each ran once; the later ones were receipts
    assert sent == [("a@x.org", None), ("a@x.org", None), ("b@x.org", "order-kwarg"), ("b@x.org", "order-call")]


async def test_a_run_id_makes_the_key_on_a_plain_route(make_reach):
    tool, sent = writer()
    r = make_reach(tool)
    await r.invoke("send_email", {"to": "a@x.org"})  # caches the route
    for _ in range(2):
        await r.invoke({"id": "call-1", "name": "send_email", "arguments": {"to": "a@x.org"}}, run_id="run-9")
    assert sent[1:] == [("a@x.org", "7:default:5:run-9:call-1")]


async def test_a_read_route_is_plain_and_a_limited_one_is_not(make_reach):
    free, _ = reader("get_free")
    rated, calls = reader("get_rated")
    r = make_reach(free, rated, connectors={"get_rated": {"rate_limit": "3/minute"}})
    out = [await r.invoke(name, {"n": i}) for i in range(6) for name in ("get_free", "get_rated")]
    routes = r.runtime.routes[None]
    assert routes["get_free"].plain == PLAIN and routes["get_rated"].plain == 0
    rated_codes = [res.error.code if res.error else "ok" for res in out[1::2]]
    assert rated_codes == ["ok"] * 3 + ["rate_limited"] * 3 and calls == [0, 1, 2]


async def test_a_capped_route_still_holds_its_cap(make_reach):
    gate = asyncio.Event()
    running = 0
    peak = 0

    @connector(risk="read", max_concurrency=2)
    async def slow(n: int) -> int:
        """Wait."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await gate.wait()
        running -= 1
        return n

    r = make_reach(slow)
    assert (await asyncio.wait_for(asyncio.gather(r.invoke("slow", {"n": 0}), _open(gate)), 5))[0].ok
    gate.clear()
    assert r.runtime.routes[None]["slow"].plain == 0
    tasks = [asyncio.ensure_future(r.invoke("slow", {"n": i})) for i in range(6)]
    await asyncio.sleep(0.05)
    assert running == 2
    gate.set()
    assert all(res.ok for res in await asyncio.gather(*tasks)) and peak == 2


async def _open(gate: asyncio.Event) -> None:
    await asyncio.sleep(0.01)
    gate.set()


async def test_a_cached_route_follows_a_blocked_tool_and_a_new_policy(make_reach):
    tool, calls = reader()
    r = make_reach(tool)
    assert (await r.invoke("get_value", {"n": 1})).ok
    r.runtime.block_tool("get_value", "blocked by the operator")
    res = await r.invoke("get_value", {"n": 2})
    assert res.error is not None and res.error.code == "denied"
    r.runtime.block_tool("get_value", None)
    assert (await r.invoke("get_value", {"n": 3})).ok and calls == [1, 3]


async def test_sync_hooks_that_return_awaitables_are_awaited_on_the_plain_path(tmp_path):
    seen: list[str] = []

    class Hooks:
        REACH_PLUGIN_NAME = "awaitable-hooks"

        @hookimpl
        def reach_pre_invoke(self, call, tool, ctx):
            async def later():
                seen.append("pre")
            return later()

        @hookimpl
        def reach_post_invoke(self, call, tool, result, ctx):
            async def later():
                seen.append("post")
                result.meta["post"] = True
                return result
            return later()

    tool, _ = reader()
    r = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[Hooks()])
    r.register(tool)
    for _ in range(2):
        res = await r.invoke("get_value", {"n": 1})
        assert res.ok and res.meta["post"] is True
    assert seen == ["pre", "post", "pre", "post"]
