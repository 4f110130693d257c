"""The ``city`` argument checked before any request: one line of a place name, nothing else.

A city goes into the geocoder's query string and its answer back to the model, so
what is refused here is refused before a byte leaves the process, with a message
that says what to send instead:

* control and format characters (NUL, newlines, zero-width, bidi overrides, BOM):
  invisible in a log or a reply, and a way to smuggle text (CRLF) into requests;
* overlong names and stacked combining marks ("Zalgo" text);
* URL and shell metacharacters (``? & # = % / \\ @ < > { } | ^ ` " [ ] ; $ * ! + ~``):
  no place name needs them, and a query that looks like a URL part is an injection
  attempt or a confused model;
* look-alikes: one word mixing Latin with Cyrillic or Greek letters (``Pаris`` with a
  Cyrillic ``а``): the answer would name a city the user did not type.

Width and style variants (fullwidth ``Ｂｅｉｊｉｎｇ``, mathematical letters) and odd spaces
are folded (NFKC) to the plain name: they are honest input from some keyboards.
"""

from __future__ import annotations

import unicodedata

from reach_core import InvalidArguments

__all__ = ["MAX_CITY_CHARS", "check_city"]

MAX_CITY_CHARS = 100
_MAX_MARKS = 2  # combining marks left on one letter after NFKC composes what it can
_PUNCTUATION = frozenset(" -'’ʼʻ.,()\u2010\u2011\u2012\u2013\u2014")  # hyphen, apostrophes, dashes (Winston–Salem)
_CONFUSABLE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")
_EXAMPLE = "Beijing"


def _refuse(why: str) -> InvalidArguments:
    return InvalidArguments(
        "city", message=f"`city` {why}; send just the place name, e.g. 'Beijing', '北京' or 'New York'."
    )


def check_city(value: object) -> str:
    """The city name to look up, or ``InvalidArguments`` saying what was wrong."""
    if not isinstance(value, str):
        raise InvalidArguments("city", "a city name (text)", _EXAMPLE)
    if any("\ud800" <= ch <= "\udfff" for ch in value):
        raise _refuse("contains a lone surrogate (half of an escaped character), which is not text")
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and ch not in "\u00a0":
            raise _refuse(f"contains the invisible or control character U+{ord(ch):04X}")
    name = " ".join(unicodedata.normalize("NFKC", value).split())
    if not name:
        raise _refuse("is empty")
    if len(name) > MAX_CITY_CHARS:
        raise _refuse(f"is {len(name)} characters long; a place name here has at most {MAX_CITY_CHARS}")
    marks = 0
    for ch in name:
        category = unicodedata.category(ch)
        if category.startswith("M"):
            marks += 1
            if marks > _MAX_MARKS:
                raise _refuse("stacks many combining marks on one letter")
            continue
        marks = 0
        if category[0] in "LN" or ch in _PUNCTUATION:
            continue
        raise _refuse(f"contains {ch!r}, which is not part of a place name (no URL, path or code characters)")
    for word in name.replace("-", " ").split():
        scripts = {_script(ch) for ch in word if ch.isalpha()} & set(_CONFUSABLE_SCRIPTS)
        if len(scripts) > 1:
            raise _refuse(
                f"mixes {' and '.join(sorted(s.title() for s in scripts))} letters in {word!r} (look-alike "
                "letters from another alphabet); type the name in one alphabet"
            )
    return name


def _script(ch: str) -> str:
    try:
        return unicodedata.name(ch).split(" ", 1)[0]
    except ValueError:
        return ""
