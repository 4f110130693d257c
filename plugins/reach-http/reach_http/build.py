"""Settings -> connectors: the generic tools plus one tool per OpenAPI operation."""

from __future__ import annotations

from typing import Any

from reach_core import ConfigError, Connector

from .client import ServiceClient
from .connectors import HttpGet, HttpRequest
from .guard import AddressGuard, Resolver
from .openapi import OpenAPIError, build_operations, load_document, server_url
from .openapi.connector import OpenAPIOperation
from .openapi.operations import OperationSpec
from .settings import HttpSettings

__all__ = ["build_connectors"]


def build_connectors(settings: HttpSettings | dict[str, Any] | None, *, resolver: Resolver | None = None) -> list[Connector]:
    """Every tool the settings describe. ``resolver`` replaces DNS (tests, pinned names)."""
    if settings is None:
        settings = HttpSettings()
    elif isinstance(settings, dict):
        settings = HttpSettings.model_validate(settings)
    guard = AddressGuard(resolver) if resolver is not None else AddressGuard()
    generic: dict[str, ServiceClient] = {}
    tools: list[Connector] = []
    taken = {"http_get", "http_request"}
    for name, service in settings.services.items():
        base = service.base_url
        specs: list[OperationSpec] = []
        if service.openapi:
            try:
                loaded = load_document(
                    service.openapi, guard=guard, allow_private=service.allow_private,
                    timeout=max(service.timeout, 10.0), verify=service.verify,
                )
                base = base or server_url(loaded.document, loaded.url)
                specs, _skipped = build_operations(
                    loaded.document, taken=taken, prefix=service.prefix, only=service.operations
                )
            except OpenAPIError as exc:
                raise ConfigError(f"[plugins.reach-http.services.{name}] openapi: {exc}") from None
            except Exception as exc:  # noqa: BLE001 - fetch failures are set-up errors too
                raise ConfigError(
                    f"[plugins.reach-http.services.{name}] openapi: cannot load {service.openapi}: {exc}"
                ) from None
            if not base:
                raise ConfigError(
                    f"[plugins.reach-http.services.{name}]: the OpenAPI document has no absolute server URL; "
                    "set base_url"
                )
        assert base is not None
        client = ServiceClient(name, service, guard, base)
        tools.extend(OpenAPIOperation(spec, client) for spec in specs)
        if service.offers_generic:
            generic[name] = client
    if generic:
        if any("GET" in c.settings.methods for c in generic.values()):
            tools.insert(0, HttpGet({n: c for n, c in generic.items() if "GET" in c.settings.methods}))
        writers = {n: c for n, c in generic.items() if set(c.settings.methods) - {"GET", "HEAD", "OPTIONS"}}
        if writers:
            tools.insert(1 if len(tools) and isinstance(tools[0], HttpGet) else 0, HttpRequest(writers))
    return tools
