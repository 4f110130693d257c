"""Settings -> connectors: the generic tools plus one tool per OpenAPI operation."""

from __future__ import annotations

import logging
from typing import Any

import httpx
from pydantic import ValidationError

from reach_core import ConfigError, Connector

from .client import Origin, ServiceClient, origin
from .connectors import HttpGet, HttpRequest
from .guard import AddressGuard, Resolver
from .openapi import OpenAPIError, build_operations, load_document, server_url
from .openapi.connector import OpenAPIOperation
from .openapi.operations import OperationSpec, Skipped
from .openapi.text import printable
from .settings import HttpSettings, url_problem

__all__ = ["build_connectors", "check_document_server"]

log = logging.getLogger("reach.reach-http")


def check_document_server(url: str) -> None:
    """The document's server URL passes the same checks as a configured ``base_url``.

    Its host was written by whoever wrote the document, not by the operator, so it
    is never covered by ``allow_private`` (see :class:`ServiceClient`) either.
    """
    if not url.lower().startswith(("http://", "https://")):
        raise OpenAPIError(f"the document's server URL {url!r} is not http(s); set base_url")
    problem = url_problem(url)
    if problem:
        raise OpenAPIError(f"the document's server URL {url!r} (servers[0].url) is not usable ({problem}); "
                           "set base_url")


class SettingsInvalid(ConfigError, ValueError):
    """Settings given as a dict that do not validate: a ``ConfigError`` like every set-up
    error, and still the ``ValueError`` that pydantic's error was before (callers that
    caught that keep working)."""


def build_connectors(
    settings: HttpSettings | dict[str, Any] | None,
    *,
    resolver: Resolver | None = None,
    guard: AddressGuard | None = None,
) -> list[Connector]:
    """Every tool the settings describe. ``resolver`` replaces DNS (tests, pinned names);
    ``guard`` replaces the whole address check (tests of what happens behind it)."""
    if settings is None:
        settings = HttpSettings()
    elif isinstance(settings, dict):
        try:
            settings = HttpSettings.model_validate(settings)
        except ValidationError as exc:
            raise SettingsInvalid(f"[plugins.reach-http]: {exc}") from None
    if guard is None:
        guard = AddressGuard(resolver) if resolver is not None else AddressGuard()
    generic: dict[str, ServiceClient] = {}
    tools: list[Connector] = []
    taken = {"http_get", "http_request"}
    for name, service in settings.services.items():
        base = service.base_url
        # allow_private opens only hosts the operator wrote: base_url and the document's URL
        written: list[Origin] = [origin(httpx.URL(base))] if base else []
        if service.openapi and service.openapi.lower().startswith(("http://", "https://")):
            written.append(origin(httpx.URL(service.openapi)))
        specs: list[OperationSpec] = []
        skipped: list[Skipped] = []
        if service.openapi:
            try:
                loaded = load_document(
                    service.openapi, guard=guard, allow_private=service.allow_private,
                    timeout=max(service.timeout, 10.0), verify=service.verify,
                )
                if not base:
                    base = server_url(loaded.document, loaded.url)
                    if base:
                        check_document_server(base)
                specs, skipped = build_operations(
                    loaded.document, taken=taken, prefix=service.prefix, only=service.operations
                )
                if "methods" in service.model_fields_set:
                    # a written allow-list bounds the document's operations too: methods = ["GET"]
                    # means read-only, whatever DELETE/PUT operations the document declares
                    specs = [s for s in specs if s.method in service.methods]
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
        for left in skipped:  # what `reach http import` lists as skipped (routine for file uploads: info)
            log.info("service %s: operation %s %s skipped: %s", name, left.method, printable(left.path),
                     printable(left.reason))
        for spec in specs:
            if spec.changes:  # the operator sees at start-up what `reach http import` listed
                log.warning("service %s, tool %s: text for the model changed: %s", name, spec.name,
                            "; ".join(spec.changes))
        client = ServiceClient(name, service, guard, base, private_origins=written)
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
