"""Ranking quality on a small realistic tool set, in English and Chinese."""

from __future__ import annotations

import pytest
from conftest import build, names

ENGLISH = [
    ("What's the weather like in Paris right now?", "get_weather"),
    ("Will it rain in Berlin over the next three days?", "get_forecast"),
    ("How many euros do I get for 250 US dollars?", "convert_currency"),
    ("Email Bob that the meeting moved to Friday", "send_email"),
    ("Schedule a meeting with the design team tomorrow at 10am", "create_calendar_event"),
    ("Find me a flight from Boston to Chicago on May 3", "search_flights"),
    ("I need a hotel room in Rome for two nights", "book_hotel"),
    ("How do you say 'good morning' in Japanese?", "translate_text"),
    ("What is 17% of 2,340?", "calculate"),
    ("How many miles is 42 kilometres?", "convert_units"),
    ("What are today's headlines about electric cars?", "search_news"),
    ("Show total sales per region from the database", "run_sql_query"),
]

CHINESE = [
    ("北京今天天气怎么样？", "get_weather"),
    ("帮我把100美元换算成人民币", "convert_currency"),
    ("给张三发一封邮件，告诉他会议改到周五", "send_email"),
    ("查一下明天从上海到北京的航班", "search_flights"),
    ("把这句话翻译成英文", "translate_text"),
    ("明天早上八点提醒我买牛奶", "set_reminder"),
]


@pytest.mark.parametrize(("question", "expected"), ENGLISH)
def test_english_question_ranks_the_right_tool_near_the_top(reach, question, expected):
    top = names(reach.tools(query=question, limit=3))
    assert expected in top, top
    assert len(top) == 3


@pytest.mark.parametrize(("question", "expected"), CHINESE)
def test_chinese_question_finds_english_tools(reach, question, expected):
    top = names(reach.tools(query=question, limit=3))
    assert expected in top, top


def test_question_asking_two_things_gets_both_tools(reach):
    question = "Convert 300 dollars to yen. Also, what's the weather in Tokyo tomorrow?"
    top = names(reach.tools(query=question, limit=4))
    assert "convert_currency" in top
    assert {"get_weather", "get_forecast"} & set(top)


def test_limit_and_order_are_respected(reach):
    full = names(reach.tools(query="weather in Oslo", limit=16))
    assert full[:2] and set(full[:2]) == {"get_weather", "get_forecast"}
    assert len(full) == len(set(full))
    assert names(reach.tools(query="weather in Oslo", limit=1)) == full[:1]


def test_near_copies_do_not_crowd_the_top(tmp_path):
    from conftest import DeclaredTool

    reach = build(tmp_path)
    reach.register(DeclaredTool("get_weather_v2", "Current weather (temperature, wind, humidity) for a city.",
                                {"city": "City name, e.g. Paris"}, ("weather",)))
    top = names(reach.tools(query="What's the weather in Paris?", limit=2))
    assert "get_forecast" in top, top
    assert not {"get_weather", "get_weather_v2"} <= set(top)


def test_config_keywords_and_tags_steer_selection(tmp_path):
    question = "log my thoughts about the book"
    baseline = names(build(tmp_path / "a").tools(query=question, limit=1))
    steered = build(tmp_path / "b", {"keywords": {"create_note": ["journal", "log my thoughts"]}})
    assert names(steered.tools(query=question, limit=1)) == ["create_note"], baseline


def test_connector_keywords_from_core_config_are_used(tmp_path):
    reach = build(tmp_path, connectors={"run_sql_query": {"keywords": ["revenue", "营收"]}})
    assert names(reach.tools(query="上个季度的营收是多少", limit=1)) == ["run_sql_query"]


def test_pinned_tools_come_first(tmp_path):
    reach = build(tmp_path, {"pinned": ["read_file"]})
    top = names(reach.tools(query="weather in Rome", limit=3))
    assert top[0] == "read_file"
    assert "get_weather" in top


def test_adaptive_k_sends_fewer_tools_for_one_intent(tmp_path):
    reach = build(tmp_path, {"adaptive_k": True, "base_k": 2})
    assert len(reach.tools(query="weather in Rome", limit=8)) == 2
    several = reach.tools(query="Weather in Rome. Then book a hotel there. Also email Ann.", limit=8)
    assert len(several) == 4
    assert {"book_hotel", "send_email"} <= set(names(several))


def test_agent_allow_list_applies_before_ranking(tmp_path):
    reach = build(tmp_path, agents={"travel": {"allow": ["search_flights", "book_hotel"]}})
    assert set(names(reach.tools(query="weather in Rome", agent="travel", limit=5))) == {
        "search_flights", "book_hotel"}
    assert "get_weather" in names(reach.tools(query="weather in Rome", limit=2))


def test_ranking_every_tool_returns_every_allowed_tool_once(reach):
    # reach.tools(query=...) without a limit asks the selector to rank all tools
    ranked = names(reach.tools(query="Weather in Rome. Then book a hotel there."))
    assert sorted(ranked) == sorted(t.name for t in reach.all_tools())
    assert set(ranked[:3]) >= {"book_hotel"}
