"""Handles: scoped to (agent, run), invisible to others, gone when the run ends or the TTL passes."""

from __future__ import annotations

import json

from reach_shape.plugin import shaper_for

from reach_core.adapter import ModelRequest, ModelResponse, ModelToolCall

BIG = {"rows": [[i, f"item-{i}"] for i in range(5000)]}


async def big_result(make, *, run_id="run-a", agent=None, shape=None):
    reach, echo = make({"default_budget": 300, **(shape or {})})
    echo.payload = BIG
    result = await reach.invoke("fetch", {}, run_id=run_id, agent=agent)
    return reach, result.meta["shaped"]["handle"]


async def test_another_agent_gets_not_found(make):
    reach, h = await big_result(make, agent="alice")
    mine = await reach.invoke("read_result", {"handle": h, "path": "rows[3]"}, run_id="run-a", agent="alice")
    assert mine.content["value"] == [3, "item-3"]
    other = await reach.invoke("read_result", {"handle": h, "path": "rows[3]"}, run_id="run-a", agent="bob")
    assert not other.ok and other.error.code == "not_found"
    assert "item-3" not in other.to_json()
    # the default agent is an agent like any other
    default = await reach.invoke("read_result", {"handle": h}, run_id="run-a")
    assert default.error.code == "not_found"


async def test_another_run_or_no_run_gets_not_found(make):
    reach, h = await big_result(make, run_id="run-a")
    for run_id in ("run-b", None):
        res = await reach.invoke("read_result", {"handle": h}, run_id=run_id)
        assert res.error.code == "not_found"
        assert "only for the run that produced them" in res.error.message


async def test_a_call_without_run_id_is_scoped_to_the_agent_with_a_short_ttl(make):
    reach, h = await big_result(make, run_id=None, agent="alice", shape={"bare_ttl": 30, "run_ttl": 3600})
    store = shaper_for(reach).store
    assert store._entries[h].run_id is None
    ok = await reach.invoke("read_result", {"handle": h, "path": "rows[0]"}, agent="alice")
    assert ok.content["value"] == [0, "item-0"]
    assert (await reach.invoke("read_result", {"handle": h}, agent="bob")).error.code == "not_found"
    now = store.clock()
    store.clock = lambda: now + 31
    assert (await reach.invoke("read_result", {"handle": h}, agent="alice")).error.code == "not_found"
    assert len(store) == 0


async def test_run_handles_expire_after_the_run_ttl(make):
    reach, h = await big_result(make, shape={"run_ttl": 600})
    store = shaper_for(reach).store
    now = store.clock()
    store.clock = lambda: now + 599
    assert (await reach.invoke("read_result", {"handle": h, "path": "rows[1]"}, run_id="run-a")).ok
    store.clock = lambda: now + 601
    assert (await reach.invoke("read_result", {"handle": h}, run_id="run-a")).error.code == "not_found"


async def test_oldest_results_go_first_when_the_store_is_full(make):
    reach, echo = make({"default_budget": 300, "max_entries": 2})
    echo.payload = BIG
    handles = [(await reach.invoke("fetch", {}, run_id=f"r{i}")).meta["shaped"]["handle"] for i in range(3)]
    assert (await reach.invoke("read_result", {"handle": handles[0]}, run_id="r0")).error.code == "not_found"
    assert (await reach.invoke("read_result", {"handle": handles[2], "path": "rows[0]"}, run_id="r2")).ok


async def test_a_result_larger_than_the_store_is_shaped_without_a_handle(make):
    reach, echo = make({"default_budget": 300, "max_bytes": 2048})
    echo.payload = BIG
    result = await reach.invoke("fetch", {}, run_id="r")
    note = result.content["_shaped"]
    assert "handle" not in note and "too large to keep" in note["full_result"]
    assert result.meta["shaped"]["handle"] is None


class Model:
    """Stands in for a model: calls the big tool, then read_result with the handle it was given."""

    name = "scripted"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def describe(self) -> str:
        return "scripted model"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        step = len(self.requests)
        if step == 1:
            return ModelResponse(tool_calls=[ModelToolCall("c1", "fetch", "{}")])
        last = json.loads(request.messages[-1]["content"])
        if step == 2:
            self.note = last["_shaped"]
            args = {"handle": self.note["handle"], "path": "rows", "query": "item-4321"}
            return ModelResponse(tool_calls=[ModelToolCall("c2", "read_result", json.dumps(args))])
        self.found = last
        return ModelResponse(text=f"It is {last['matches'][0]['value'][1]}.")


async def test_in_a_run_the_model_reads_the_full_result_and_the_handle_dies_with_the_run(make):
    reach, echo = make({"default_budget": 300})
    echo.payload = BIG
    model = Model()
    run = await reach.run("Find item-4321 please", adapter=model, agent="alice")
    assert run.ok and run.text == "It is item-4321."
    assert model.note["best_matches_for_question"][0] == "rows[4321]"  # the loop passed the question
    assert model.found["matches"][0] == {"path": "rows[4321]", "value": [4321, "item-4321"]}
    assert "read_result" in [t["function"]["name"] for t in model.requests[1].tools]
    after = await reach.invoke("read_result", {"handle": model.note["handle"]}, run_id=run.run_id, agent="alice")
    assert after.error.code == "not_found"
    assert len(shaper_for(reach).store) == 0


async def test_each_reach_has_its_own_store(make):
    reach_a, h = await big_result(make)
    reach_b, echo_b = make({"default_budget": 300})
    res = await reach_b.invoke("read_result", {"handle": h}, run_id="run-a")
    assert res.error.code == "not_found"
    assert shaper_for(reach_a) is not shaper_for(reach_b)
