"""The generic tools: ``http_get`` (read) and ``http_request`` (write).

Two tools rather than one because risk is a property of a tool, not of a call:
a single ``http_request`` that can POST must be ``write``, which would put every
harmless GET behind the same policy as a write. ``http_get`` lets a read-only
agent look things up; ``http_request`` is ``write`` (``dangerous`` as soon as a
service allows DELETE) and never retried.
"""

from __future__ import annotations

from typing import Any

from reach_core import Connector, InvalidArguments

from .client import SAFE_METHODS, ServiceClient

__all__ = ["HttpGet", "HttpRequest"]

_SCALAR = {"type": ["string", "number", "integer", "boolean"]}
QUERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Query parameters, e.g. {\"q\": \"shoes\", \"page\": 2}; a list repeats the parameter.",
    "additionalProperties": {"anyOf": [_SCALAR, {"type": "array", "items": _SCALAR}]},
}


def _service_lines(clients: dict[str, ServiceClient]) -> str:
    lines = []
    for name, client in clients.items():
        what = client.settings.description.strip() or "no description"
        lines.append(f"- {name}: {what}")
    return "\n".join(lines)


def query_pairs(query: Any) -> list[tuple[str, str]]:
    """``{"a": 1, "b": [2, 3]}`` -> ``[("a", "1"), ("b", "2"), ("b", "3")]``."""
    if query is None:
        return []
    if not isinstance(query, dict):
        raise InvalidArguments("query", "an object of parameter names to values", {"page": 2})
    pairs: list[tuple[str, str]] = []
    for key, value in query.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, bool):
                pairs.append((str(key), "true" if item else "false"))
            elif item is not None:
                pairs.append((str(key), str(item)))
    return pairs


class _Generic(Connector):
    tags = ("external_api",)

    def __init__(self, clients: dict[str, ServiceClient]) -> None:
        self.clients = clients
        per_request = max((c.settings.timeout for c in clients.values()), default=5.0)
        self.timeout = max(15.0, per_request * 3)

    def _client(self, params: dict[str, Any]) -> ServiceClient:
        name = params.get("service")
        client = self.clients.get(name) if isinstance(name, str) else None
        if client is None:
            raise InvalidArguments("service", f"one of {sorted(self.clients)}", next(iter(self.clients), None))
        return client


class HttpGet(_Generic):
    """GET a path of a configured service. Read-only, retried on transient failures."""

    name = "http_get"
    risk = "read"
    idempotent = True

    def __init__(self, clients: dict[str, ServiceClient]) -> None:
        super().__init__(clients)
        self.description = (
            "Read data from a configured HTTP service with GET and return its JSON answer "
            "(status, key headers, body). Use when the user asks for information one of these "
            "services holds:\n" + _service_lines(clients)
        )
        self.input_schema = {  # type: ignore[misc]
            "type": "object",
            "properties": {
                "service": {"type": "string", "enum": sorted(clients), "description": "Which service to call."},
                "path": {"type": "string", "description": "Path below the service's base URL, e.g. /pets/1."},
                "query": QUERY_SCHEMA,
            },
            "required": ["service", "path"],
            "additionalProperties": False,
        }

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> Any:
        client = self._client(params)
        if "GET" not in client.settings.methods:
            raise InvalidArguments("service", f"a service that allows GET; {client.name!r} does not")
        return await client.send("GET", params["path"], query=query_pairs(params.get("query")))


class HttpRequest(_Generic):
    """Any allowed method on a configured service; may change things, never retried."""

    name = "http_request"
    idempotent = False

    def __init__(self, clients: dict[str, ServiceClient]) -> None:
        super().__init__(clients)
        methods = sorted({m for c in clients.values() for m in c.settings.methods})
        self.risk = "dangerous" if "DELETE" in methods else "write"
        self.description = (
            "Send an HTTP request (may create, change or delete data) to a configured service and "
            "return its JSON answer. Use GET via http_get for reads; use this to submit, update or "
            "remove something the user asked for. Services:\n" + _service_lines(clients)
        )
        self.input_schema = {  # type: ignore[misc]
            "type": "object",
            "properties": {
                "service": {"type": "string", "enum": sorted(clients), "description": "Which service to call."},
                "method": {"type": "string", "enum": methods, "description": "HTTP method."},
                "path": {"type": "string", "description": "Path below the service's base URL, e.g. /pets."},
                "query": QUERY_SCHEMA,
                "json": {
                    "type": ["object", "array"],
                    "description": "JSON body to send (POST/PUT/PATCH).",
                },
            },
            "required": ["service", "method", "path"],
            "additionalProperties": False,
        }

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> Any:
        client = self._client(params)
        method = str(params.get("method", "")).upper()
        if method not in client.settings.methods:
            raise InvalidArguments(
                "method", f"one of {client.settings.methods} for service {client.name!r}", "GET"
            )
        if params.get("json") is not None and method in SAFE_METHODS:
            raise InvalidArguments("json", f"left out for {method} (only POST, PUT, PATCH and DELETE send a body)")
        has_body = params.get("json") is not None
        return await client.send(
            method,
            params["path"],
            query=query_pairs(params.get("query")),
            json_body=params.get("json"),
            has_body=has_body,
            idempotency_key=getattr(ctx, "idempotency_key", None),
        )
