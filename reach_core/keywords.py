"""The ranking ``reach.tools(query=...)`` uses when no selector plugin is installed.

Without it a query would be ignored and ``limit`` would cut the list in registration
order, dropping a tool that matches (``add`` for "sum") for one that does not. This is
deliberately plain: words of the query found in a tool's name, description and tags
(CJK text counts each character), ties kept in registration order, and every tool
that matches at all ranked before every tool that does not. For real selection,
install reach-preselect.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tool import Tool

__all__ = ["rank_by_keywords"]

_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_STOP = frozenset("a an and are as at be by do for from how i in is it me my of on or please the to use "
                  "what when which with you your".split())


def _words(text: str) -> set[str]:
    words: set[str] = set()
    for word in _WORD.findall(text.lower()):
        if _CJK.search(word):
            words.update(_CJK.findall(word))
        elif word not in _STOP:
            words.add(word)
    return words


def _score(query: set[str], tool: Tool) -> int:
    text = _words(" ".join([tool.name.replace("_", " "), tool.description or "", *tool.tags]))
    # a query word of 4+ letters also matches a longer word it starts ("temp" matches "temperature")
    return sum(1 for q in query if q in text or (len(q) >= 4 and any(w.startswith(q) for w in text)))


def rank_by_keywords(query: str, tools: Sequence[Tool]) -> list[Tool]:
    """``tools`` with the ones sharing words with ``query`` first, best first; the order is stable."""
    words = _words(query)
    if not words:
        return list(tools)
    scores = [_score(words, t) for t in tools]
    order = sorted(range(len(tools)), key=lambda i: -scores[i])
    return [tools[i] for i in order]
