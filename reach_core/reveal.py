"""Characters a person cannot see, made visible before a person reads model text.

A model (or whoever feeds it) can hide things in text a person reads before approving
a call: a right-to-left override (U+202E) makes ``exe.txt`` read as ``txt.exe``,
zero-width and tag characters (U+E0000..U+E007F) carry words nobody sees, a carriage
return or a line separator starts a line that looks like the tool's own, an ESC
sequence erases a terminal line and writes another. :func:`reveal_text` shows every
such character as its code point, ``⟨U+202E⟩``. It is the one rule for every place a
person reads model text: reach-serve's console (every rendered value) and
reach-confirm's summaries and ``reach confirm`` output use it, so a person sees the
same marking in the CLI prompt and in the browser.

What counts as hidden: control characters other than newline and tab; format
characters (Unicode category Cf: bidi controls, zero-width characters, soft hyphen,
BOM, tag characters); line and paragraph separators; unassigned, private-use and
surrogate code points; variation selectors not directly after a visible character (a
run of them encodes bytes); invisible fillers (Hangul fillers, combining grapheme
joiner, braille blank). More than four combining marks on one letter ("Zalgo" text,
drawn over the lines above and below, where the console's own buttons and banners
are) are counted instead of stacked, and so are more than sixteen spaces in a row
after text (a wall of spaces pushes what follows out of the box a person reads).
Printable text in every script, emoji included, is left as it is.

Speed: one regular expression finds candidates with a class of Basic Multilingual
Plane characters only (which ``re`` checks with a bitmap, whatever its size); the few
candidates are then judged one by one. A megabyte of text takes milliseconds.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["MAX_MARKS", "MAX_RUN", "MAX_SPACES", "clip", "hidden", "reveal_text"]

MAX_MARKS = 4  # combining marks on one letter (Vietnamese stacks two, Hebrew cantillation three or four)
MAX_SPACES = 16  # spaces in a row after text: more push what follows out of sight, so they are counted
MAX_RUN = 8  # hidden characters in a row spelled out one by one; a longer run is counted, not listed

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"})
_FILLERS = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
_VS = frozenset(map(chr, [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)]))
_SPACE_RUN = re.compile(rf"(?<=\S)[ \u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]{{{MAX_SPACES + 1},}}")

HIDDEN, SELECTOR, MARK, PLAIN = 0, 1, 2, 3


def hidden(char: str) -> bool:
    """Whether one character is invisible or steers how others are shown (newline and tab are not)."""
    if char in "\n\t":
        return False
    return unicodedata.category(char) in _HIDDEN_CATEGORIES or char in _FILLERS


def _kind_of(char: str) -> int:
    if hidden(char):
        return HIDDEN
    if char in _VS:
        return SELECTOR
    if unicodedata.category(char) in ("Mn", "Me"):
        return MARK
    return PLAIN


_kind = lru_cache(maxsize=4096)(_kind_of)


def _candidates() -> re.Pattern[str]:
    """Any character outside the BMP, or a BMP character that is not plain."""
    ranges: list[tuple[int, int]] = []
    for code in range(0x10000):
        if _kind_of(chr(code)) != PLAIN:
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    plain = "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b != a else "") for a, b in ranges)
    return re.compile(f"[^{plain}]+")


_PATTERN: list[re.Pattern[str]] = []  # built on first use (~50 ms), then kept: a constant


def _pattern() -> re.Pattern[str]:
    if not _PATTERN:
        _PATTERN.append(_candidates())
    return _PATTERN[0]


def _spell(run: str) -> str:
    shown = "".join(f"⟨U+{ord(c):04X}⟩" for c in run[:MAX_RUN])
    if len(run) > MAX_RUN:
        shown += f"⟨{len(run) - MAX_RUN} more hidden characters⟩"
    return shown


def _judge(match: re.Match[str]) -> str:
    """A run of candidates as shown: hidden characters spelled, the rest kept or counted."""
    text, start = match.string, match.start()
    before = _kind(text[start - 1]) if start else HIDDEN  # what the first candidate follows
    out: list[str] = []
    run = match.group()
    i = 0
    while i < len(run):
        kind = _kind(run[i])
        j = i + 1
        while j < len(run) and _kind(run[j]) == kind:
            j += 1
        piece = run[i:j]
        if kind == HIDDEN:
            out.append(_spell(piece))
        elif kind == SELECTOR:
            # one selector right after a visible character is how emoji are drawn; any other hides data
            out.append(piece if len(piece) == 1 and before in (PLAIN, MARK) else _spell(piece))
        elif kind == MARK and len(piece) > MAX_MARKS and before == PLAIN:
            out.append(f"{piece[:MAX_MARKS]}⟨{len(piece) - MAX_MARKS} more combining marks⟩")
        else:
            out.append(piece)
        before = kind
        i = j
    return "".join(out)


def reveal_text(text: str, *, one_line: bool = False) -> str:
    """``text`` with every hidden character spelled ``⟨U+XXXX⟩`` (runs counted past ``MAX_RUN``),
    Zalgo marks past ``MAX_MARKS`` and space walls past ``MAX_SPACES`` counted; the rest as is.
    The markers hold no ``<``, ``&``, quote or backslash, so they are safe inside HTML and JSON text.

    ``one_line``: newline and tab are spelled too, for text that must stay on its line
    (a summary, a line of ``reach confirm list``), where a newline would start a line
    that looks like the tool's own."""
    if text.isascii() and text.isprintable():
        shown = text
    else:
        shown = _pattern().sub(_judge, text)
    if " " * (MAX_SPACES + 1) in shown or not shown.isascii():
        shown = _SPACE_RUN.sub(lambda m: f" ⟨{len(m.group())} spaces⟩ ", shown)
    if one_line and ("\n" in shown or "\t" in shown):
        shown = shown.replace("\n", "⟨U+000A⟩").replace("\t", "⟨U+0009⟩")
    return shown


def clip(text: str, n: int) -> str:
    """The first ``n`` characters of ``text`` (revealed text), ending before a ``⟨U+202E⟩``
    marker the cut would split: half a marker (``⟨U+20``) no longer says what was hidden."""
    head = text[:n]
    start = head.rfind("⟨")
    if start != -1 and "⟩" not in head[start:] and "⟩" in text[n:]:
        return head[:start]
    return head
