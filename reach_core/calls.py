"""Tool calls as models send them, and turning their arguments into a dict.

A call may arrive as a :class:`ToolCall`, an OpenAI SDK tool-call object, a dict
``{"id", "name", "arguments"}`` or ``{"id", "function": {"name", "arguments"}}``,
or a bare tool name with an arguments dict. Arguments may be a JSON string or a
dict; an empty string or ``None`` means ``{}``.

Models without native tool calling write calls into their text; the
:class:`TaggedParser` finds them between configurable tags.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

from .errors import ToolFailure

__all__ = ["ToolCall", "TaggedParser", "decode_arguments", "to_call"]

_ids = itertools.count(1)
# The standard library's C scanner, without ``json.loads``' type checks and two
# whitespace regexes around it: the same values (big integers exact, NaN accepted),
# at a quarter of the cost on a typical small arguments object.
_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


@dataclass(slots=True, init=False)
class ToolCall:
    """One request to run a tool: ``arguments`` is the raw JSON string or a dict.

    A call without an ``id`` gets a process-unique ``call_N``.
    """

    name: str
    arguments: str | dict[str, Any] | None
    id: str
    idempotency_key: str | None
    extra: dict[str, Any] | None

    # written out (not generated with __post_init__): one is built for every call
    def __init__(
        self,
        name: str,
        arguments: str | dict[str, Any] | None = None,
        id: str = "",  # noqa: A002 - the OpenAI field name
        idempotency_key: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.arguments = arguments
        self.id = id or f"call_{next(_ids)}"
        self.idempotency_key = idempotency_key
        self.extra = extra


def to_call(call: Any, arguments: Any = None) -> ToolCall:
    """Normalise any accepted call shape into a :class:`ToolCall`."""
    kind = type(call)
    if kind is dict:
        name = call.get("name")
        if name is not None and "function" not in call:  # the common flat shape, fast
            if arguments is None:
                arguments = call["arguments"] if "arguments" in call else call.get("args")
            cid = call.get("id")
            return ToolCall(name if type(name) is str else str(name), arguments,
                            cid if type(cid) is str else str(cid or ""), call.get("idempotency_key"))
    if isinstance(call, ToolCall):
        if arguments is not None:
            call.arguments = arguments
        return call
    if isinstance(call, str):
        return ToolCall(name=call, arguments=arguments)
    if isinstance(call, dict):
        fn = call.get("function")
        if isinstance(fn, dict):
            name, args = fn.get("name"), fn.get("arguments")
        else:
            name, args = call.get("name"), call.get("arguments", call.get("args"))
        return ToolCall(
            name=str(name or ""),
            arguments=arguments if arguments is not None else args,
            id=str(call.get("id") or ""),
            idempotency_key=call.get("idempotency_key"),
        )
    fn = getattr(call, "function", None)  # OpenAI SDK ChatCompletionMessageToolCall
    if fn is not None:
        return ToolCall(
            name=str(getattr(fn, "name", "") or ""),
            arguments=arguments if arguments is not None else getattr(fn, "arguments", None),
            id=str(getattr(call, "id", "") or ""),
        )
    raise TypeError(f"cannot read a tool call from {type(call).__name__}")


def _depth_ok(obj: Any, limit: int) -> bool:
    if type(obj) is dict and limit >= 1:  # flat, the usual case: decided without the walk
        for v in obj.values():
            if isinstance(v, (dict, list)):
                break
        else:
            return True
    stack = [(obj, 1)]
    while stack:
        cur, d = stack.pop()
        if d > limit:
            return False
        if isinstance(cur, dict):
            stack.extend((v, d + 1) for v in cur.values() if isinstance(v, (dict, list)))
        elif isinstance(cur, list):
            stack.extend((v, d + 1) for v in cur if isinstance(v, (dict, list)))
    return True


def decode_arguments(raw: Any, max_bytes: int = 1_000_000, max_depth: int = 32) -> dict[str, Any]:
    """Decode a call's arguments into a dict, enforcing size and depth caps.

    Raises ``ToolFailure`` with code ``invalid_json`` or ``invalid_arguments``.
    """
    if type(raw) is str:  # the usual case first
        if not raw:
            return {}
    elif raw is None:
        return {}
    elif isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", "replace")
    if isinstance(raw, str):
        if len(raw) > max_bytes:
            raise ToolFailure(
                f"arguments are {len(raw)} characters; the limit is {max_bytes}. Send less data.",
                code="invalid_arguments",
            )
        if len(raw) > max_depth and raw.count("[") + raw.count("{") > max_depth and not _quick_depth_ok(
            raw, max_depth
        ):
            raise ToolFailure(
                f"arguments are nested deeper than {max_depth} levels; flatten them.",
                code="invalid_arguments",
            )
        try:
            try:
                value, end = _scan(raw, 0)
            except StopIteration:  # leading whitespace or not JSON: the full decoder decides
                value, end = json.loads(raw), len(raw)
            if end != len(raw) and raw[end:].strip(" \t\n\r"):
                value = json.loads(raw)  # raises "Extra data" with the standard message
        except (ValueError, RecursionError) as exc:
            snippet = raw[:80] + ("…" if len(raw) > 80 else "")
            raise ToolFailure(
                f"arguments are not valid JSON ({exc}); send one JSON object such as "
                f'{{"field": "value"}}. You sent: {snippet}',
                code="invalid_json",
            ) from None
        if value is None:
            return {}
    else:
        value = raw
        if not _depth_ok(value, max_depth):
            raise ToolFailure(
                f"arguments are nested deeper than {max_depth} levels; flatten them.",
                code="invalid_arguments",
            )
    if not isinstance(value, dict):
        raise ToolFailure(
            f"arguments must be a JSON object with named fields, not {type(value).__name__}; "
            'send e.g. {"field": "value"}.',
            code="invalid_arguments",
        )
    return value


def _quick_depth_ok(raw: str, limit: int) -> bool:
    """Bracket depth of a JSON text, ignoring brackets inside strings."""
    depth = 0
    in_str = esc = False
    for ch in raw:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


class TaggedParser:
    """Parse tool calls a model wrote into plain text between tags.

    Default tags: ``<tool_call>{"name": "...", "arguments": {...}}</tool_call>``.
    Several calls per message are allowed; a broken one yields an error string
    (for the model) instead of silently vanishing.
    """

    name = "tagged"

    def __init__(self, open_tag: str = "<tool_call>", close_tag: str = "</tool_call>") -> None:
        self.open_tag, self.close_tag = open_tag, close_tag
        self._re = re.compile(re.escape(open_tag) + r"(.*?)" + re.escape(close_tag), re.S)

    def parse(self, text: str) -> tuple[list[ToolCall], list[str]]:
        calls: list[ToolCall] = []
        errors: list[str] = []
        for i, m in enumerate(self._re.finditer(text or "")):
            body = m.group(1).strip()
            if body.startswith("```"):
                body = body.strip("`").removeprefix("json").strip()
            try:
                obj = json.loads(body)
            except ValueError as exc:
                errors.append(
                    f"tool call #{i + 1} is not valid JSON ({exc}); write "
                    f'{self.open_tag}{{"name": "tool_name", "arguments": {{...}}}}{self.close_tag}'
                )
                continue
            if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
                errors.append(f'tool call #{i + 1} needs a "name" string and an "arguments" object')
                continue
            args = obj.get("arguments", obj.get("parameters", {}))
            calls.append(ToolCall(name=obj["name"], arguments=args if args is not None else {}))
        if not calls and not errors and self.open_tag in (text or ""):
            errors.append(f"a tool call was opened with {self.open_tag} but never closed with {self.close_tag}")
        return calls, errors

    def strip(self, text: str) -> str:
        """The text with every tagged call removed (what the model said to the user)."""
        return self._re.sub("", text or "").strip()
