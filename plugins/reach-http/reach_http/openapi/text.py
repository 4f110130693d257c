"""What an OpenAPI document says to the model, made plain and bounded.

An operation's summary and description, and every ``description``, ``title`` and
``examples`` in its schemas, become part of a tool declaration the model reads and a
person may review (``reach http import``, ``reach tools``). A document is written by
someone else (a vendor, a public URL that may change), so its prose is treated as
untrusted text:

* characters that are invisible or act on a terminal are removed: control characters
  (ESC sequences, CR, backspace, C1), format characters (bidi overrides and isolates,
  zero-width spaces and joiners, the invisible "tag" letters U+E0000-E007F that spell
  instructions a person cannot see), surrogates, private-use and unassigned code
  points, variation selectors and the blank Hangul fillers; a line or paragraph
  separator becomes a newline, tabs and newlines stay;
* each text is cut at a length (with a marker saying how much was cut), and all the
  prose of one tool at a total, past which further descriptions are left out.

The words themselves are left alone: whether a text is an instruction aimed at the
model cannot be decided by looking for words, and nothing here tries. What a tool may
do (its risk tier, its name) comes from the HTTP method and the settings, never from
this text (see :mod:`.operations`).

Strings a request depends on (the path, parameter and property names, ``enum``,
``const``, ``default``, ``pattern`` ...) cannot be changed without changing what is
sent; an operation whose such strings hold these characters is skipped instead
(:func:`hidden_characters` finds them).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from .schema import _SCHEMA_LISTS, _SCHEMA_MAPS, _SCHEMA_ONE

__all__ = ["MAX_TEXT", "MAX_TOOL_TEXT", "Cleaner", "hidden", "hidden_characters", "printable", "sent_strings"]

MAX_TEXT = 500
"""Characters one description, title or example string in a tool's schema may keep."""
MAX_TOOL_TEXT = 16_000
"""Characters of prose (descriptions, titles, examples) one tool's declaration may hold in all."""

_REMOVED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
_INVISIBLE = frozenset({0x034F, 0x115F, 0x1160, 0x180B, 0x180C, 0x180D, 0x180F, 0x3164, 0xFFA0})
"""Combining grapheme joiner, Hangul fillers, Mongolian variation selectors: render as nothing."""


def hidden(c: str) -> bool:
    """Whether ``c`` is removed from prose (and escaped where a document's text is printed): tab and
    newline stay; line and paragraph separators are handled by the callers."""
    if c in "\t\n":
        return False
    code = ord(c)
    return (
        unicodedata.category(c) in _REMOVED_CATEGORIES
        or code in _INVISIBLE
        or 0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
    )


_PROSE = ("description", "title")
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"              # CSI: cursor moves, erase line, colours
    r"|\x9b[0-?]*[ -/]*[@-~]"                # the same with the one-byte C1 introducer
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC (hyperlinks, titles), DCS, SOS, PM, APC
    r"|\x1b[ -/]*[0-~]"                      # two- and three-character escapes
)
"""Terminal escape sequences, removed whole: removing only ESC would leave ``[2K`` in the text."""


def sent_strings(node: Any) -> list[Any]:
    """What of an inlined schema a request may carry or a validator matches, unlike its prose:
    property names, ``enum``, ``const``, ``default``, ``pattern``, ``format``, ``required`` ...
    (for :func:`hidden_characters`; ``description``, ``title`` and ``examples`` are left out)."""
    found: list[Any] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if not isinstance(item, dict):
            continue
        for key, value in item.items():
            if key in _PROSE or key == "examples":
                continue
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                found.extend(value.keys())
                stack.extend(value.values())
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend(value)
            elif key in _SCHEMA_ONE:
                stack.append(value)
            else:
                found.append(value)
    return found


def _name(c: str) -> str:
    return f"U+{ord(c):04X}"


def printable(text: str) -> str:
    """``text`` from a document, safe to print on a terminal or write to a log: control, format and
    line-separator characters (ESC sequences, CR, LF, backspace, C1 CSI, right-to-left override,
    U+2028) and every other :func:`hidden` character escaped (``\\x1b``, ``\\u202e``).

    The import listing is where a person reviews what the model will be able to do; a hostile
    document's path or media type printed raw could erase or overwrite the line of a DELETE.
    """
    return "".join(
        c.encode("unicode_escape", "backslashreplace").decode("ascii")
        if hidden(c) or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c
        for c in text
    )


def hidden_characters(value: Any) -> list[str]:
    """The code points (``U+202E``) of removable characters in ``value``: a string, or every key and
    string inside lists and dicts; line and paragraph separators count too (nothing is allowed to be
    rewritten in a string that is sent)."""
    found: dict[str, None] = {}
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            for c in item:
                if hidden(c) or unicodedata.category(c) in ("Zl", "Zp"):
                    found[_name(c)] = None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return list(found)


@dataclass
class Cleaner:
    """Cleans the prose of one tool, keeping count of what it changed (for the import listing)."""

    budget: int = MAX_TOOL_TEXT
    removed: dict[str, int] = field(default_factory=dict)
    cut: dict[int, int] = field(default_factory=dict)
    """Texts cut, by the limit they were cut at."""
    dropped: int = 0

    def text(self, value: str, limit: int = MAX_TEXT) -> str | None:
        """``value`` cleaned and cut at ``limit``; ``None`` once the tool's budget is spent."""
        out: list[str] = []
        value, escapes = _ESCAPE_SEQUENCE.subn("", value.replace("\r\n", "\n"))
        if escapes:
            self.removed["escape sequence"] = self.removed.get("escape sequence", 0) + escapes
        for c in value:
            if unicodedata.category(c) in ("Zl", "Zp"):
                out.append("\n")
                self.removed[_name(c)] = self.removed.get(_name(c), 0) + 1
            elif hidden(c):
                self.removed[_name(c)] = self.removed.get(_name(c), 0) + 1
            else:
                out.append(c)
        text = "".join(out)
        if len(text) > limit:
            marker = f"… [{len(text) - limit} more characters cut]"
            text = text[:limit].rstrip() + marker
            self.cut[limit] = self.cut.get(limit, 0) + 1
        if len(text) > self.budget:
            self.dropped += 1
            self.budget = 0
            return None
        self.budget -= len(text)
        return text

    def schema(self, node: Any) -> Any:
        """``node`` (an inlined JSON Schema) with every ``description``/``title`` and example string
        cleaned; a description past the tool's budget is left out. Only schema keywords are walked
        into: ``enum``, ``const``, ``default`` and the like are values a request may carry, copied
        as they are (see :func:`sent_strings`)."""
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _PROSE:  # a description or title that is no string (a list, an object) is left out
                cleaned = self.text(value) if isinstance(value, str) else None
                if cleaned is not None:
                    out[key] = cleaned
            elif key == "examples":
                out[key] = self._examples(value)
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {k: self.schema(v) for k, v in value.items()}
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self.schema(v) for v in value]
            elif key in _SCHEMA_ONE:
                out[key] = self.schema(value)
            else:
                out[key] = value
        return out

    def _examples(self, value: Any) -> Any:
        if isinstance(value, str):
            cleaned = self.text(value)
            return cleaned if cleaned is not None else ""
        if isinstance(value, list):
            return [self._examples(v) for v in value]
        if isinstance(value, dict):
            return {self.text(str(k)) or "": self._examples(v) for k, v in value.items()}
        return value

    def changes(self) -> list[str]:
        """What was changed, in words (empty when nothing was)."""
        said: list[str] = []
        if self.removed:
            total = sum(self.removed.values())
            kinds = ", ".join(sorted(self.removed)[:8]) + (" ..." if len(self.removed) > 8 else "")
            said.append(f"removed {total} control or invisible character(s) or escape sequence(s) ({kinds})")
        for limit, count in sorted(self.cut.items()):
            said.append(f"cut {count} text(s) longer than {limit} characters")
        if self.dropped:
            said.append(f"left out {self.dropped} description(s) past {MAX_TOOL_TEXT} characters of text")
        return said
