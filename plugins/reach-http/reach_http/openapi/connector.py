"""A tool for one OpenAPI operation: arguments -> path, query, headers, cookies, body."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from reach_core import Connector, InvalidArguments

from ..client import ServiceClient
from ..headers import check_header_value, model_header_refusal
from .operations import OperationSpec, ParamSpec

__all__ = ["OpenAPIOperation"]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _query(param: ParamSpec, value: Any) -> list[tuple[str, str]]:
    """Serialise one query parameter per its OpenAPI style (form, deepObject, delimited)."""
    if param.as_json:
        return [(param.name, _text(value))]
    if isinstance(value, list):
        if param.style == "form" and param.explode:
            return [(param.name, _text(v)) for v in value]
        sep = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(param.style, ",")
        return [(param.name, sep.join(_text(v) for v in value))]
    if isinstance(value, dict):
        if param.style == "deepObject":
            return [(f"{param.name}[{k}]", _text(v)) for k, v in value.items()]
        if param.explode:
            return [(str(k), _text(v)) for k, v in value.items()]
        return [(param.name, ",".join(f"{k},{_text(v)}" for k, v in value.items()))]
    return [(param.name, _text(value))]


def _simple(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k},{_text(v)}" for k, v in value.items())
    return _text(value)


class OpenAPIOperation(Connector):
    """One operation of a service's OpenAPI document, callable as a tool."""

    #: its name is the document's operationId, which whoever serves the document may change:
    #: it never takes the name of a tool another plugin registered (``Connector.imported``)
    imported = True

    def __init__(self, spec: OperationSpec, client: ServiceClient) -> None:
        self.spec = spec
        self.client = client
        self.name = spec.name
        self.description = spec.description
        self.input_schema = spec.input_schema  # type: ignore[misc]
        self.risk = spec.risk  # type: ignore[assignment]
        self.idempotent = spec.idempotent
        # an HTTP operation reaches outside: `external_api` (reach-mcp serves it with openWorldHint)
        self.tags = tuple(dict.fromkeys(["external_api", *client.settings.tags]))
        self.keywords = tuple(spec.tags)
        self.timeout = max(15.0, client.settings.timeout * 3)

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> Any:
        spec = self.spec
        path = spec.path
        query: list[tuple[str, str]] = []
        headers: dict[str, str] = {}
        cookies: list[tuple[str, str]] = []
        for param in spec.params:
            if param.key not in params or params[param.key] is None:
                if param.location == "path":
                    raise InvalidArguments(param.key, "a value (it is part of the URL path)")
                continue
            value = params[param.key]
            if param.location == "path":
                text = _simple(value)
                if text in ("", ".", ".."):
                    raise InvalidArguments(param.key, "a non-empty value other than '.' or '..'")
                path = path.replace("{" + param.name + "}", quote(text, safe=""))
            elif param.location == "query":
                query.extend(_query(param, value))
            elif param.location == "header":
                if model_header_refusal(param.name) is not None:
                    continue  # never declared as an argument (see operations.py); a stale spec cannot add it
                headers[param.name] = check_header_value(param.key, _simple(value))
            else:
                cookies.append((param.name, quote(_simple(value), safe="")))
        has_body = spec.body_key is not None and params.get(spec.body_key) is not None
        return await self.client.send(
            spec.method,
            path,
            query=query,
            json_body=params.get(spec.body_key) if has_body and spec.body_key else None,
            has_body=has_body,
            headers=headers,
            cookies=cookies,
            idempotency_key=None if spec.idempotent else getattr(ctx, "idempotency_key", None),
        )
