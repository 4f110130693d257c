"""The per-``Reach`` shaper: decides whether a result needs shaping, shapes it, keeps the full one.

Most results fit their budget, so the first question is answered from the
result's (cached) JSON length alone; tokens are counted only for results near
the budget, and the full shaping machinery runs only for those over it.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reach_core import ToolResult
from reach_core.result import dumps
from reach_core.reveal import reveal_text

from .htmltext import html_to_text, looks_like_html
from .json_shape import LADDER, MAX_ERROR_PATHS, Cut, JsonShaper, error_paths, html_strings_as_text, project
from .paths import PathError, resolve
from .search import json_matches
from .settings import ShapeSettings, ToolShape
from .store import ResultStore
from .text_shape import MAX_ERROR_LINES, TextShaper
from .tokens import TokenCounter, surely_fits

__all__ = ["Shaped", "Shaper", "render_as_text", "summarize_cuts"]

#: a result longer than this many characters per budget token is over budget without counting
_COUNT_LIMIT = 12
_MAX_CUT_LINES = 6


@dataclass(slots=True)
class Shaped:
    """What shaping produced, before it becomes a ``ToolResult``."""

    content: Any
    tokens: int
    view: Any  # what read_result reads: the original, or HTML as text, or JSON as text
    handle_note: str = ""
    facts: dict[str, Any] = field(default_factory=dict)


def render_as_text(value: Any) -> str:
    """JSON as text, one value per line: text mode for tools whose JSON is really a document."""
    return json.dumps(value, ensure_ascii=False, indent=1)


def summarize_cuts(cuts: list[Cut]) -> list[str]:
    """One line per kind of cut; repeated cuts in array items are counted, not listed."""
    groups: dict[tuple[str, str], list[Cut]] = {}
    for c in cuts:
        groups.setdefault((re.sub(r"\[\d+\]", "[*]", c.path), c.kind), []).append(c)
    lines = []
    for (pattern, _kind), members in groups.items():
        first = members[0]
        if len(members) == 1:
            lines.append(first.describe())
        else:
            lines.append(f"{pattern}: cut in {len(members)} places (e.g. {first.describe()})")
    if len(lines) > _MAX_CUT_LINES:
        rest = len(lines) - _MAX_CUT_LINES
        lines = lines[:_MAX_CUT_LINES] + [f"… and {rest} more cuts"]
    return lines


def _shown(value: Any, path: str) -> bool:
    """Is the value at ``path`` (a path into the full result) still in the shaped ``value``?"""
    try:
        found = resolve(value, path)
    except PathError:
        return False
    return not (isinstance(found, str) and found.startswith(("{…", "[…")))


def _short_path(path: str, most: int = 120) -> str:
    """A path short enough for the note (a path 300 levels deep would cost more than the budget)."""
    if len(path) <= most:
        return path
    return f"{path[: most // 2 - 1]}…{path[-(most // 2):]}"


class Shaper:
    """Settings, token counter and handle store of one ``Reach``."""

    def __init__(self, settings: ShapeSettings) -> None:
        self.settings = settings
        self.counter = TokenCounter(settings.tokenizer)
        self.store = ResultStore(
            run_ttl=settings.run_ttl, bare_ttl=settings.bare_ttl,
            max_entries=settings.max_entries, max_bytes=settings.max_bytes,
        )
        self._rules: dict[str, tuple[int, ToolShape | None]] = {}

    def rule(self, tool: str) -> tuple[int, ToolShape | None]:
        found = self._rules.get(tool)
        if found is None:
            ts = self.settings.for_tool(tool)
            budget = ts.budget if ts is not None and ts.budget else self.settings.default_budget
            found = self._rules[tool] = (budget, ts)
        return found

    def quick_fit(self, tool: str) -> int:
        """The JSON length up to which a result of ``tool`` surely needs no shaping (decided
        once per tool; the plugin caches it): a token is at least one byte, so a result of
        at most ``budget // 4`` characters fits. ``-1`` when fields are configured (always
        asked), ``sys.maxsize`` when shaping is off for the tool."""
        budget, ts = self.rule(tool)
        if ts is not None and ts.mode == "off":
            return sys.maxsize
        if ts is not None and ts.fields:
            return -1
        return budget // 4

    def count(self, text: str) -> int:
        return self.counter.count(text)

    def fits(self, text: str, budget: int) -> bool:
        """Cheap first: byte length bounds the token count; count only near the budget."""
        if surely_fits(text, budget):
            return True
        if len(text) > budget * _COUNT_LIMIT:
            return False
        return self.count(text) <= budget

    # ------------------------------------------------------------ deciding
    def needs_shaping(self, result: ToolResult, tool: str) -> tuple[bool, int, ToolShape | None]:
        budget, ts = self.rule(tool)
        if ts is not None and ts.mode == "off":
            return False, budget, ts
        if ts is not None and ts.fields and isinstance(result.content, (dict, list)):
            return True, budget, ts
        return not self.fits(result.to_json(), budget), budget, ts

    # ------------------------------------------------------------ shaping (pure: may run in a thread)
    def shape(self, content: Any, *, budget: int, rule: ToolShape | None, query: str | None,
              handle: Callable[[Any], str | None], over: bool = True,
              mask: Callable[[str], str] | None = None) -> Shaped | None:
        """Shape ``content``; ``handle(view)`` keeps the full view and returns its handle.

        ``over`` says whether the whole result is over budget (known from
        :meth:`needs_shaping`). Returns ``None`` when nothing needs to change.
        ``mask`` masks the configured secrets in the text an HTML page becomes, before it
        is cut or kept: dropping the markup can join a secret the core found nowhere in
        the page (``sk-<b>live</b>-…``, a comment inside it), and a cut would split it.
        """
        mode = rule.mode if rule is not None else "auto"
        if isinstance(content, str) or mode == "text":
            text = content if isinstance(content, str) else render_as_text(content)
            facts: dict[str, Any] = {}
            if isinstance(content, str) and looks_like_html(text):
                text = html_to_text(text)
                if mask is not None:
                    text = mask(text)
                facts["html"] = True
            if not facts and not over:
                return None
            return self._shape_text(text, budget=budget, query=query, handle=handle, facts=facts)
        return self._shape_json(content, budget=budget, fields=rule.fields if rule else [], query=query,
                                handle=handle, over=over, mask=mask)

    def _shape_json(self, content: Any, *, budget: int, fields: list[str], query: str | None,
                    handle: Callable[[Any], str | None], over: bool,
                    mask: Callable[[str], str] | None = None) -> Shaped | None:
        projected, narrowed = project(content, fields)
        if not narrowed and not over:
            return None
        facts: dict[str, Any] = {"kind": "json"}
        content, html_paths = html_strings_as_text(content, mask=mask)
        if html_paths:
            projected, _ = project(content, fields)
            facts["html"] = html_paths
        h = handle(content)
        errors = error_paths(projected)

        matches: list[str] | None = None
        shaper = JsonShaper(query)

        def wrap(value: Any, cuts: list[Cut], compact: bool = False) -> Any:
            nonlocal matches
            note: dict[str, Any] = {}
            if cuts:
                note["note"] = f"result cut to fit {budget:,} tokens"
                note["cut"] = summarize_cuts(cuts)[: 1 if compact else None]
                hidden = [p for p in errors if not _shown(value, p)]
                if hidden:  # a failure in the part cut away is named, never hidden
                    note["errors_in_cut_part"] = [_short_path(p) for p in hidden[: 1 if compact else None]]
                lines = [_text_errors_entry(p, *found, compact) for p, found in shaper.text_errors.items()]
                if lines:  # and so is one in the cut part of a long text field
                    note["error_lines_in_cut_part"] = lines[: 1 if compact else MAX_ERROR_PATHS]
                if query and h and not compact:
                    if matches is None:  # very long paths (deep trees) cost more than they help
                        matches = [p for p, _ in json_matches(content, query, limit=3)[0] if len(p) <= 300]
                    if matches:
                        note["best_matches_for_question"] = matches
            if narrowed:
                note["fields"] = f"only the fields {', '.join(fields)} are shown"
            if html_paths:
                note["html_as_text"] = html_paths
            if h:
                note["handle"] = h
                note["read_more"] = (cuts[0].read_call(h) if cuts else f'read_result(handle="{h}")') + (
                    "; paths are into the full result; add query=\"...\" to search it"
                )
            else:
                note["full_result"] = "too large to keep; ask for less (filters, a smaller page)"
            if isinstance(value, dict) and "_shaped" not in value:
                return {"_shaped": note, **value}
            return {"_shaped": note, "content": value}

        if narrowed:
            payload = wrap(projected, [])
            text = dumps(payload)
            if self.fits(text, budget):
                return Shaped(payload, self.count(text), content, h or "", facts)
        lo, hi = 0, len(LADDER) - 1
        best: tuple[Any, int] | None = None
        while lo <= hi:  # the loosest rung that fits
            mid = (lo + hi) // 2
            value, cuts = shaper.shape(projected, LADDER[mid])
            payload = wrap(value, cuts)
            tokens = self.count(dumps(payload))
            if tokens <= budget:
                best, hi = (payload, tokens), mid - 1
            else:
                lo = mid + 1
        if best is None:  # even the tightest rung is too big: a shorter note, then only a summary
            value, cuts = shaper.shape(projected, LADDER[-1])
            payload = wrap(value, cuts, compact=True)
            tokens = self.count(dumps(payload))
            if tokens > budget:
                kind = f"an object with {len(projected)} keys" if isinstance(projected, dict) else (
                    f"an array of {len(projected)} items" if isinstance(projected, list) else "a value")
                payload = wrap(f"{kind}; too large to show within {budget:,} tokens",
                               [Cut("", "collapsed", int(isinstance(projected, list)), len(projected)
                                    if isinstance(projected, (dict, list)) else 1)], compact=True)
                tokens = self.count(dumps(payload))
            best = (payload, tokens)
        return Shaped(best[0], best[1], content, h or "", facts)

    def _shape_text(self, text: str, *, budget: int, query: str | None,
                    handle: Callable[[Any], str | None], facts: dict[str, Any]) -> Shaped | None:
        h = handle(text)
        ts = TextShaper(text, query)
        sample = text[:4000]
        ratio = len(sample) / max(1, self.count(sample))
        char_budget = max(200, int((budget - 120) * ratio * 0.95))
        facts["kind"] = "text"
        out, tokens = text, 0
        for _ in range(8):
            body, shown = ts.render(char_budget)
            out = self._text_header(text, ts, budget, h, shown, query, facts, body is text) + "\n" + body
            tokens = self.count(out)
            if tokens <= budget:
                break
            char_budget = max(50, int(char_budget * budget / tokens * 0.9))
        else:  # a budget too small for the header and any text: only say where the text is
            more = f'; read_result(handle="{h}", offset=0, limit=50)' if h else ""
            errors = _errors_note(ts, ts.cut_errors(nothing_shown=True), 40)
            out = f"[reach-shape: text of {len(text):,} chars cut to fit {budget:,} tokens{errors}{more}]"
            tokens = self.count(out)
        return Shaped(out, tokens, text, h or "", facts)

    @staticmethod
    def _text_header(text: str, ts: TextShaper, budget: int, h: str | None, shown: int, query: str | None,
                     facts: dict[str, Any], whole: bool) -> str:
        what = "HTML page shown as text" if facts.get("html") else "text"
        head = f"[reach-shape: {what} of {len(text):,} chars, {ts.total_lines:,} lines"
        if not whole:
            head += f"; cut to fit {budget:,} tokens"
            head += f", showing head, tail and {shown} passage(s) matching the question" if shown else \
                ", showing head and tail"
            head += _errors_note(ts, ts.cut_errors(), ERROR_LINE_CHARS)
        if h:
            q = json.dumps(query[:60], ensure_ascii=False) if query else '"..."'
            head += (f'. More: read_result(handle="{h}", offset=0, limit=100) reads lines from an offset; '
                     f'read_result(handle="{h}", query={q}) finds passages]')
        else:
            head += ". The full text was too large to keep]"
        return head


#: characters of the first error line quoted in a text result's notice
ERROR_LINE_CHARS = 100


def _text_errors_entry(path: str, ts: TextShaper, count: int, pos: int, compact: bool) -> dict[str, Any]:
    """``{"path": "stdout", "error_lines": 3, "first_offset": 120, "first": "ValueError: ..."}`` (the
    line offset ``read_result`` takes, from 0)."""
    first = reveal_text(ts.line_at(pos, 40 if compact else ERROR_LINE_CHARS).strip(), one_line=True)
    return {"path": _short_path(path), "error_lines": count, "first_offset": ts.line_of(pos), "first": first}


def _errors_note(ts: TextShaper, found: tuple[int, int] | None, chars: int) -> str:
    """``; the cut part holds 3 error lines; the first, at offset 120: "ValueError: ..."`` (the line
    offset ``read_result`` takes, from 0): a cut
    never hides a failure without saying so. The line is quoted as JSON with hidden characters
    spelled (``⟨U+202E⟩``), so its own brackets, quotes or controls cannot end the notice."""
    if found is None:
        return ""
    count, pos = found
    more = "+" if count >= MAX_ERROR_LINES else ""
    line = json.dumps(reveal_text(ts.line_at(pos, chars).strip(), one_line=True), ensure_ascii=False)
    return (f"; the cut part holds {count:,}{more} error line{'' if count == 1 else 's'}; "
            f"the first, at offset {ts.line_of(pos)}: {line}")
