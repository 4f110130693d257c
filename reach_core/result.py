"""Tool results and the one rule for turning connector output into JSON.

The serialisation rule (``to_jsonable``), applied once to whatever a connector
returns, so every plugin behaves the same:

* ``None``, ``bool``, ``int``, ``str`` stay; floats stay unless NaN/inf (-> ``None``);
* ``dict`` keys become strings; lists, tuples, sets (sorted when possible) become lists;
* pydantic models -> ``model_dump(mode="json")``; dataclasses -> their fields;
* ``datetime``/``date``/``time`` -> ISO 8601; ``timedelta`` -> seconds;
* ``Decimal`` -> string (exact; money must not drift through a float);
* ``UUID``, ``Path`` -> string; ``Enum`` -> its value;
* ``bytes`` are described, never dumped: ``{"bytes": N, "sha256": "..."}``;
* anything else -> ``str(obj)``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import decimal
import enum
import hashlib
import json
import math
import pathlib
import uuid
from dataclasses import dataclass, field
from typing import Any

from orjson import dumps as _orjson_dumps

__all__ = ["ToolError", "ToolResult", "dumps", "to_jsonable"]

_SCALARS = (str, int, bool, type(None))


def to_jsonable(obj: Any) -> Any:
    """Convert a connector's return value to JSON-compatible data (see module doc)."""
    if isinstance(obj, _SCALARS):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k) if not isinstance(k, str) else k: to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        items = [to_jsonable(v) for v in obj]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value)
    if isinstance(obj, (_dt.datetime, _dt.date, _dt.time)):
        return obj.isoformat()
    if isinstance(obj, _dt.timedelta):
        return obj.total_seconds()
    if isinstance(obj, decimal.Decimal):
        return str(obj)
    if isinstance(obj, (uuid.UUID, pathlib.PurePath)):
        return str(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return to_jsonable(dump(mode="json"))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    return str(obj)


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(obj: Any) -> str:
    """Compact JSON that keeps non-ASCII text as is (escaped CJK costs several times the tokens).

    ``orjson`` writes exactly this form (compact, UTF-8 as is) about ten times
    faster than the standard encoder, and every result passes through here. What
    it refuses (integers beyond 64 bits, non-string keys, lone surrogates) goes to
    the standard encoder, so the output never depends on which one ran.
    """
    try:
        return _orjson_dumps(obj).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _ENCODER.encode(obj)


@dataclass(slots=True)
class ToolError:
    """Why a call failed: a stable ``code``, a message for the model, maybe ``retry_after`` seconds."""

    code: str
    message: str
    retry_after: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.retry_after is not None:
            d["retry_after"] = self.retry_after
        return d


@dataclass(slots=True)
class ToolResult:
    """The outcome of one tool call, ready to hand back to a model.

    ``content`` is JSON-serialisable; ``meta`` carries facts for hooks and audit
    (``attempts``, ``fallback``, ``receipt``, ``confirmation_id`` ...), not for the model.
    """

    call_id: str
    name: str
    ok: bool
    content: Any = None
    error: ToolError | None = None
    elapsed_ms: float = 0.0
    trace_id: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    _json: str | None = field(default=None, repr=False, compare=False)

    def model_payload(self) -> Any:
        """What the model sees: the content, or ``{"error": {...}}``."""
        if self.ok:
            return self.content
        assert self.error is not None
        err = self.error.to_dict()
        cid = self.meta.get("confirmation_id") if self.error.code == "needs_confirmation" else None
        if cid:  # the model relays it to the person, and a resumed run finds the decision by it
            err["confirmation_id"] = cid
        return {"error": err}

    def to_json(self) -> str:
        """Compact JSON of :meth:`model_payload` (a string result is sent as is).

        Computed once and kept: a result is final when the pipeline returns it.
        """
        text = self._json
        if text is None:
            payload = self.content if self.ok else self.model_payload()
            if isinstance(payload, str):
                text = payload
            else:
                try:  # dumps() written out: one function call less on every call's path
                    text = _orjson_dumps(payload).decode()
                except TypeError:
                    text = _ENCODER.encode(payload)
            self._json = text
        return text

    def to_message(self) -> dict[str, Any]:
        """An OpenAI ``tool`` message for this result."""
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.to_json()}

    def error_dict(self) -> dict[str, Any] | None:
        """The error as every served surface shows it (REST, MCP, ``--json``): code,
        message, ``retry_after``, plus ``confirmation_id`` and ``fix`` when reach has them."""
        if self.error is None:
            return None
        err = self.error.to_dict()
        for key in ("confirmation_id", "fix"):
            value = self.meta.get(key)
            if value:
                err[key] = value
        return err

    def to_dict(self) -> dict[str, Any]:
        """Everything, for logs, CLIs and ``--json`` output."""
        return {
            "call_id": self.call_id,
            "name": self.name,
            "ok": self.ok,
            "content": self.content,
            "error": self.error_dict(),
            "elapsed_ms": round(self.elapsed_ms, 3),
            "trace_id": self.trace_id,
            "meta": to_jsonable(self.meta),
        }
