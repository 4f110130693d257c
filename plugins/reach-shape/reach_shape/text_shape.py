"""Long text cut to a character budget: head and tail, plus the passages that match the question.

Logs put their context at the top and their outcome at the bottom, and the
line a question is about is usually somewhere in between; so with a question
most of the budget goes to the best-matching passages and the rest to head and
tail; without one, head and tail share it. Omitted stretches are marked with
the line offsets ``read_result`` takes, so the model can fetch exactly them.

A cut must not hide a failure: :meth:`TextShaper.cut_errors` finds the error lines
(``Traceback``, ``ERROR``, ``ValueError:``, ``FAILED``, ``fatal:``, ``panic:`` ...) that the
last rendering left out, for the notice; JSON results do the same with error keys.
"""

from __future__ import annotations

import bisect
import re

from .clusters import snap
from .passages import best_passages, line_of

__all__ = ["MAX_ERROR_LINES", "TextShaper", "cut_string"]

MAX_PASSAGE = 600
MIN_RELATIVE_SCORE = 0.4
MAX_ERROR_LINES = 100_000  # error lines counted at most (a log of nothing else is counted this far)
_NOT_NEWLINE = re.compile(r"[^\n]")


def _starts_word(letter: str) -> str:
    """After ``letter``: it starts a word (no word character before it), or follows an escaped
    newline or tab (``\\n``, whose ``n`` is a word character)."""
    return rf"(?:(?<!\w{letter})|(?<=\\[nrt]{letter}))"


# What error lines look like in the logs and outputs tools return: Python tracebacks and
# exception lines (`ValueError:`, `Error:`, `IllegalStateException:`, `Exception in thread`),
# log levels in capitals (not ERROR_CODES: a word character after), git's `fatal:`, Go's
# `panic:`, Rust's `error[E0308]:`, compilers' `file:3:5: error:`, npm's `ERR!`, logfmt's
# `level=error`, a crash. Words that only mention errors (`0 errors`, `no errors found`,
# `error_count=0`, `handle_error()`) do not match. Every branch starts with a literal
# character (word boundaries are checked by a lookbehind after it), so `re` skips ahead
# by the set of first characters: about 13 ns a character, 0.25 s for a 17 MB log
# (a leading `\b` took ten times as long). A log inside JSON text (another tool's answer
# kept as a string) has its newlines and tabs escaped: `\nERROR:` starts a line too.
_ERROR_LINE = re.compile(
    r"Traceback \(most recent call last\)"
    rf"|E{_starts_word('E')}RR(?:OR(?!\w)|!)"
    rf"|F{_starts_word('F')}A(?:TAL|IL(?:ED|URE))(?!\w)"
    rf"|C{_starts_word('C')}RITICAL(?!\w)"
    rf"|P{_starts_word('P')}ANIC(?!\w)"
    r"|E(?:rror|xception)(?::|(?= in thread))"
    rf"|e{_starts_word('e')}rror(?:\[\w+\])?:"
    rf"|f{_starts_word('f')}atal(?: error)?:"
    rf"|p{_starts_word('p')}anic:"
    rf"|l{_starts_word('l')}evel=\\?\"?(?:error|fatal|panic|critical)(?!\w)"
    r"|Segmentation fault"
)
# where a line ends: a newline, or one escaped in JSON text (the two characters `\n`)
_LINE_END = re.compile(r"\n|\\n")


def _middle(text: str, max_chars: int) -> tuple[int, int]:
    """Where :func:`cut_string` cuts ``text`` (longer than ``max_chars``): ``[head, start)``."""
    keep = max(max_chars, 16)
    head = snap(text, (keep * 2) // 3)
    return head, snap(text, len(text) - (keep - (keep * 2) // 3), forward=True)  # never split a character


def cut_string(text: str, max_chars: int) -> str:
    """Head and tail of ``text`` with a marker saying how much was cut from the middle."""
    if len(text) <= max_chars:
        return text
    head, start = _middle(text, max_chars)
    return f"{text[:head]}…[{start - head:,} chars cut]…{text[start:]}"


class TextShaper:
    """Finds the matching passages once; :meth:`render` builds a view for a character budget."""

    def __init__(self, text: str, query: str | None = None) -> None:
        self.text = text
        found = best_passages(text, query) if query else []
        # weak matches (one common word) would crowd out head and tail: keep the strong ones
        self.passages = [p for p in found if p.score >= found[0].score * MIN_RELATIVE_SCORE] if found else []
        self._lines: int | None = None
        self._errors: list[int] | None = None  # where error lines' markers are, found on first need
        self.shown: list[list[int]] = [[0, len(text)]]  # what the last render kept, as [start, end) spans

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
            self.shown = [[0, len(text)]]
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

    def cut(self, max_chars: int) -> str:
        """:func:`cut_string` of the text, remembered as shown for :meth:`cut_errors`: a string
        without lines (a long message, JSON text on one line) is cut in its middle."""
        if len(self.text) <= max_chars:
            self.shown = [[0, len(self.text)]]
            return self.text
        head, start = _middle(self.text, max_chars)
        self.shown = [[0, head], [start, len(self.text)]]
        return cut_string(self.text, max_chars)

    def cut_errors(self, *, nothing_shown: bool = False) -> tuple[int, int] | None:
        """Error lines the last :meth:`render` left out (all of them with ``nothing_shown``):
        how many (at most ``MAX_ERROR_LINES`` are looked at) and where the first one's marker
        is; ``None`` when there are none."""
        if self._errors is None:
            self._errors = []
            pos, text = 0, self.text
            while len(self._errors) < MAX_ERROR_LINES:
                m = _ERROR_LINE.search(text, pos)
                if m is None:
                    break
                self._errors.append(m.start())
                nl = _LINE_END.search(text, m.end())
                if nl is None:
                    break
                pos = nl.end()  # one count per line (escaped lines too)
        if nothing_shown:
            cut = self._errors
        else:
            starts = [s for s, _ in self.shown]
            cut = [p for p in self._errors if not self._is_shown(p, starts)]
        return (len(cut), cut[0]) if cut else None

    def _is_shown(self, pos: int, starts: list[int]) -> bool:
        i = bisect.bisect_right(starts, pos) - 1
        return i >= 0 and pos < self.shown[i][1]

    def line_at(self, pos: int, max_chars: int) -> str:
        """The line holding ``pos`` (lines escaped in JSON text count), at most ``max_chars``
        characters of it (cut between characters). A line that starts far before ``pos`` (one
        long line) is quoted from the word holding ``pos``, so the quote shows the error."""
        text = self.text
        start = max(text.rfind("\n", 0, pos) + 1, text.rfind("\\n", 0, pos) + 2 if "\\n" in text else 0)
        found = _LINE_END.search(text, pos)
        end = len(text) if found is None else found.start()
        lead = ""
        if pos - start > max_chars // 2:  # from the word holding the marker (`java.lang.IllegalStateException:`)
            space = text.rfind(" ", pos - max_chars // 3, pos)
            start = space + 1 if space != -1 else snap(text, pos - max_chars // 3)
            lead = "…"
        if end - start > max_chars:
            return lead + text[start:snap(text, start + max_chars)].rstrip("\r") + "…"
        return lead + text[start:end].rstrip("\r")

    def _join(self, spans: list[tuple[int, int]]) -> str:
        merged: list[list[int]] = []
        for s, e in sorted(sp for sp in spans if sp[1] > sp[0]):
            if merged and s <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        self.shown = merged
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
