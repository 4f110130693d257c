"""Settings of ``[plugins.reach-http]``: the services a model may reach, and how.

Only services named here can be called: the model picks a service by name and a
path below its base URL, never a free URL. Secrets are written as
``{ env = "VAR" }`` so they never sit in the config file. From ``reach.toml``
the core substitutes them when settings load; an :class:`EnvSecret` that reaches
this plugin (settings built in Python) is read when each request is sent, so a
rotated token needs no restart.
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .guard import HostRefused, parse_host
from .urls import check_url_text

__all__ = [
    "ALL_METHODS",
    "EnvSecret",
    "HttpSettings",
    "MissingSecret",
    "Secret",
    "ServiceSettings",
    "reveal",
]

ALL_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
SERVICE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")


class EnvSecret(BaseModel):
    """A secret read from an environment variable at use: ``{ env = "PETS_TOKEN" }``."""

    model_config = ConfigDict(extra="forbid")
    env: str


Secret = str | EnvSecret


class MissingSecret(LookupError):
    """An ``{ env = ... }`` secret names a variable that is not set."""


def reveal(secret: Secret) -> str:
    """The secret's value now; a missing variable is an error, never an empty header."""
    if isinstance(secret, str):
        return secret
    value = os.environ.get(secret.env)
    if value is None:
        raise MissingSecret(secret.env)
    return value


class BearerAuth(BaseModel):
    """``Authorization: Bearer <token>``."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["bearer"]
    token: Secret


class BasicAuth(BaseModel):
    """HTTP basic authentication."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["basic"]
    username: Secret
    password: Secret


class HeaderAuth(BaseModel):
    """An API key sent in a header, e.g. ``X-API-Key``."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["header"]
    name: str
    value: Secret


class QueryAuth(BaseModel):
    """An API key sent as a query parameter, e.g. ``?api_key=...``."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["query"]
    name: str
    value: Secret


Auth = Annotated[BearerAuth | BasicAuth | HeaderAuth | QueryAuth, Field(discriminator="type")]


class ServiceSettings(BaseModel):
    """One service: ``[plugins.reach-http.services.NAME]``."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    """Where requests go; the model only chooses paths below it."""
    openapi: str | None = None
    """A file path or URL of an OpenAPI 3.0/3.1 document: each operation becomes a tool."""
    description: str = ""
    """Shown to the model in the generic tools' descriptions: what this service is for."""
    headers: dict[str, Secret] = Field(default_factory=dict)
    auth: Auth | None = None
    timeout: float = Field(5.0, gt=0, le=300)
    """Seconds per request (connect + read); the tool's whole deadline is the core's."""
    methods: list[str] = Field(default_factory=lambda: ["GET", "HEAD", "POST", "PUT", "PATCH"])
    """Methods the generic ``http_request`` tool may use here; add DELETE to allow it. When written
    for an OpenAPI service, operations with other methods are not imported either."""
    generic: bool | None = None
    """Offer this service to ``http_get``/``http_request``; default: only when it has no ``openapi``."""
    operations: list[str] | None = None
    """OpenAPI only: import just these operationIds (default: all)."""
    prefix: str = ""
    """OpenAPI only: prepended to every generated tool name."""
    allow_private: bool = False
    """Allow this service's own host to be loopback/private. Off by default (SSRF guard)."""
    verify: bool | str = True
    """TLS verification: true, false, or a CA bundle path."""
    max_redirects: int = Field(5, ge=0, le=20)
    """0 hands redirects to the model as they are (status and location) instead of following them."""
    max_body_chars: int = Field(4000, ge=200)
    """Longer bodies are trimmed (lists cut, long strings shortened) with a marker."""
    max_response_bytes: int = Field(2_000_000, ge=1024)
    """Bytes read from the wire at most; the rest is dropped and the result marked truncated."""
    tags: list[str] = Field(default_factory=lambda: ["external_api"])

    @field_validator("methods")
    @classmethod
    def _known_methods(cls, value: list[str]) -> list[str]:
        upper = [m.upper() for m in value]
        unknown = sorted(set(upper) - set(ALL_METHODS))
        if unknown:
            raise ValueError(f"unknown HTTP method(s) {unknown}; use some of {list(ALL_METHODS)}")
        return upper

    @field_validator("base_url")
    @classmethod
    def _http_base(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not value.lower().startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        problem = url_problem(value)
        if problem:
            raise ValueError(f"base_url {value!r} is not usable: {problem}")
        return value

    @field_validator("openapi")
    @classmethod
    def _openapi_url(cls, value: str | None) -> str | None:
        if value is None or not value.lower().startswith(("http://", "https://")):
            return value  # a file path
        problem = url_problem(value, allow_query=True)
        if problem:
            raise ValueError(f"openapi URL {value!r} is not usable: {problem}")
        return value

    @model_validator(mode="after")
    def _needs_target(self) -> ServiceSettings:
        if not self.base_url and not self.openapi:
            raise ValueError("a service needs base_url, openapi, or both")
        return self

    @property
    def offers_generic(self) -> bool:
        """Whether the generic tools may reach this service."""
        if self.generic is not None:
            return self.generic and bool(self.base_url)
        return self.openapi is None and bool(self.base_url)


def url_problem(value: str, *, allow_query: bool = False) -> str | None:
    """Why ``value`` cannot be a service URL (see :mod:`.urls`), or None."""
    import httpx  # only when a service is configured: start-up stays light

    try:
        check_url_text(value, allow_query=allow_query)
        parse_host(httpx.URL(value).raw_host.decode("ascii"))
    except (httpx.InvalidURL, HostRefused, ValueError) as exc:  # BadURL and idna errors are ValueErrors
        return str(exc)
    return None


class HttpSettings(BaseModel):
    """``[plugins.reach-http]``."""

    model_config = ConfigDict(extra="forbid")

    services: dict[str, ServiceSettings] = Field(default_factory=dict)

    @field_validator("services")
    @classmethod
    def _service_names(cls, value: dict[str, ServiceSettings]) -> dict[str, ServiceSettings]:
        for name in value:
            if not SERVICE_NAME.match(name):
                raise ValueError(f"service name {name!r} must match {SERVICE_NAME.pattern}")
        return value
