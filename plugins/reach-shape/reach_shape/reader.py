"""``read_result``: the model pages through, or searches, a full result kept behind a handle.

Answers are exact slices: ``offset``/``limit`` give exactly those lines or items
when they fit ``read_budget``; when they do not, the answer is the longest
prefix that fits and says where to continue. The answer itself is never
passed through shaping again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reach_core import Connector, InvalidArguments, NotFound
from reach_core.result import dumps

from .clusters import snap
from .json_shape import LADDER, JsonShaper
from .passages import best_passages, line_of
from .paths import PathError, join_index, resolve
from .search import json_matches
from .shaper import summarize_cuts
from .text_shape import cut_string

if TYPE_CHECKING:
    from .shaper import Shaper

__all__ = ["ReadResult", "read"]

DEFAULT_MATCHES = 5
CONTEXT_LINES = 2
MAX_LIMIT = 1000


class ReadResult(Connector):
    """The built-in tool behind every ``_shaped`` note."""

    name = "read_result"
    description = (
        "Read more of a tool result that was cut to fit. Use when a result you got carries a `_shaped` "
        "note (or starts with a `[reach-shape: ...]` line) and the part you need was cut. "
        "`path` picks part of a JSON result "
        "(`rows[20:40]`, `a.b.c`, `items[3].name`); `offset`/`limit` page through an array at that "
        "path (items) or a text (lines, counted from 0); `query` returns the passages or items that "
        "best match some words (an id, an error, a name). Handles last for the current run only."
    )
    risk = "read"
    tags = ("data_processing",)
    input_schema = {
        "type": "object",
        "properties": {
            "handle": {"type": "string", "description": "The handle from the `_shaped` note, like res_AbC123xyz."},
            "path": {
                "type": "string",
                "description": "JSON path into the full result: `a.b.c`, `items[3]`, `rows[20:40]`; "
                               "omit for the whole result.",
            },
            "offset": {"type": "integer", "minimum": 0,
                       "description": "First line (text) or item (array) to return, from 0."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                      "description": "How many lines, items or matches to return."},
            "query": {"type": "string",
                      "description": "Words to search for; returns the best-matching passages or items."},
        },
        "required": ["handle"],
        "additionalProperties": False,
    }

    def __init__(self, shaper_of: Callable[[Any], Shaper]) -> None:
        self._shaper_of = shaper_of

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> Any:
        shaper = self._shaper_of(ctx.reach)
        handle = params["handle"]
        entry = shaper.store.get(handle, agent=ctx.agent, run_id=ctx.run_id)
        if entry is None:
            raise NotFound(
                f"result {handle!r}",
                message=f"there is no kept result {handle!r} for you: handles last only for the run that "
                "produced them. Call the original tool again (with narrower arguments) instead.",
            )
        return read(entry.content, handle=handle, path=params.get("path"), offset=params.get("offset"),
                    limit=params.get("limit"), query=params.get("query"), budget=shaper.settings.read_budget,
                    count=shaper.count)


def _fit(n: int, build: Callable[[int], Any], budget: int, count: Callable[[str], int],
         upper: int | None = None) -> tuple[int, Any]:
    """The largest ``k <= n`` whose answer ``build(k)`` fits ``budget`` tokens (0 if none)."""
    hi = n if upper is None else min(n, upper)
    payload = build(hi)
    if count(dumps(payload)) <= budget:
        return hi, payload
    lo, best = 0, (0, build(0))
    hi -= 1
    while lo <= hi:
        mid = (lo + hi + 1) // 2
        if mid == 0:
            break
        payload = build(mid)
        if count(dumps(payload)) <= budget:
            best, lo = (mid, payload), mid + 1
        else:
            hi = mid - 1
    return best


def _char_cap(lengths: list[int], budget: int) -> int:
    """How many items could fit at most, by characters (a token is at least one char... of bytes)."""
    total, k = 0, 0
    cap = budget * 8
    for n in lengths:
        total += n + 1
        if total > cap:
            break
        k += 1
    return max(k, 1)


def read(content: Any, *, handle: str, path: str | None, offset: int | None, limit: int | None,
         query: str | None, budget: int, count: Callable[[str], int]) -> Any:
    """The answer of one ``read_result`` call over ``content`` (see module doc), never over ``budget``:
    an answer the slicing rules could not fit (one huge key, a value that shapes badly) is sent as
    the start of its JSON text, cut to fit, saying so."""
    answer = _read(content, handle=handle, path=path, offset=offset, limit=limit, query=query,
                   budget=budget, count=count)
    text = dumps(answer)
    if count(text) <= budget:
        return answer
    head: dict[str, Any] = {"handle": handle}
    if path and path.strip():
        head["path"] = path.strip()[:200]
    head["cut"] = "this answer did not fit the read budget and is shown as the start of its JSON text; " \
                  "ask for a narrower path, an offset/limit, or a query"
    lo, hi, best = 0, min(len(text), budget * 4), {**head, "text": ""}
    while lo <= hi:  # the longest start of the text that fits
        mid = (lo + hi) // 2
        candidate = {**head, "text": text[: snap(text, mid)]}
        if count(dumps(candidate)) <= budget:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best


def _read(content: Any, *, handle: str, path: str | None, offset: int | None, limit: int | None,
          query: str | None, budget: int, count: Callable[[str], int]) -> Any:
    try:
        value = resolve(content, path)
    except PathError as exc:
        raise InvalidArguments(
            "path", message=f"`path` {path!r}: {exc}; send a path like items[0:20] or a.b.c, or omit it."
        ) from None
    base = (path or "").strip()
    head: dict[str, Any] = {"handle": handle}
    if base:
        head["path"] = base
    if query and query.strip():
        if isinstance(value, str):
            return _text_matches(value, query, limit or DEFAULT_MATCHES, head, budget, count)
        if isinstance(value, (dict, list)):
            return _json_matches(value, base, query, limit or DEFAULT_MATCHES, head, budget, count)
    if isinstance(value, str):
        if offset is None and limit is None and "\n" not in value:
            answer = {**head, "value": value}
            if count(dumps(answer)) <= budget:
                return answer
        return _text_page(value, offset or 0, limit, head, budget, count)
    if isinstance(value, list):
        if offset is None and limit is None:
            answer = {**head, "value": value}
            if count(dumps(answer)) <= budget:
                return answer
        return _list_page(value, base, offset or 0, limit, head, budget, count)
    if isinstance(value, dict) and (offset is not None or limit is not None):
        return _keys_page(value, offset or 0, limit, head, budget, count)
    answer = {**head, "value": value}
    if count(dumps(answer)) <= budget:
        return answer
    return _shaped_value(value, base, head, budget, count)


def _shaped_value(value: Any, base: str, head: dict[str, Any], budget: int, count: Callable[[str], int]) -> Any:
    shaper = JsonShaper(base_path=base)
    for limits in LADDER:
        shaped, cuts = shaper.shape(value, limits)
        answer = {**head, "value": shaped, "cut": summarize_cuts(cuts),
                  "read_more": "use a narrower path or offset/limit for the parts cut"}
        if count(dumps(answer)) <= budget:
            return answer
    return {**head, "value": cut_string(dumps(value), budget), "cut": ["the value is shown as cut JSON text"]}


def _text_page(text: str, offset: int, limit: int | None, head: dict[str, Any], budget: int,
               count: Callable[[str], int]) -> Any:
    lines = text.split("\n")
    total = len(lines)
    if offset >= total:
        raise InvalidArguments("offset", f"a line offset below {total:,} (the text has {total:,} lines)", 0)
    want = min(limit or total - offset, total - offset)
    chosen = lines[offset:offset + want]

    def build(k: int) -> dict[str, Any]:
        answer = {**head, "offset": offset, "lines": k, "total_lines": total, "text": "\n".join(chosen[:k])}
        if k < want or offset + k < total:
            answer["next_offset"] = offset + k
        if 0 < k < want:
            answer["truncated"] = f"{want - k} of the requested lines did not fit {budget:,} tokens"
        return answer

    k, answer = _fit(want, build, budget, count, upper=_char_cap([len(x) for x in chosen], budget))
    if k == 0:  # one line longer than the whole budget: show it cut
        line = chosen[0]
        answer = {**head, "offset": offset, "lines": 1, "total_lines": total,
                  "text": cut_string(line, budget * 2), "line_cut": f"line {offset} has {len(line):,} chars"}
        while count(dumps(answer)) > budget and len(answer["text"]) > 40:
            answer["text"] = cut_string(line, len(answer["text"]) // 2)
        if offset + 1 < total:
            answer["next_offset"] = offset + 1
    return answer


def _list_page(items: list[Any], base: str, offset: int, limit: int | None, head: dict[str, Any], budget: int,
               count: Callable[[str], int]) -> Any:
    total = len(items)
    if offset >= total and total:
        raise InvalidArguments("offset", f"an item offset below {total:,} (the array has {total:,} items)", 0)
    want = min(limit or total - offset, total - offset)
    chosen = items[offset:offset + want]

    def build(k: int) -> dict[str, Any]:
        answer = {**head, "offset": offset, "count": k, "total": total, "items": chosen[:k]}
        if offset + k < total:
            answer["next"] = f"{base}[{offset + k}:{offset + k + max(k, 1)}]"
        if 0 < k < want:
            answer["truncated"] = f"{want - k} of the requested items did not fit {budget:,} tokens"
        return answer

    upper = _char_cap([len(dumps(x)) for x in chosen[:2000]], budget) if want > 50 else None
    k, answer = _fit(want, build, budget, count, upper=upper)
    if k == 0 and want:  # one item larger than the budget: show it shaped
        inner = _shaped_value(chosen[0], join_index(base, offset), {}, budget - 100, count)
        answer = {**head, "offset": offset, "count": 1, "total": total, "items": [inner["value"]],
                  "cut": inner.get("cut", [])}
        if offset + 1 < total:
            answer["next"] = f"{base}[{offset + 1}:{offset + 2}]"
    return answer


def _keys_page(obj: dict[str, Any], offset: int, limit: int | None, head: dict[str, Any], budget: int,
               count: Callable[[str], int]) -> Any:
    keys = list(obj)
    total = len(keys)
    want = max(0, min(limit or total - offset, total - offset))
    chosen = keys[offset:offset + want]

    def build(k: int) -> dict[str, Any]:
        answer = {**head, "offset": offset, "count": k, "total_keys": total,
                  "value": {key: obj[key] for key in chosen[:k]}}
        if offset + k < total:
            answer["next_offset"] = offset + k
        return answer

    return _fit(want, build, budget, count)[1]


def _following_lines(text: str, end: int, n: int) -> str:
    """Up to ``n`` lines after a match (a heading's paragraph, an error's stack trace)."""
    if end >= len(text) or text[end] != "\n":
        return ""
    stop = end
    for _ in range(n):
        nxt = text.find("\n", stop + 1)
        stop = len(text) if nxt == -1 else nxt
        if stop >= len(text):
            break
    return cut_string(text[end + 1:stop], 600)


def _text_matches(text: str, query: str, limit: int, head: dict[str, Any], budget: int,
                  count: Callable[[str], int]) -> Any:
    passages = best_passages(text, query, limit=limit)
    found = []
    for p in passages:
        match: dict[str, Any] = {"offset": line_of(text, p.start), "text": text[p.start:p.end]}
        after = _following_lines(text, p.end, CONTEXT_LINES)
        if after:
            match["next_lines"] = after
        found.append(match)

    def build(k: int) -> dict[str, Any]:
        answer = {**head, "query": query, "matches": found[:k], "total_lines": text.count("\n") + 1}
        if not found:
            answer["note"] = "nothing matches; try other words, or page with offset/limit"
        return answer

    return _fit(len(found), build, budget, count)[1]


def _json_matches(value: Any, base: str, query: str, limit: int, head: dict[str, Any], budget: int,
                  count: Callable[[str], int]) -> Any:
    pairs, searched = json_matches(value, query, base=base, limit=limit)
    found = [{"path": p, "value": v} for p, v in pairs]

    def build(k: int) -> dict[str, Any]:
        answer = {**head, "query": query, "matches": found[:k], "searched": searched}
        if not found:
            answer["note"] = "nothing matches; try other words, or page with path and offset/limit"
        return answer

    return _fit(len(found), build, budget, count)[1]
