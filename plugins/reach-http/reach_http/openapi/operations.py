"""Each operation of an OpenAPI document -> the declaration of one tool.

Names come from ``operationId`` made legal for tool names
(``^[a-zA-Z0-9_-]{1,64}$``) and unique; without one, ``method_path``. Arguments
are flat: one property per path/query/header/cookie parameter (renamed
``name_in`` only on a clash) plus ``body`` for a JSON request body. Risk follows
the method (GET/HEAD read, POST/PUT/PATCH write, DELETE dangerous) and
idempotency follows HTTP semantics (GET/HEAD/PUT/DELETE/OPTIONS).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..client import method_override
from ..headers import model_header_refusal
from .schema import OpenAPIError, SchemaBuilder
from .text import Cleaner, hidden_characters, sent_strings

__all__ = ["OperationSpec", "ParamSpec", "Skipped", "build_operations", "server_url", "tool_name"]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
RISK = {"GET": "read", "HEAD": "read", "OPTIONS": "read", "DELETE": "dangerous"}
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
_ILLEGAL = re.compile(r"[^A-Za-z0-9_-]+")
_PROPERTY_ILLEGAL = re.compile(r"[^A-Za-z0-9_.-]+")
_IGNORED_HEADERS = {"accept", "content-type", "authorization"}
_COOKIE_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
MAX_DESCRIPTION = 1024
"""Characters of an operation's own description (its summary: 300) in the tool's description."""
MAX_SHOWN_PATH = 200
MAX_TAG = 64


@dataclass(frozen=True)
class ParamSpec:
    """How one argument is sent."""

    key: str
    name: str
    location: str
    style: str
    explode: bool
    as_json: bool = False


@dataclass
class OperationSpec:
    """Everything needed to declare and call one operation."""

    name: str
    operation_id: str | None
    method: str
    path: str
    description: str
    input_schema: dict[str, Any]
    params: list[ParamSpec]
    body_key: str | None
    risk: str
    idempotent: bool
    tags: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    """What was changed in the document's text for the model (see :mod:`.text`), for the import listing."""


@dataclass
class Skipped:
    """An operation that could not become a tool, and why."""

    method: str
    path: str
    reason: str


def tool_name(raw: str, taken: set[str], prefix: str = "") -> str:
    """A legal, unique tool name from ``raw``; registers it in ``taken``."""
    base = _ILLEGAL.sub("_", prefix + raw).strip("_") or "operation"
    base = base[:64]
    name, n = base, 2
    while name.lower() in taken:
        suffix = f"_{n}"
        name = base[: 64 - len(suffix)] + suffix
        n += 1
    taken.add(name.lower())
    return name


def server_url(document: dict[str, Any], document_url: str | None) -> str | None:
    """The first server's URL with its variables at their defaults, made absolute."""
    servers = document.get("servers") or []
    if not servers or not isinstance(servers[0], dict) or not servers[0].get("url"):
        return None
    url = str(servers[0]["url"])
    for var, spec in (servers[0].get("variables") or {}).items():
        if isinstance(spec, dict) and "default" in spec:
            url = url.replace("{" + var + "}", str(spec["default"]))
    if "://" not in url:
        if document_url is None:
            return None
        import httpx

        url = str(httpx.URL(document_url).join(url))
    return url


def _describe(op: dict[str, Any], method: str, path: str, cleaner: Cleaner) -> str:
    """The tool's description: the operation's summary and description (cleaned and cut, see
    :mod:`.text`), what to use it for, and where it goes."""
    summary = (cleaner.text(str(op.get("summary") or ""), 300) or "").strip()
    detail = (cleaner.text(str(op.get("description") or ""), MAX_DESCRIPTION) or "").strip()
    if len(path) > MAX_SHOWN_PATH:
        path = path[:MAX_SHOWN_PATH] + "…"
    text = summary
    if detail and detail != summary:
        text = f"{summary}. {detail}" if summary and not summary.endswith(".") else f"{summary} {detail}".strip()
    text = text or f"Call {method} {path}."
    if summary:
        task = summary.rstrip(".")
        text = f"{text.rstrip('.')}. Use when the user asks to {task[0].lower()}{task[1:]}"
    return f"{text} ({method} {path})"


def _json_media(content: dict[str, Any]) -> dict[str, Any] | None:
    for media, spec in content.items():
        m = media.split(";", 1)[0].strip().lower()
        if m == "application/json" or m.endswith("+json") or m == "*/*":
            return spec if isinstance(spec, dict) else {}
    return None


def _operation(
    builder: SchemaBuilder, path: str, method: str, item: dict[str, Any], op: dict[str, Any], taken: set[str],
    prefix: str,
) -> OperationSpec | Skipped:
    refs = builder.refs
    upper = method.upper()
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in [*(item.get("parameters") or []), *(op.get("parameters") or [])]:
        param = refs.deref(raw)
        if not isinstance(param, dict) or "name" not in param or "in" not in param:
            continue
        merged[(str(param["name"]), str(param["in"]))] = param

    properties: dict[str, Any] = {}
    required: list[str] = []
    params: list[ParamSpec] = []
    names = [n for n, _ in merged]
    for (pname, location), param in merged.items():
        if location == "header" and (pname.lower() in _IGNORED_HEADERS or model_header_refusal(pname) is not None):
            continue  # Accept/Content-Type/Authorization per the spec; Host, framing, proxy headers never
        if location == "cookie" and not _COOKIE_NAME.match(pname):
            continue
        if location == "query" and method_override(pname):
            continue  # `_method=DELETE` would run a POST as a DELETE; the client refuses it as well
        if location not in ("path", "query", "header", "cookie"):
            continue
        key = pname if names.count(pname) == 1 else f"{pname}_{location}"
        key = _PROPERTY_ILLEGAL.sub("_", key)[:64] or "param"
        while key in properties:
            key += "_"
        as_json = False
        schema_src = param.get("schema")
        if schema_src is None and isinstance(param.get("content"), dict) and param["content"]:
            media = next(iter(param["content"].values())) or {}
            schema_src = media.get("schema", {})
            as_json = True
        prop = builder.build(schema_src or {"type": "string"})
        text = str(param.get("description") or "").strip()
        if param.get("deprecated"):
            text = (text + " (deprecated)").strip()
        if "example" in param and "examples" not in prop:
            prop["examples"] = [param["example"]]
        if not text and "description" not in prop:
            text = f"the {pname} {location} parameter"
        if text and "description" not in prop:
            prop["description"] = text
        properties[key] = prop
        is_required = location == "path" or bool(param.get("required"))
        if is_required:
            required.append(key)
        default_style = {"query": "form", "cookie": "form"}.get(location, "simple")
        style = str(param.get("style") or default_style)
        explode = bool(param.get("explode", style == "form"))
        params.append(ParamSpec(key, pname, location, style, explode, as_json))

    body_key: str | None = None
    body = refs.deref(op.get("requestBody")) if op.get("requestBody") else None
    if isinstance(body, dict):
        media = _json_media(body.get("content") or {})
        if media is None:
            if body.get("required"):
                kinds = ", ".join(body.get("content") or {}) or "no content type"
                return Skipped(upper, path, f"its request body must be {kinds}; only JSON bodies are supported")
        else:
            body_key = "body" if "body" not in properties else "request_body"
            prop = builder.build(media.get("schema") or {})
            text = str(body.get("description") or "").strip() or "The JSON request body."
            if "description" not in prop:
                prop["description"] = text
            properties[body_key] = prop
            if body.get("required"):
                required.append(body_key)

    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    hidden = hidden_characters([path, [p.name for p in params], sent_strings(schema)])
    if hidden:
        return Skipped(upper, path, (
            f"its path, parameter names or schema values (names, enum, default ...) hold control or invisible "
            f"characters ({', '.join(hidden[:8])}); the model would read something other than what is sent"
        ))
    cleaner = Cleaner()
    description = _describe(op, upper, path, cleaner)
    schema = cleaner.schema(schema)
    tags = [t for t in (cleaner.text(str(t), MAX_TAG) for t in op.get("tags") or []) if t]
    op_id = op.get("operationId")
    fallback = "_".join([method, *(seg.strip("{}") for seg in path.split("/") if seg)])
    raw_name = str(op_id) if op_id and _ILLEGAL.sub("", str(op_id)) else fallback
    return OperationSpec(
        name=tool_name(raw_name, taken, prefix),
        operation_id=str(op_id) if op_id else None,
        method=upper,
        path=path,
        description=description,
        input_schema=schema,
        params=params,
        body_key=body_key,
        risk=RISK.get(upper, "write"),
        idempotent=upper in IDEMPOTENT,
        tags=tags,
        changes=cleaner.changes(),
    )


def build_operations(
    document: dict[str, Any],
    *,
    taken: set[str] | None = None,
    prefix: str = "",
    only: list[str] | None = None,
) -> tuple[list[OperationSpec], list[Skipped]]:
    """All usable operations of ``document`` (optionally only some operationIds)."""
    builder = SchemaBuilder(document)
    taken = taken if taken is not None else set()
    specs: list[OperationSpec] = []
    skipped: list[Skipped] = []
    wanted = set(only) if only is not None else None
    for path, raw_item in (document.get("paths") or {}).items():
        item = builder.refs.deref(raw_item)
        if not isinstance(item, dict):
            continue
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            if wanted is not None and op.get("operationId") not in wanted:
                continue
            try:
                result = _operation(builder, str(path), method, item, op, taken, prefix)
            except OpenAPIError as exc:
                result = Skipped(method.upper(), str(path), str(exc))
            if isinstance(result, Skipped):
                skipped.append(result)
            else:
                specs.append(result)
    return specs, skipped
