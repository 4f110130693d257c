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
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from orjson import JSONDecodeError as _OrjsonError
from orjson import loads as _orjson_loads

from .errors import ToolFailure
from .tokens import MAX_CLIENT_ID, client_id_problem

__all__ = ["MAX_INT", "MIN_INT", "ToolCall", "TaggedParser", "call_id", "check_values", "decode_arguments", "to_call"]

_ids = itertools.count(1)
_new = object.__new__
_LOG = logging.getLogger("reach.calls")


def call_id(value: object) -> str:
    """``value`` if it is an acceptable tool-call id, else a fresh process-unique ``call_N``.

    A call id comes from the model or its provider (the OpenAI ``id``), or from the framework
    reach runs under, and a prompt-injected model chooses it. It goes unchanged into the derived
    idempotency key, the ledger, logs, the audit trail, the console and the confirmation queue,
    so it follows the rule reach-serve applies to a client's ids
    (:func:`reach_core.tokens.client_id_problem`): a string of 1 to 256 printable characters. A
    line break would forge a log line, a bidi or zero-width character makes two ids look alike,
    100,000 characters fill every record. Such an id is replaced, not refused: the call itself
    may be honest, and the result must still answer to one id the transcript holds (the loop
    writes the replaced id into the assistant message). Honest ids (``call_abc123``,
    ``toolu_...``, UUIDs) pass unchanged; no id (``None``, ``""``) gets a fresh one silently.
    """
    if type(value) is str and value and len(value) <= MAX_CLIENT_ID and value.isprintable():
        return value
    fresh = f"call_{next(_ids)}"
    if value is not None and value != "":
        _LOG.warning("tool-call id %s replaced by %s: %s", ascii(value)[:80], fresh, client_id_problem("id", value))
    return fresh

#: integers an argument may hold: what 64 bits hold, signed or not (what JSON tools,
#: databases and reach's own serialiser agree on); larger ones go as strings
MIN_INT, MAX_INT = -(2**63), 2**64 - 1


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; send a finite number or null")


def _finite(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # 1e999 and the like overflow to infinity
        raise ValueError(f"the number {text[:40]} is too large; send a finite number or a string")
    return value


# The standard library's C scanner, without ``json.loads``' type checks and two
# whitespace regexes around it: the same values (big integers exact), at a quarter
# of the cost on a typical small arguments object. ``NaN``/``Infinity`` (not JSON)
# and floats that overflow are refused by its hooks, which plain calls never reach.
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)
_scan = _DECODER.scan_once  # type: ignore[attr-defined]

# orjson reads a well-formed arguments text several times faster than that scanner and
# refuses everything it refuses (NaN, overflowing floats, lone surrogates, control
# characters, trailing data: tests/test_decode_differential.py holds the two side by side).
# It differs in one way that matters: an integer beyond 64 bits becomes a float instead
# of an exact int (which reach refuses, see MIN_INT). Such a literal has at least 19
# digits, so a text holding a run of 19 digits is read by the standard scanner. When
# orjson refuses a text, the standard scanner reads it again, so the model gets the same
# message whichever parser ran first.
_LONG_DIGITS = re.compile(r"[0-9]{19}").search


@dataclass(slots=True, init=False)
class ToolCall:
    """One request to run a tool: ``arguments`` is the raw JSON string or a dict.

    A call without an ``id``, or whose ``id`` is not 1-256 printable characters, gets a
    process-unique ``call_N`` (see :func:`call_id`).
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
        id: str | None = "",  # noqa: A002 - the OpenAI field name; checked by call_id
        idempotency_key: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.arguments = arguments
        self.id = call_id(id)
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
            # ToolCall(name, arguments, id, idempotency_key), its __init__ written out: calling a
            # class whose __init__ is Python code costs as much again as the stores
            # (test_fast_construction.py holds the two equal)
            tc = _new(ToolCall)
            tc.name = name if type(name) is str else str(name)
            tc.arguments = arguments
            cid = call.get("id")  # call_id(cid), its honest case written out
            honest = type(cid) is str and cid and len(cid) <= MAX_CLIENT_ID and cid.isprintable()
            tc.id = cid if honest else call_id(cid)
            tc.idempotency_key = call.get("idempotency_key")
            tc.extra = None
            return tc
    if isinstance(call, ToolCall):
        if arguments is not None:
            call.arguments = arguments
        cid = call.id  # a ToolCall's id may have been set after it was made
        if not (type(cid) is str and cid and len(cid) <= MAX_CLIENT_ID and cid.isprintable()):
            call.id = call_id(cid)
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
            id=call.get("id"),  # call_id checks it
            idempotency_key=call.get("idempotency_key"),
        )
    fn = getattr(call, "function", None)  # OpenAI SDK ChatCompletionMessageToolCall
    if fn is not None:
        return ToolCall(
            name=str(getattr(fn, "name", "") or ""),
            arguments=arguments if arguments is not None else getattr(fn, "arguments", None),
            id=getattr(call, "id", None),
        )
    raise TypeError(f"cannot read a tool call from {type(call).__name__}")


def _bad(path: tuple[Any, ...], problem: str) -> ToolFailure:
    where = ".".join(str(p) for p in path) or "arguments"
    return ToolFailure(f"`{where}` {problem}", code="invalid_arguments", details={"field": where})


def _text_bytes(text: str, path: tuple[Any, ...]) -> int:
    """UTF-8 length of non-ASCII ``text``; a lone surrogate (half of a UTF-16 pair, not a
    character) has none and is refused."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise _bad(path, f"holds a lone UTF-16 surrogate (\\u{ord(bad):04x}) at character {exc.start}, which is "
                         "not valid Unicode; send the text as proper UTF-8 (a surrogate only comes in a pair)"
                   ) from None


def _number(value: Any, path: tuple[Any, ...]) -> int:
    """Rough JSON size of a number; refuses what JSON cannot carry faithfully."""
    if isinstance(value, int):
        if MIN_INT <= value <= MAX_INT:
            return 20
        digits = "over 4300" if value.bit_length() > 14_000 else str(len(str(abs(value))))
        raise _bad(path, f"is an integer of {digits} digits; integers must fit in 64 bits "
                         f"({MIN_INT} to {MAX_INT}): send a large number as a string")
    if value - value != 0.0:
        raise _bad(path, f"is {value!r}, which JSON does not allow; send a finite number or null")
    return 24


def check_values(value: Any, max_bytes: int | None = None, max_depth: int | None = None) -> tuple[int, int]:
    """Check that ``value`` is JSON reach can carry, in one walk without recursion.

    Refused with ``invalid_arguments``, naming the field: keys that are not strings,
    values that are not JSON (bytes, sets, objects ...), NaN and infinities, integers
    beyond 64 bits, lone surrogates, nesting deeper than ``max_depth`` and more than
    ``max_bytes`` of JSON (counted as UTF-8; the walk stops once past it). Returns the
    number of object keys and of ``:`` inside strings, which tells duplicate keys
    apart in the JSON text the value came from (see :func:`decode_arguments`).
    """
    depth_cap = max_depth if max_depth is not None else 1000  # a cycle ends here too
    byte_cap = max_bytes if max_bytes is not None else 1 << 62
    size = keys = colons = 0
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 1, ())]
    while stack:
        obj, depth, path = stack.pop()
        if depth > depth_cap:
            raise ToolFailure(f"arguments are nested deeper than {depth_cap} levels; flatten them.",
                              code="invalid_arguments")
        is_obj = isinstance(obj, dict)
        items: Any = obj.items() if is_obj else enumerate(obj)
        size += 2
        for k, v in items:
            if not is_obj:
                size += 1
            elif type(k) is str or isinstance(k, str):
                keys += 1
                size += len(k) + 4 if k.isascii() else _text_bytes(k, (*path, k)) + 4
                if ":" in k:
                    colons += k.count(":")
            else:
                raise _bad(path, f"has a field name {k!r} ({type(k).__name__}); field names must be strings")
            t = type(v)
            if t is str:
                size += len(v) + 2 if v.isascii() else _text_bytes(v, (*path, k)) + 2
                if ":" in v:
                    colons += v.count(":")
            elif t is bool or v is None:
                size += 5
            elif t is int or t is float:
                size += _number(v, (*path, k))
            elif t is dict or t is list or isinstance(v, (dict, list, tuple)):
                stack.append((v, depth + 1, (*path, k)))
            elif isinstance(v, str):
                size += _text_bytes(v, (*path, k)) + 2
            elif isinstance(v, (int, float)):
                size += _number(v, (*path, k))
            else:
                kind = type(v).__name__
                kind = f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"
                hint = " (send text, or base64 in a string)" if isinstance(v, (bytes, bytearray, memoryview)) else ""
                raise _bad((*path, k), f"is {kind}, which is not a JSON value{hint}; send a string, number, "
                                       "true/false, null, a list or an object")
            if size > byte_cap:
                raise ToolFailure(
                    f"arguments are more than {byte_cap} bytes as JSON (the limit); send less data.",
                    code="invalid_arguments",
                )
    return keys, colons


def _unique_pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object hook that refuses the first key given twice (``_DuplicateKey``)."""
    seen: dict[str, Any] = {}
    for k, v in items:
        if k in seen:
            raise _DuplicateKey(k)
        seen[k] = v
    return seen


# Every key kept: a key given twice is refused, never silently the last one.
_STRICT_DECODER = json.JSONDecoder(object_pairs_hook=_unique_pairs, parse_constant=_no_constant, parse_float=_finite)


def _duplicate_key(raw: str) -> None:
    """Parse ``raw`` again, keeping every key, and refuse the first one given twice."""
    try:
        _STRICT_DECODER.decode(raw)
    except _DuplicateKey as dup:
        raise ToolFailure(
            f"the field `{dup.key}` is given more than once; send each field once, with the value you mean.",
            code="invalid_arguments", details={"field": dup.key},
        ) from None


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def decode_arguments(raw: Any, max_bytes: int = 1_000_000, max_depth: int = 32) -> dict[str, Any]:
    """Decode a call's arguments into a dict, enforcing size and depth caps.

    The caps hold whichever way arguments come: a JSON string (its UTF-8 size, its
    bracket depth) or a dict from Python, a framework or an MCP request (walked by
    :func:`check_values`, which also refuses what is not JSON). What a JSON text may
    hide is refused too: duplicate keys, lone surrogates, ``NaN``/``Infinity``.
    Raises ``ToolFailure`` with code ``invalid_json`` or ``invalid_arguments``.
    """
    if type(raw) is not str:
        if raw is None:
            return {}
        if isinstance(raw, (bytes, bytearray, memoryview)):
            try:
                raw = bytes(raw).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ToolFailure(
                    f"arguments are not valid UTF-8 (byte {exc.start}); send them as UTF-8 JSON text.",
                    code="invalid_json",
                ) from None
        elif not isinstance(raw, str):
            if isinstance(raw, dict):
                check_values(raw, max_bytes, max_depth)
                return raw
            raise _not_an_object(raw)
    if not raw:
        return {}
    size = len(raw)
    if size > max_bytes or (not raw.isascii() and (size := _text_bytes(raw, ())) > max_bytes):
        raise ToolFailure(
            f"arguments are {size} bytes; the limit is {max_bytes}. Send less data.",
            code="invalid_arguments",
        )
    if size > max_depth and raw.count("[") + raw.count("{") > max_depth and not _quick_depth_ok(raw, max_depth):
        raise ToolFailure(
            f"arguments are nested deeper than {max_depth} levels; flatten them.",
            code="invalid_arguments",
        )
    if _LONG_DIGITS(raw) is None:
        try:
            value = _orjson_loads(raw)
        except _OrjsonError:
            value = _standard_decode(raw)  # refuses it too, with the standard message
    else:  # a number may exceed 64 bits: the exact scanner reads it
        value = _standard_decode(raw)
    if type(value) is dict:
        if "\\u" in raw or raw.count(":") != len(value):
            # escapes may hide lone surrogates; more colons than keys: nested objects, colons in
            # strings, or a key given twice (which the count of both tells apart)
            keys, colons = check_values(value)
            seen = raw.count(":")
            if "\\u" in raw:  # a `\u003a` in the text is a `:` in the value: count it, or a key
                # given twice (`{"url": "https://ok", "url": "https\u003a//evil"}`) balances the count
                seen += raw.count("\\u003a") + raw.count("\\u003A")
            if seen - colons != keys:
                _duplicate_key(raw)
        return value
    if value is None:
        return {}
    raise _not_an_object(value)


def _standard_decode(raw: str) -> Any:
    """Read ``raw`` with the standard library's scanner (exact big integers), refusing what
    is not JSON with its messages (line, column) in a ``ToolFailure(invalid_json)``."""
    try:
        try:
            value, end = _scan(raw, 0)
        except StopIteration:  # leading whitespace or not JSON: the full decoder decides
            value, end = _DECODER.decode(raw), len(raw)
        if end != len(raw) and raw[end:].strip(" \t\n\r"):
            value = _DECODER.decode(raw)  # raises "Extra data" with the standard message
    except (ValueError, RecursionError) as exc:
        text = str(exc)
        if "integer string conversion" in text:
            text = "a number has more than 4300 digits; send large numbers as strings"
        snippet = raw[:80] + ("…" if len(raw) > 80 else "")
        raise ToolFailure(
            f"arguments are not valid JSON ({text}); send one JSON object such as "
            f'{{"field": "value"}}. You sent: {snippet}',
            code="invalid_json",
        ) from None
    return value


def _not_an_object(value: Any) -> ToolFailure:
    return ToolFailure(
        f"arguments must be a JSON object with named fields, not {type(value).__name__}; "
        'send e.g. {"field": "value"}.',
        code="invalid_arguments",
    )


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
        if not open_tag or not close_tag:
            raise ValueError("TaggedParser needs a non-empty open and close tag")
        self.open_tag, self.close_tag = open_tag, close_tag

    def _calls(self, text: str) -> Iterator[tuple[int, int, str]]:
        """``(start, end, body)`` of each tagged call: what ``finditer`` of
        ``open(.*?)close`` (dot matching newlines) finds, with ``str.find``.

        The regex tried every open tag against the rest of the text when no close tag
        followed: a model's reply holding the open tag thousands of times (88 kB) cost
        14 s. Here an open tag without a close tag after it ends the scan, since no later
        one can have one either.
        """
        open_tag, close_tag = self.open_tag, self.close_tag
        pos = 0
        while (start := text.find(open_tag, pos)) != -1:
            body_start = start + len(open_tag)
            end = text.find(close_tag, body_start)
            if end == -1:
                return
            pos = end + len(close_tag)
            yield start, pos, text[body_start:end]

    def parse(self, text: str) -> tuple[list[ToolCall], list[str]]:
        calls: list[ToolCall] = []
        errors: list[str] = []
        for i, (_, _, raw) in enumerate(self._calls(text or "")):
            body = raw.strip()
            if body.startswith("```"):
                body = body.strip("`").removeprefix("json").strip()
            try:
                # strict: `{"name": "a", "name": "b"}` or `"path"` twice in the arguments would
                # otherwise run the last value while the reply shows the first (decode_arguments
                # refuses such arguments when they come as text; here the body is decoded first)
                obj = _STRICT_DECODER.decode(body)
            except _DuplicateKey as dup:
                errors.append(
                    f"tool call #{i + 1} gives the field `{dup.key}` more than once; write each field once, "
                    "with the value you mean"
                )
                continue
            except RecursionError:  # nesting deeper than the interpreter's stack: refused, never raised
                errors.append(f"tool call #{i + 1} is nested far too deeply; flatten its arguments")
                continue
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
        text = text or ""
        parts, pos = [], 0
        for start, end, _ in self._calls(text):
            parts.append(text[pos:start])
            pos = end
        parts.append(text[pos:])
        return "".join(parts).strip()
