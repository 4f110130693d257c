"""reach-http: configured HTTP services and OpenAPI operations as reach tools.

The model names a configured service and a path, never a raw URL; every hop is
checked by an SSRF guard and connected to the exact address that was checked.
"""

from typing import TYPE_CHECKING

from reach_core.lazy import exports

# Public names and their modules, imported on first use (PEP 562): loading the
# plugin at start-up must not import the HTTP stack when no service is configured.
_EXPORTS = {
    "build_connectors": ".build",
    "ServiceClient": ".client",
    "HttpGet": ".connectors",
    "HttpRequest": ".connectors",
    "AddressGuard": ".guard",
    "HostRefused": ".guard",
    "Resolver": ".guard",
    "StaticResolver": ".guard",
    "SystemResolver": ".guard",
    "refusal_reason": ".guard",
    "OpenAPIOperation": ".openapi.connector",
    "EnvSecret": ".settings",
    "HttpSettings": ".settings",
    "ServiceSettings": ".settings",
}

if TYPE_CHECKING:
    from .build import build_connectors
    from .client import ServiceClient
    from .connectors import HttpGet, HttpRequest
    from .guard import (
        AddressGuard,
        HostRefused,
        Resolver,
        StaticResolver,
        SystemResolver,
        refusal_reason,
    )
    from .openapi.connector import OpenAPIOperation
    from .settings import EnvSecret, HttpSettings, ServiceSettings


__getattr__ = exports(__name__, _EXPORTS)


__all__ = [
    "AddressGuard",
    "EnvSecret",
    "HostRefused",
    "HttpGet",
    "HttpRequest",
    "HttpSettings",
    "OpenAPIOperation",
    "Resolver",
    "ServiceClient",
    "ServiceSettings",
    "StaticResolver",
    "SystemResolver",
    "build_connectors",
    "refusal_reason",
]
