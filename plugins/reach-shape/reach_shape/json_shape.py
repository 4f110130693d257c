"""JSON results cut by structure, never by bytes: keys and types stay, sizes shrink.

A byte cut leaves invalid JSON and drops whatever came last; a structural cut
keeps every key the model may need to reason about, the first items of long
arrays, head and tail of long strings (or, with a question, the passages that
match it) and collapses only what is nested too deep. Every cut is recorded
(:class:`Cut`) with the path that ``read_result`` takes to get it back.

The shaper walks only what it keeps, so shaping a 10,000-row result costs about
as much as the rows it shows. A ladder of ever tighter :class:`Limits` is
searched for the loosest one that fits the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .htmltext import html_to_text, looks_like_html
from .paths import join_index, join_key
from .text_shape import TextShaper

__all__ = ["LADDER", "Cut", "JsonShaper", "Limits", "error_paths", "html_strings_as_text", "is_error_key", "project"]

# keys that say a call (or part of it) failed; compared lowercased without `_`, `-` and spaces
_ERROR_KEYS = frozenset({
    "error", "errors", "err", "exception", "exceptions", "fault", "faults", "failure", "failures", "message",
    "detail", "details", "errormessage", "errormsg", "errorcode", "errordetail", "errordetails", "traceback",
    "stacktrace", "stderr", "problem", "problems",
})
#: nodes :func:`error_paths` looks at, at most (a huge result is searched this far)
ERROR_SCAN_NODES = 200_000
MAX_ERROR_PATHS = 5


def is_error_key(key: object) -> bool:
    if not isinstance(key, str) or len(key) > 40:
        return False
    return key.lower().replace("_", "").replace("-", "").replace(" ", "") in _ERROR_KEYS


def error_paths(value: Any, limit: int = MAX_ERROR_PATHS) -> list[str]:
    """Paths of the first error keys in ``value`` (breadth first, bounded), to check after a cut
    that none was left out unseen: a failure must never be hidden by shaping."""
    found: list[str] = []
    queue: list[tuple[str, Any]] = [("", value)]
    seen = 0
    i = 0
    while i < len(queue) and seen < ERROR_SCAN_NODES and len(found) < limit:
        path, v = queue[i]
        i += 1
        seen += 1
        if isinstance(v, dict):
            for k, x in v.items():
                p = join_key(path, str(k))
                if is_error_key(k) and x not in (None, "", [], {}, False):
                    found.append(p)
                    if len(found) >= limit:
                        break
                elif isinstance(x, (dict, list)):
                    queue.append((p, x))
        elif isinstance(v, list):
            queue.extend((join_index(path, j), x) for j, x in enumerate(v) if isinstance(x, (dict, list)))
        if i > 4096:  # keep the queue from holding what was already visited
            del queue[:i]
            i = 0
    return found


@dataclass(frozen=True, slots=True)
class Limits:
    """How much of each thing to keep at one rung of the ladder."""

    items: int  # first items of an array
    chars: int  # characters of a string
    depth: int  # nesting levels before collapsing
    keys: int   # keys of one object


LADDER: tuple[Limits, ...] = (
    Limits(400, 8000, 16, 1000),
    Limits(200, 4000, 14, 500),
    Limits(100, 3000, 13, 300),
    Limits(70, 2500, 12, 250),
    Limits(50, 2000, 12, 200),
    Limits(35, 1400, 11, 140),
    Limits(25, 1000, 10, 100),
    Limits(18, 700, 9, 80),
    Limits(12, 500, 8, 60),
    Limits(8, 300, 6, 40),
    Limits(5, 160, 5, 25),
    Limits(3, 100, 4, 15),
    Limits(2, 60, 3, 10),
    Limits(1, 40, 2, 6),
)


@dataclass(slots=True)
class Cut:
    """One thing left out: ``items``/``keys`` shown of total, ``chars`` kept of total, or ``collapsed``."""

    path: str
    kind: str
    shown: int
    total: int

    def describe(self) -> str:
        where = self.path or "the result"
        if self.kind == "items":
            return f"{where}: {self.shown} of {self.total:,} items shown"
        if self.kind == "keys":
            return f"{where}: {self.shown} of {self.total:,} keys shown"
        if self.kind == "chars":
            return f"{where}: {self.shown:,} of {self.total:,} chars shown"
        return f"{where}: nested too deep, collapsed ({self.total:,} {'items' if self.shown else 'keys'})"

    def read_call(self, handle: str) -> str:
        """A ``read_result`` call that fetches (the next part of) what was cut."""
        if self.kind == "items":
            return f'read_result(handle="{handle}", path="{self.path}[{self.shown}:{self.shown + 20}]")'
        if self.kind == "chars":
            return f'read_result(handle="{handle}", path="{self.path}", offset=0, limit=100)'
        if self.kind == "keys":
            return f'read_result(handle="{handle}", path="{self.path}", offset={self.shown}, limit=50)'
        return f'read_result(handle="{handle}", path="{self.path}")'


class JsonShaper:
    """Shapes one value at a given rung; remembers per-string text shapers across rungs."""

    def __init__(self, query: str | None = None, base_path: str = "") -> None:
        self.query = query
        self.base_path = base_path
        self._texts: dict[int, TextShaper] = {}
        #: multi-line strings the last :meth:`shape` cut with error lines in the cut part:
        #: path -> (the string's shaper, how many, where the first is)
        self.text_errors: dict[str, tuple[TextShaper, int, int]] = {}

    def shape(self, value: Any, limits: Limits) -> tuple[Any, list[Cut]]:
        cuts: list[Cut] = []
        self.text_errors = {}
        return self._walk(value, self.base_path, 0, limits, cuts), cuts

    def _walk(self, value: Any, path: str, depth: int, lim: Limits, cuts: list[Cut]) -> Any:
        if isinstance(value, str):
            return self._string(value, path, lim, cuts)
        if isinstance(value, dict):
            if not value:
                return value
            if depth >= lim.depth:
                keys = list(value)
                cuts.append(Cut(path, "collapsed", 0, len(keys)))
                more = ", …" if len(keys) > 4 else ""
                return f"{{…{len(keys)} keys: {', '.join(map(str, keys[:4]))}{more}}}"
            out: dict[str, Any] = {}
            for i, (k, v) in enumerate(value.items()):
                if i >= lim.keys:
                    cuts.append(Cut(path, "keys", lim.keys, len(value)))
                    # error keys past the limit are kept: a cut must not hide a failure
                    for ek in [k for k in list(value)[lim.keys:] if is_error_key(k)][:MAX_ERROR_PATHS]:
                        out[ek] = self._walk(value[ek], join_key(path, ek), depth + 1, lim, cuts)
                    break
                out[k] = self._walk(v, join_key(path, k), depth + 1, lim, cuts)
            return out
        if isinstance(value, list):
            if not value:
                return value
            if depth >= lim.depth:
                cuts.append(Cut(path, "collapsed", 1, len(value)))
                return f"[…{len(value)} items]"
            keep = value[: lim.items]
            if len(value) > lim.items:
                cuts.append(Cut(path, "items", lim.items, len(value)))
            return [self._walk(v, join_index(path, i), depth + 1, lim, cuts) for i, v in enumerate(keep)]
        return value

    def _string(self, value: str, path: str, lim: Limits, cuts: list[Cut]) -> str:
        if len(value) <= lim.chars:
            return value
        lines = "\n" in value
        shaper = self._texts.get(id(value))
        if shaper is None:  # (one line: no passages to find, only error lines)
            shaper = self._texts[id(value)] = TextShaper(value, self.query if lines else None)
        if lines:  # text (a file, a log, a page): whole lines, line offsets, matching passages
            text, _ = shaper.render(lim.chars)
            cuts.append(Cut(path, "chars", len(text), len(value)))
        else:  # one line (a message, JSON text with its newlines escaped): head and tail
            text = shaper.cut(lim.chars)
            cuts.append(Cut(path, "chars", lim.chars, len(value)))
        found = shaper.cut_errors()
        if found is not None:  # a log in a field (stdout, output, body): its cut errors are named too
            self.text_errors[path] = (shaper, *found)
        return text


def _field_tree(fields: list[str]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for field in fields:
        node = tree
        for part in field.replace("[]", "").split("."):
            if part:
                node = node.setdefault(part, {})
    return tree


def _project(value: Any, tree: dict[str, Any]) -> Any:
    if not tree:
        return value
    if isinstance(value, dict):
        return {k: _project(v, tree[k]) for k, v in value.items() if k in tree}
    if isinstance(value, list):
        return [_project(v, tree) for v in value]
    return value


def project(value: Any, fields: list[str]) -> tuple[Any, bool]:
    """Keep only ``fields`` (dotted paths; arrays are entered item by item).

    Returns the projection and whether it left anything out. A projection that
    matches nothing keeps the value whole: a misspelt field must not blank a result.
    """
    if not fields or not isinstance(value, (dict, list)):
        return value, False
    projected = _project(value, _field_tree(fields))
    if projected in ({}, []) or projected == value:
        return value, False
    return projected, True


def html_strings_as_text(value: Any, depth: int = 0,
                         mask: Callable[[str], str] | None = None) -> tuple[Any, list[str]]:
    """Replace long HTML strings near the top (an HTTP ``body``) with their visible text.

    Returns the new value and the paths converted; the stored full result holds the
    text too, so offsets in the shaped result and in ``read_result`` agree. ``mask``
    (the configured secrets' mask) is applied to each text: see ``Shaper.shape``.
    """
    converted: list[str] = []

    def walk(v: Any, path: str, level: int) -> Any:
        if isinstance(v, str):
            if len(v) > 2000 and looks_like_html(v):
                converted.append(path)
                text = html_to_text(v)
                return mask(text) if mask is not None else text
            return v
        if level >= 3:
            return v
        if isinstance(v, dict):
            return {k: walk(x, join_key(path, k), level + 1) for k, x in v.items()}
        return v

    out = walk(value, "", depth)
    return (out, converted) if converted else (value, [])
