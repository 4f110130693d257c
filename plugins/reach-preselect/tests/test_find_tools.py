"""The built-in find_tools tool: more tools on demand, within the agent's allow-list."""

from __future__ import annotations

from conftest import build


async def test_find_tools_returns_matching_tools_with_parameters(reach):
    result = await reach.invoke("find_tools", {"query": "send a message by email"})
    assert result.ok, result.error
    found = result.content["tools"]
    assert found[0]["name"] == "send_email"
    assert found[0]["parameters"]["properties"]["to"]
    assert all(t["name"] != "find_tools" for t in found)
    assert result.meta["offer_tools"] == [t["name"] for t in found]


async def test_find_tools_respects_the_agents_allow_list(tmp_path):
    reach = build(tmp_path, agents={"travel": {"allow": ["find_tools", "search_flights", "book_hotel"]}})
    result = await reach.invoke("find_tools", {"query": "send an email to my boss"}, agent="travel")
    assert result.ok, result.error
    found = {t["name"] for t in result.content["tools"]}
    assert found <= {"search_flights", "book_hotel"}
    assert "send_email" not in found


async def test_find_tools_limit_and_chinese(reach):
    result = await reach.invoke("find_tools", {"query": "查询天气", "limit": 2})
    assert result.ok, result.error
    assert len(result.content["tools"]) == 2
    assert "get_weather" in {t["name"] for t in result.content["tools"]}


async def test_find_tools_asks_again_when_query_is_empty(reach):
    result = await reach.invoke("find_tools", {"query": "  "})
    assert not result.ok
    assert result.error.code == "invalid_arguments"
    assert "query" in result.error.message


def test_find_tools_can_be_switched_off(tmp_path):
    reach = build(tmp_path, {"find_tools": False})
    assert "find_tools" not in {t.name for t in reach.all_tools()}
