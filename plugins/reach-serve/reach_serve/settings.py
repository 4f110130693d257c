"""Settings of ``[plugins.reach-serve]``.

Example::

    [plugins.reach-serve]
    tokens = { "tok-support-0001" = "support" }          # bearer token -> agent
    clients = [{ token = { env = "OPS_TOKEN" }, agent = "ops" }]
    operators = ["ops"]        # agents that may decide confirmations and read the audit log
    anonymous_agent = ""       # agent for requests without a token ("" = refuse them)
    allowed_hosts = []         # Host names anonymous requests may use (IP addresses and localhost always)
    trusted_proxies = []       # reverse proxies whose X-Forwarded-For names the client (none: the peer is)
    read_timeout = 30          # seconds a client has to send a request's head, and again its body
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from reach_core.tokens import MIN_TOKEN_CHARS, check_proxies, check_token

__all__ = ["MIN_TOKEN_CHARS", "ClientEntry", "ServeHttpSettings"]

class ClientEntry(BaseModel):
    """A bearer token (usually ``{ env = "VAR" }``) and the reach agent it acts as."""

    model_config = ConfigDict(extra="forbid")

    token: str
    agent: str

    @field_validator("token")
    @classmethod
    def _token(cls, token: str) -> str:
        return check_token(token)


class ServeHttpSettings(BaseModel):
    """Who may call, as which agent, and who may approve."""

    model_config = ConfigDict(extra="forbid")

    tokens: dict[str, str] = Field(default_factory=dict, description="bearer token -> agent",
                                   json_schema_extra={"reach_secret_keys": True})  # the keys are secrets
    clients: list[ClientEntry] = Field(default_factory=list)
    operators: list[str] = Field(
        default_factory=list,
        description="agents allowed to list/approve/reject confirmations and read the audit log",
    )
    anonymous_agent: str | None = Field(
        default=None, description="agent of requests without a token; unset refuses them (401)"
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="host names (besides IP addresses and localhost) requests without a token may use in Host; "
                    "a name a web page re-points at this server is refused (DNS rebinding)",
    )
    max_body_bytes: int = Field(default=1_000_000, ge=1024)
    max_token_failures: int = Field(
        default=30, ge=1,
        description="failed bearer tokens (API and console login) one client address may send per minute; "
                    "then its tokens are not read until the minute is over (429 with Retry-After)",
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="addresses or networks (127.0.0.1, 10.0.0.0/8) of the reverse proxies in front, whose "
                    "X-Forwarded-For names the client whose failed tokens are counted; empty: the peer is the "
                    "client and no forwarding header is believed",
    )
    read_timeout: float = Field(
        default=30.0, gt=0, le=3600,
        description="seconds a client has to send a request's head (then the connection is closed) and, "
                    "once the server reads it, its body (then 408)",
    )
    sweep_interval: float = Field(
        default=15.0, ge=0,
        description="on a shared store: how often (s) ledger rows of dead instances are marked unknown; "
                    "0 = only at start",
    )

    stale_margin: float = Field(
        default=10.0, ge=0,
        description="a running ledger row older than the longest tool timeout plus this many seconds "
                    "belongs to a dead instance",
    )

    @field_validator("tokens")
    @classmethod
    def _tokens(cls, tokens: dict[str, str]) -> dict[str, str]:
        for token in tokens:
            check_token(token)
        return tokens

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, proxies: list[str]) -> list[str]:
        return check_proxies(proxies)

    @model_validator(mode="after")
    def _anonymous_is_no_operator(self) -> ServeHttpSettings:
        """A request without a token proves nothing about who sent it, so it never decides."""
        if self.anonymous_agent and self.anonymous_agent in self.operators:
            raise ValueError(f"anonymous_agent {self.anonymous_agent!r} is listed in operators: requests "
                             "without a token would approve calls and read the audit log; name another agent "
                             "for them, or remove anonymous_agent")
        return self

    def token_agents(self) -> dict[str, str]:
        """Every configured token mapped to its agent (``clients`` entries win on a clash)."""
        out = {k: v for k, v in self.tokens.items()}
        out.update({c.token: c.agent for c in self.clients})
        return out
