"""The per-agent usage prior: off by default, bounded, never across agents.

The bound, stated on the fused score (z-score units): with `usage_max_boost = b`,
every tool the prior puts in the top k scores, without the prior, at least the k-th
tool's score minus b. So it reorders close candidates and cannot lift a tool from far
down, however often it was called. Checked over many questions, k and b, with an
adversarial history (the agent "calls" every unrelated tool thousands of times).
"""

from __future__ import annotations

import pytest
from conftest import TOOLS, build, names
from reach_preselect.usage import MAX_AGENTS, UsagePrior

QUESTIONS = [
    "weather in Paris",
    "will it rain in Lyon this week",
    "convert 100 dollars to euros",
    "what is Apple's stock price",
    "email Bob the report",
    "book a room in Berlin for two nights",
    "flights from Oslo to Rome on Friday",
    "translate this sentence into German",
    "what is 17 * 23",
    "open the file notes.txt",
    "total sales last month",
    "remind me to call mom at 6pm",
    "latest news about electric cars",
    "how many miles is 10 km",
    "schedule a meeting with the team tomorrow at 10",
    "jot down that the wifi password changed",
]
ALL = [t[0] for t in TOOLS]


def _prior_reach(tmp_path, **settings):
    # dense_gate 0: the encoder reads every question, so the fused scores the cases
    # below were chosen on (two candidates within the boost) do not depend on the gate.
    return build(tmp_path, {"usage_prior": True, "usage_min_calls": 5, "dense_gate": 0, **settings})


def _hammer(selector, agent: str, tools: list[str], times: int) -> None:
    for name in tools:
        for _ in range(times):
            selector.observe_call(agent, name)


def _fused(reach, question: str) -> dict[str, float]:
    engine = reach.provider("selector").engine()
    totals = engine.fused_scores([question], None)[0][0]
    return {d.name: float(totals[i]) for i, d in enumerate(engine._docs)}


def test_off_by_default(tmp_path):
    reach = build(tmp_path)
    selector = reach.provider("selector")
    before = names(reach.tools(query="weather in Paris", limit=5, agent="a"))
    _hammer(selector, "a", ["convert_units"], 100)
    assert selector.usage() is None
    assert names(reach.tools(query="weather in Paris", limit=5, agent="a")) == before


@pytest.fixture(scope="module", params=[0.5, 1.0, 3.0], ids=lambda b: f"boost{b}")
def boosted(request, tmp_path_factory):
    return request.param, _prior_reach(tmp_path_factory.mktemp("prior"), usage_max_boost=request.param)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_bound_an_unrelated_tool_is_never_lifted(boosted, k):
    boost, reach = boosted
    agent = f"mallory-{k}"
    selector = reach.provider("selector")
    baseline = {q: names(reach.tools(query=q, limit=k, agent=agent)) for q in QUESTIONS}
    _hammer(selector, agent, ALL, 3000)  # every tool "called" as often as can be
    for question in QUESTIONS:
        fused = _fused(reach, question)
        kth = min(fused[n] for n in baseline[question])
        top = names(reach.tools(query=question, limit=k, agent=agent))
        for name in top:
            assert fused[name] >= kth - boost - 1e-5, (question, name, fused[name], kth)
        # a tool scoring below the candidates' mean never gets in
        for name in set(top) - set(baseline[question]):
            assert fused[name] > 0, (question, name)


@pytest.mark.parametrize("question", QUESTIONS)
def test_bound_single_hammered_tool(boosted, question):
    boost, reach = boosted
    agent = f"eve-{question}"
    selector = reach.provider("selector")
    base = names(reach.tools(query=question, limit=3, agent=agent))
    fused = _fused(reach, question)
    kth = min(fused[n] for n in base)
    far = [n for n in ALL if fused[n] < kth - boost]
    _hammer(selector, agent, far, 5000)
    top = names(reach.tools(query=question, limit=3, agent=agent))
    assert not set(far) & set(top), (question, top)


def test_close_candidates_are_reordered_for_that_agent_only(tmp_path):
    reach = _prior_reach(tmp_path, usage_max_boost=2.0)
    selector = reach.provider("selector")
    question = "note the meeting date and time"  # two candidates within the boost
    first = names(reach.tools(query=question, limit=2, agent="alice"))
    assert set(first) == {"create_note", "create_calendar_event"}
    loser = first[1]
    for _ in range(30):  # alice keeps calling the runner-up when offered
        reach.tools(query=question, limit=2, agent="alice")
        selector.observe_call("alice", loser)
    assert names(reach.tools(query=question, limit=2, agent="alice"))[0] == loser
    assert names(reach.tools(query=question, limit=2, agent="bob")) == first  # no leak
    assert names(reach.tools(query=question, limit=2)) == first  # nor to the default agent


def test_inactive_below_min_calls(tmp_path):
    reach = build(tmp_path, {"usage_prior": True, "usage_min_calls": 50, "usage_max_boost": 2.0, "dense_gate": 0})
    selector = reach.provider("selector")
    first = names(reach.tools(query="note the meeting date and time", limit=2, agent="carol"))
    _hammer(selector, "carol", [first[1]], 49)
    assert names(reach.tools(query="note the meeting date and time", limit=2, agent="carol")) == first
    selector.observe_call("carol", first[1])
    assert names(reach.tools(query="note the meeting date and time", limit=2, agent="carol"))[0] == first[1]


async def test_calls_through_reach_are_counted_per_agent(tmp_path):
    reach = _prior_reach(tmp_path)
    reach.tools(query="weather", limit=3, agent="dave")
    for _ in range(3):
        result = await reach.invoke("get_weather", {"city": "Paris"}, agent="dave")
        assert result.ok
    usage = reach.provider("selector").usage()
    assert usage.calls("dave") == 3 and usage.calls("erin") == 0
    failed = await reach.invoke("get_weather", {"city": 5}, agent="dave")  # rejected: not counted
    assert not failed.ok and usage.calls("dave") == 3


@pytest.mark.parametrize("offered,called", [(0, 1), (1, 1), (10, 10), (1000, 1), (5, 500)])
def test_bonus_is_bounded_by_max_boost(offered, called):
    prior = UsagePrior(max_boost=1.0, min_calls=1)
    prior.seed("a", {"t": offered}, {"t": called})
    value = prior.bonuses("a")["t"]
    assert 0 < value < 1.0


def test_agent_table_is_bounded():
    prior = UsagePrior(min_calls=1)
    for i in range(MAX_AGENTS + 50):
        prior.record_call(f"agent-{i}", "t")
    assert len(prior._offered) == MAX_AGENTS
    assert prior.calls("agent-0") == 0 and prior.calls(f"agent-{MAX_AGENTS + 49}") == 1
