"""Settings of ``[plugins.reach-mcp]``: the MCP servers reach is a client of, and ``reach serve mcp``.

Example::

    [plugins.reach-mcp.servers.files]
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/share"]

    [plugins.reach-mcp.servers.crm]
    url = "https://crm.example.com/mcp"
    headers = { Authorization = { env = "CRM_MCP_AUTH" } }
    min_risk = "write"           # do not trust this server's readOnlyHint

    [plugins.reach-mcp.server]
    tokens = { "tok-dev" = "support" }
    clients = [{ token = { env = "OPS_TOKEN" }, agent = "ops" }]
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from reach_core.tokens import MIN_TOKEN_CHARS, check_proxies, check_token

__all__ = ["ClientEntry", "McpSettings", "ServeSettings", "ServerConfig", "Tier"]

Tier = Literal["read", "write", "dangerous"]
_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}\Z")  # \Z: "$" would let "name\n" through


class ServerConfig(BaseModel):
    """One MCP server: a stdio ``command`` or a streamable-HTTP ``url`` (exactly one)."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    bearer_token: str | None = None
    enabled: bool = True
    prefix: str | None = None
    tools: list[str] | None = None
    exclude: list[str] = Field(default_factory=list)
    timeout: float = Field(default=30.0, gt=0)
    connect_timeout: float = Field(default=10.0, gt=0)
    refresh: float = Field(default=60.0, ge=0)
    min_risk: Tier = "read"
    default_risk: Tier = "write"

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("give exactly one of `command` (stdio) or `url` (streamable HTTP)")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError("`url` must start with http:// or https://")
        return self

    @field_validator("tools", "exclude")
    @classmethod
    def _names_as_typed(cls, value: list[str] | None) -> list[str] | None:
        """A remote tool name or glob that differs from the one meant only by what a person
        does not see (spaces around it, a zero-width or no-break space, a full-width or
        Cyrillic letter) matches nothing: ``exclude = ["delete_repo "]`` excluded nothing."""
        from reach_core.config_problems import look_alike, oddities, shown

        for pattern in value or ():
            found = oddities(pattern)
            if found:
                meant = look_alike(pattern, space="_")
                hint = f"; did you mean {meant!r}?" if meant else ""
                raise ValueError(f"{shown(pattern)} {' and '.join(found)}: it matches no tool the server "
                                 f"names{hint}")
        return value

    @field_validator("prefix")
    @classmethod
    def _prefix_as_typed(cls, value: str | None) -> str | None:
        from reach_core.config_problems import look_alike, oddities, shown

        found = [f for f in oddities(value) if f != "is empty"] if value is not None else []
        if found:
            meant = look_alike(value or "", space="_")
            raise ValueError(f"prefix {shown(value or '')} {' and '.join(found)}: its tools would not be named "
                             f"`{meant}__NAME`, so `allow`/`deny` entries naming them would match nothing; "
                             f"did you mean {meant!r}?")
        return value

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    def http_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.bearer_token:
            headers["Authorization"] = f"Bearer {self.bearer_token}"
        return headers


class ClientEntry(BaseModel):
    """A bearer token (usually ``{ env = "VAR" }``) and the reach agent it acts as."""

    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=MIN_TOKEN_CHARS)
    agent: str

    _token = field_validator("token")(classmethod(lambda cls, v: check_token(v)))


class ServeSettings(BaseModel):
    """``reach serve mcp``: who may connect, as which agent."""

    model_config = ConfigDict(extra="forbid")

    #: bearer token -> agent; the tokens (keys) are configured secrets, masked wherever they turn up
    tokens: dict[str, str] = Field(default_factory=dict, json_schema_extra={"reach_secret_keys": True})
    clients: list[ClientEntry] = Field(default_factory=list)
    anonymous_agent: str | None = None
    stdio_agent: str | None = None
    path: str = "/mcp"
    name: str = "reach"
    output_schemas: bool = True
    allowed_hosts: list[str] = Field(default_factory=list)
    #: failed bearer tokens one client address may send per minute; then 429 until the minute is over
    max_token_failures: int = Field(default=30, ge=1)
    #: addresses or networks of the reverse proxies in front, whose X-Forwarded-For names the client
    #: (empty: the peer is the client, and no forwarding header is believed)
    trusted_proxies: list[str] = Field(default_factory=list)
    #: seconds a client has to send a request's head (then the connection is closed) and its body (then 408)
    read_timeout: float = Field(default=30.0, gt=0, le=3600)

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, proxies: list[str]) -> list[str]:
        return check_proxies(proxies)

    @field_validator("tokens")
    @classmethod
    def _token_lengths(cls, tokens: dict[str, str]) -> dict[str, str]:
        for token in tokens:
            check_token(token)
        return tokens

    def token_agents(self) -> dict[str, str]:
        """Every configured token mapped to its agent (``clients`` entries win on a clash)."""
        out = dict(self.tokens)
        out.update({c.token: c.agent for c in self.clients})
        return out


class McpSettings(BaseModel):
    """The whole ``[plugins.reach-mcp]`` table."""

    model_config = ConfigDict(extra="forbid")

    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    server: ServeSettings = Field(default_factory=ServeSettings)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, ServerConfig]) -> dict[str, ServerConfig]:
        for name in servers:
            if not _SERVER_NAME.match(name):
                raise ValueError(f"server name {name!r}: use 1-40 letters, digits, '_' or '-'")
        return servers
