"""reach-http: configured HTTP services and OpenAPI operations as reach tools.

The model names a configured service and a path, never a raw URL; every hop is
checked by an SSRF guard and connected to the exact address that was checked.
"""

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
