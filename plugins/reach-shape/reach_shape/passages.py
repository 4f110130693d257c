"""Passages of a long text that best match the user's question (BM25 over lines or paragraphs).

Tokenising a megabyte of log in Python would cost more than the call it shapes,
so scoring works the other way round: each query term becomes a regular
expression run over the whole text at C speed, and only the passages that
contain a match are scored. A term matches words that start with it ("fail"
finds "failed", "failure"), which stands in for stemming.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass

from .clusters import snap

__all__ = ["Passage", "best_passages", "line_of", "query_terms"]

_WORD = re.compile(r"[A-Za-z0-9_]+|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_STOP = frozenset(
    "a an and are as at be but by did do does for from had has have how i if in into is it its me my "
    "no not of on or our please show so than that the their them then there these they this to us was "
    "we were what when where which who why will with you your tell find give get see any all".split()
)
_SUFFIXES = ("ing", "ed", "es", "s", "ly")
_BLANK = re.compile(r"\n[ \t\r]*\n\s*")
MAX_UNIT = 800  # characters; longer lines (minified HTML, JSON) are cut into windows
#: above this many characters the text is not lowered into a copy (50 MB of log would be
#: another 50-200 MB); terms are found with a case-insensitive regex on the text itself
LOWER_COPY_MAX = 1_000_000
#: positions one term may contribute: a term in every line says little and would fill memory
MAX_HITS = 5_000
#: more blank-line blocks than this: score by lines (a list per block would be large)
MAX_BLOCKS = 100_000


@dataclass(slots=True)
class Passage:
    """A span of the text, ``[start, end)`` in characters, with its score."""

    start: int
    end: int
    score: float = 0.0


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def query_terms(query: str | None) -> list[str]:
    """Distinct search terms of a question: stop words dropped, simple suffixes stripped;
    CJK text gives its characters and their pairs."""
    if not query:
        return []
    terms: list[str] = []
    for w in _WORD.findall(query.lower()):
        if _CJK.match(w):
            terms.append(w)
            continue
        if w in _STOP or (len(w) < 2 and not w.isdigit()):
            continue
        terms.append(_stem(w))
    cjk = "".join(c for c in query if _CJK.match(c))
    terms += [cjk[i:i + 2] for i in range(len(cjk) - 1)]
    seen: dict[str, None] = {}
    for t in terms:
        seen.setdefault(t, None)
    return list(seen)[:16]


def line_of(text: str, pos: int) -> int:
    """Line number (from 0) of the character at ``pos``; C-speed, no index needed."""
    return text.count("\n", 0, pos)


def _paragraphs(text: str) -> list[tuple[int, int]] | None:
    """Blank-line-separated blocks, when the text is made of many short ones; else ``None``."""
    if "\n\n" not in text:
        return None
    blocks: list[tuple[int, int]] = []
    pos = 0
    for m in _BLANK.finditer(text):
        if m.start() > pos:
            blocks.append((pos, m.start()))
        pos = m.end()
    if pos < len(text):
        blocks.append((pos, len(text)))
        if len(blocks) > MAX_BLOCKS:
            return None
    if len(blocks) >= 5 and sum(e - s for s, e in blocks) / len(blocks) < 1500:
        return blocks
    return None


class _LineUnits:
    """The line (or ``MAX_UNIT`` window of a long line) around a position, found on demand:
    a megabyte of log has tens of thousands of lines and only a few matter."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.count = text.count("\n") + 1
        self.avg = max(1.0, len(text) / self.count)

    def unit(self, pos: int) -> tuple[int, int]:
        start = self.text.rfind("\n", 0, pos) + 1
        end = self.text.find("\n", pos)
        end = len(self.text) if end == -1 else end
        if end - start > MAX_UNIT:
            start = snap(self.text, start + (pos - start) // MAX_UNIT * MAX_UNIT)
            end = snap(self.text, min(end, start + MAX_UNIT), forward=True)
        return start, end


class _SpanUnits:
    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = spans
        self.starts = [s for s, _ in spans]
        self.count = len(spans)
        self.avg = max(1.0, (spans[-1][1] - spans[0][0]) / len(spans)) if spans else 1.0

    def unit(self, pos: int) -> tuple[int, int] | None:
        i = bisect.bisect_right(self.starts, pos) - 1
        if i < 0 or pos >= self.spans[i][1]:
            return None
        return self.spans[i]


def _matches(text: str, low: str | None, term: str) -> list[int]:
    """Start positions of words beginning with ``term`` (case-insensitive), at most ``MAX_HITS``."""
    found: list[int] = []
    if low is None:
        boundary = "" if _CJK.match(term) else r"(?<![A-Za-z0-9_])"
        for m in re.finditer(boundary + re.escape(term), text, re.IGNORECASE):
            found.append(m.start())
            if len(found) >= MAX_HITS:
                break
        return found
    cjk = bool(_CJK.match(term))
    pos = low.find(term)
    while pos != -1 and len(found) < MAX_HITS:
        if cjk or pos == 0 or not (low[pos - 1].isalnum() or low[pos - 1] == "_"):
            found.append(pos)
        pos = low.find(term, pos + 1)
    return found


def best_passages(text: str, query: str | None, *, units: list[tuple[int, int]] | None = None,
                  limit: int = 20) -> list[Passage]:
    """Up to ``limit`` passages with a positive BM25 score, best first.

    ``units`` are the spans to score; by default paragraphs (for prose) or lines.
    """
    terms = query_terms(query)
    if not terms or not text:
        return []
    if units is None:
        paragraphs = _paragraphs(text)
        finder: _LineUnits | _SpanUnits = _SpanUnits(paragraphs) if paragraphs else _LineUnits(text)
    else:
        finder = _SpanUnits(units)
    low: str | None = None
    if len(text) <= LOWER_COPY_MAX:
        lowered = text.lower()
        if len(lowered) == len(text):  # a few characters change length when lowered: positions would drift
            low = lowered
    n = finder.count
    # rarest terms first; a term in most passages says little and costs the most: skip it
    # once a rarer term has matched
    freq = {t: (low.count(t) if low is not None else 0) for t in terms}
    tf: dict[tuple[int, int], dict[str, int]] = {}
    df: dict[str, int] = {}
    for term in sorted(terms, key=lambda t: freq[t]):
        if df and any(df.values()) and freq[term] > n / 2:
            continue
        hit_units: set[tuple[int, int]] = set()
        for pos in _matches(text, low, term):
            span = finder.unit(pos)
            if span is None:
                continue
            counts = tf.get(span)
            if counts is None:
                counts = tf[span] = {}
            counts[term] = counts.get(term, 0) + 1
            hit_units.add(span)
        df[term] = len(hit_units)
    avg = finder.avg
    k1, b = 1.2, 0.75
    idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items() if d}
    scored: list[Passage] = []
    for (s, e), counts in tf.items():
        norm = k1 * (1 - b + b * (e - s) / avg)
        score = sum(idf[t] * c * (k1 + 1) / (c + norm) for t, c in counts.items())
        # a passage that matches more distinct terms beats one that repeats a single term
        score *= 1 + 0.5 * (len(counts) - 1)
        scored.append(Passage(s, e, score))
    scored.sort(key=lambda p: (-p.score, p.start))
    return scored[:limit]
