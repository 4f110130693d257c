"""``reach.tools(query=..., limit=...)`` with no selector installed never drops a matching
tool for one that does not match (it used to ignore the query and cut in registration order)."""

from __future__ import annotations

import pytest

from reach_core import Reach, connector


@connector(risk="read")
def get_weather(city: str) -> str:
    """Current weather for a city. Use when the user asks about weather or temperature."""
    return city


@connector(risk="read")
def search_docs(text: str) -> str:
    """Search the product documentation. Use for how-to questions."""
    return text


@connector(risk="write")
def append_note(text: str) -> str:
    """Append a line to the user's notebook. Use when the user wants to remember something."""
    return text


@connector(risk="read")
def convert_currency(amount: float, to: str) -> float:
    """Convert an amount of money to another currency (汇率换算)."""
    return amount


@connector(risk="read", tags=["computation"])
def add(a: int, b: int) -> int:
    """Add two integers. Use when the user asks for a sum."""
    return a + b


TOOLS = [get_weather, search_docs, append_note, convert_currency, add]


@pytest.fixture
def reach():
    r = Reach(plugins=[])
    for t in TOOLS:
        r.register(t)
    return r


def _names(entries):
    return [e["function"]["name"] for e in entries]


@pytest.mark.parametrize(("query", "expected"), [
    ("sum", "add"), ("what is the SUM of 2 and 3", "add"), ("add 2 and 3", "add"),
    ("computation please", "add"), ("note this down", "append_note"), ("remember my plan", "append_note"),
    ("temperature in Paris", "get_weather"), ("weather", "get_weather"), ("Weather?", "get_weather"),
    ("currency", "convert_currency"), ("convert 5 EUR", "convert_currency"), ("汇率", "convert_currency"),
    ("documentation search", "search_docs"), ("product questions", "search_docs"),
])
@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_matching_tool_is_never_cut_for_a_non_matching_one(reach, query, expected, limit):
    names = _names(reach.tools(query=query, limit=limit))
    assert len(names) == limit
    assert expected in names


def test_without_a_limit_every_allowed_tool_is_returned_matches_first(reach):
    names = _names(reach.tools(query="sum"))
    assert sorted(names) == sorted(t.name for t in TOOLS)
    assert names[0] == "add"


@pytest.mark.parametrize("query", ["", "   ", "the of and", "zzzz qqqq", "!!!"])
def test_a_query_without_matching_words_keeps_registration_order(reach, query):
    assert _names(reach.tools(query=query, limit=3)) == [t.name for t in TOOLS][:3]


def test_the_ranking_never_offers_a_tool_the_agent_may_not_use():
    r = Reach({"agents": {"support": {"deny": ["add"]}}}, plugins=[])
    for t in TOOLS:
        r.register(t)
    assert "add" not in _names(r.tools(agent="support", query="sum", limit=2))
    assert "add" in _names(r.tools(agent="other", query="sum", limit=2))
