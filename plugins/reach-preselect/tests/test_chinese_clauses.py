"""Chinese clause markers split a question only where a clause starts.

Chinese has no spaces, so a marker such as 再 ("then, again"), 最后 ("finally"),
同时 ("at the same time") or 另外 ("besides") is also a part of ordinary words:
再生能源 (renewable energy), 最后一个 (the last one), 一家同时提供 (one that also
offers). Split anywhere, a one-intent question became two clauses, each ranked on half
its words. These markers now split after punctuation or at the start only (the
Chinese counterpart of the spaces the English markers need); 然后, 接着 and 以及,
which are never part of another word, still split anywhere.
"""

from __future__ import annotations

import pytest
from reach_preselect.text import clauses

ONE_INTENT = [
    "计算再生能源在总发电量中的比例",        # 再生 renewable
    "这个账户不再使用了，帮我注销",          # 不再 no longer (then a comma: still one intent after merge)
    "请再次发送验证码到我的手机",            # 再次 once more
    "把再保险合同的条款翻译成英文",          # 再保险 reinsurance
    "求列表最后一个元素的值",                # 最后一个 the last one
    "查询最后一班去上海的火车",              # 最后一班 the last train
    "在纳什维尔找一家同时提供小提琴课和吉他课的音乐学校",  # 同时 that also
    "找一个可以同时容纳两百人的会议室",      # 同时 at once
    "打开并且保存这个文件",                  # 并且 inside a verb pair (no punctuation)
    "我还要一杯咖啡的价格",                  # 还要 still want
    "查一下此外汇牌价",                      # 此外 across a word boundary (此|外汇)
    "另外一个城市的天气",                    # 另外 at the start: one clause is left
]


@pytest.mark.parametrize("question", ONE_INTENT)
def test_a_marker_inside_a_word_does_not_split(question: str) -> None:
    parts = clauses(question)
    assert len(parts) == 1, parts
    # nothing of the question is lost but a leading marker
    assert parts[0] in question


TWO_INTENTS = [
    ("先查北京天气，再订杭州的酒店", "订杭州的酒店"),
    ("先查北京天气,再订杭州的酒店", "订杭州的酒店"),                 # ASCII comma
    ("先查北京天气、再订杭州的酒店", "订杭州的酒店"),                 # enumeration comma
    ("查一下北京的天气。另外，把100美元换成欧元", "把100美元换成欧元"),
    ("查一下北京的天气。另外把100美元换成欧元", "把100美元换成欧元"),  # no comma after it
    ("查一下北京的天气？最后，提醒我明天开会", "提醒我明天开会"),
    ("查一下北京的天气！此外，翻译这句话", "翻译这句话"),
    ("查一下北京的天气；同时，订一张机票", "订一张机票"),
    ("查一下北京的天气 还要订一张机票", "订一张机票"),               # a space
    ("查一下北京的天气: 再订一张机票", "订一张机票"),                 # colon and space
    ("查一下北京的天气然后订一张机票", "订一张机票"),                 # 然后 anywhere
    ("查一下北京的天气接着订一张机票", "订一张机票"),                 # 接着 anywhere
    ("查一下北京的天气以及上海的航班", "上海的航班"),                 # 以及 anywhere
]


@pytest.mark.parametrize(("question", "second"), TWO_INTENTS, ids=[q for q, _ in TWO_INTENTS])
def test_a_marker_at_a_clause_start_splits(question: str, second: str) -> None:
    parts = clauses(question)
    assert len(parts) == 2, parts
    assert parts[1].strip(" ，,、：:") == second


def test_english_clauses_are_unchanged() -> None:
    assert clauses("Get the weather in Paris, then book a hotel there. Also convert 100 USD to EUR") == [
        "Get the weather in Paris", "book a hotel there.", "Also convert 100 USD to EUR"]
    assert clauses("Get the weather in Paris") == ["Get the weather in Paris"]
