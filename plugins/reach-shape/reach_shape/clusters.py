"""Where text may be cut: never inside a grapheme cluster (what a reader sees as one character).

A cut between an emoji and its skin tone, inside a ZWJ family or a flag's pair of
regional indicators, between a letter and its combining accent, between Hangul jamo,
between the halves of a surrogate pair or between CR and LF leaves broken characters
that a tokenizer spends tokens on and a model may misread. :func:`snap` moves a cut
position back (or forward) to the nearest boundary.

This is the part of Unicode's extended grapheme rules (UAX #29) that matters for cutting,
checked on the two characters around the cut only (plus the run of regional
indicators), so a cut costs O(1) however long the text is.
"""

from __future__ import annotations

import unicodedata

__all__ = ["is_boundary", "snap"]

_ZWJ = "\u200d"
_VIRAMA_LIMIT = 32  # a run of joiners longer than this is not text: cut anyway


def _extends(ch: str) -> bool:
    """Characters that attach to the one before them."""
    o = ord(ch)
    if o < 0x300:
        return False
    if (0xFE00 <= o <= 0xFE0F or 0x1F3FB <= o <= 0x1F3FF or 0xE0020 <= o <= 0xE007F or 0xE0100 <= o <= 0xE01EF
            or o == 0x200D or 0xDC00 <= o <= 0xDFFF):
        return True
    return unicodedata.category(ch) in ("Mn", "Me", "Mc")


def _regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def _hangul_joins(a: str, b: str) -> bool:
    oa, ob = ord(a), ord(b)
    lead = 0x1100 <= oa <= 0x115F
    vowel_a = 0x1160 <= oa <= 0x11A7
    vowel_b = 0x1160 <= ob <= 0x11A7
    trail_b = 0x11A8 <= ob <= 0x11FF
    syllable_a = 0xAC00 <= oa <= 0xD7A3
    if lead and (0x1100 <= ob <= 0x115F or vowel_b or 0xAC00 <= ob <= 0xD7A3):
        return True
    if (vowel_a or (syllable_a and (oa - 0xAC00) % 28 == 0)) and (vowel_b or trail_b):
        return True
    return (0x11A8 <= oa <= 0x11FF or syllable_a) and trail_b


def is_boundary(text: str, i: int) -> bool:
    """May ``text`` be cut before index ``i``?"""
    if i <= 0 or i >= len(text):
        return True
    a, b = text[i - 1], text[i]
    if a == "\r" and b == "\n":
        return False
    if a.isascii() and b.isascii():
        return True
    if _extends(b) or a == _ZWJ or 0xD800 <= ord(a) <= 0xDBFF:
        return False
    if _regional(a) and _regional(b):
        run = 0
        j = i - 1
        while j >= 0 and _regional(text[j]):
            run += 1
            j -= 1
        return run % 2 == 0
    if unicodedata.combining(a) == 9 and b.isalpha():  # a virama joins two consonants (क्ष)
        return False
    return not _hangul_joins(a, b)


def snap(text: str, i: int, *, forward: bool = False) -> int:
    """The boundary nearest ``i`` going back (or ``forward``); ``i`` itself when it is one."""
    i = max(0, min(i, len(text)))
    step = 1 if forward else -1
    for _ in range(_VIRAMA_LIMIT):
        if is_boundary(text, i):
            return i
        i += step
    return max(0, min(i, len(text)))
