"""Long text cut to a character budget: head and tail, plus the passages that match the question.

Logs put their context at the top and their outcome at the bottom, and the
line a question is about is usually somewhere in between; so with a question
most of the budget goes to the best-matching passages and the rest to head and
tail; without one, head and tail share it. Omitted stretches are marked with
the line offsets ``read_result`` takes, so the model can fetch exactly them.
"""

from __future__ import annotations

import re

from .clusters import snap
from .passages import best_passages, line_of

__all__ = ["TextShaper", "cut_string"]

MAX_PASSAGE = 600
MIN_RELATIVE_SCORE = 0.4
_NOT_NEWLINE = re.compile(r"[^\n]")


def cut_string(text: str, max_chars: int) -> str:
    """Head and tail of ``text`` with a marker saying how much was cut from the middle."""
    if len(text) <= max_chars:
        return text
    keep = max(max_chars, 16)
    head = snap(text, (keep * 2) // 3)
    start = snap(text, len(text) - (keep - (keep * 2) // 3), forward=True)  # never split a character
    cut = start - head
    return f"{text[:head]}…[{cut:,} chars cut]…{text[start:]}"


class TextShaper:
    """Finds the matching passages once; :meth:`render` builds a view for a character budget."""

    def __init__(self, text: str, query: str | None = None) -> None:
        self.text = text
        found = best_passages(text, query) if query else []
        # weak matches (one common word) would crowd out head and tail: keep the strong ones
        self.passages = [p for p in found if p.score >= found[0].score * MIN_RELATIVE_SCORE] if found else []
        self._lines: int | None = None

    @property
    def total_lines(self) -> int:
        if self._lines is None:
            self._lines = self.text.count("\n") + 1
        return self._lines

    def line_of(self, pos: int) -> int:
        return line_of(self.text, pos)

    def _head(self, n: int) -> tuple[int, int]:
        if n <= 0:
            return (0, 0)
        if n >= len(self.text):
            return (0, len(self.text))
        cut = self.text.rfind("\n", 0, n + 1)
        return (0, cut + 1 if cut > 0 else snap(self.text, n))  # whole lines, or part of a long first line

    def _tail(self, n: int) -> tuple[int, int]:
        size = len(self.text)
        if n <= 0:
            return (size, size)
        if n >= size:
            return (0, size)
        nl = self.text.find("\n", size - n - 1)
        return (nl + 1 if nl != -1 and nl + 1 < size else snap(self.text, size - n, forward=True), size)

    def render(self, char_budget: int) -> tuple[str, int]:
        """The shaped text and how many matching passages it shows.

        With matching passages, they get up to 70% of the budget; whatever they
        leave goes to head (60%) and tail (40%).
        """
        text = self.text
        if len(text) <= char_budget:
            return text, 0
        spans: list[tuple[int, int]] = []
        used = 0
        match_n = int(char_budget * 0.7) if self.passages else 0
        for p in self.passages:
            s, e = p.start, snap(text, min(p.end, p.start + MAX_PASSAGE))
            if used + (e - s) > match_n:
                continue
            spans.append((s, e))
            used += e - s
        rest = char_budget - used
        spans += [self._head(int(rest * 0.6)), self._tail(int(rest * 0.4))]
        return self._join(spans), len(spans) - 2
    def _join(self, spans: list[tuple[int, int]]) -> str:
        merged: list[list[int]] = []
        for s, e in sorted(sp for sp in spans if sp[1] > sp[0]):
            if merged and s <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        out: list[str] = []
        prev = 0
        for s, e in merged:
            if s > prev:
                out.append(self._gap(prev, s))
            piece = self.text[s:e].strip("\n")
            out.append(piece[:-1] if piece.endswith("\r") else piece)  # a CRLF goes whole, never half
            prev = e
        if prev < len(self.text):
            out.append(self._gap(prev, len(self.text)))
        return "\n".join(x for x in out if x)

    def _gap(self, start: int, end: int) -> str:
        if _NOT_NEWLINE.search(self.text, start, end) is None:  # (no slice: the gap can be most of the text)
            return ""
        while self.text[start] == "\n":
            start += 1
        a, b = self.line_of(start), self.line_of(max(start, end - 1))
        if a == b:
            return f"[… {end - start:,} chars of line {a} omitted …]"
        return f"[… {b - a + 1:,} lines omitted (offset {a}-{b}) …]"
