"""Settings of `[plugins.reach-notify]`: where messages may go and how they are sent.

Secrets (webhook URLs, SMTP credentials) are written `{ env = "VAR" }` in
reach.toml; the core replaces them with the variable's value before these
models validate, so a missing variable is a ConfigError at start-up.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .recipients import is_address, normalise_rule

_CHANNEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class Webhook(BaseModel):
    """One named channel: the model says `ops`, never the URL (which is often a secret)."""

    model_config = ConfigDict(extra="forbid")

    url: str
    description: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    text_field: str = Field(
        default="text", description='JSON key of the message; Discord wants "content".'
    )
    idempotency_header: str | None = Field(
        default="Idempotency-Key",
        description="Header carrying the call's idempotency key; empty to omit.",
    )
    timeout: float = Field(default=10.0, gt=0)
    allow_private: bool | None = Field(
        default=None,
        description=(
            "Loopback/private addresses (an in-house chat server); metadata stays refused. "
            "Unset: allowed only when the URL names the address itself (127.0.0.1, [::1], "
            "10.0.0.5, localhost), never for a name that resolves to one; true: names too; "
            "false: never."
        ),
    )
    proxy: str | None = Field(
        default=None,
        description="http(s) proxy for this webhook; environment proxies and ~/.netrc are never used.",
    )
    allow_mentions: bool = Field(
        default=False,
        description="Let the model's text mention people or everyone (<!channel>, <@U123>, @everyone).",
    )


class SmtpSettings(BaseModel):
    """How to reach the mail server."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    host: str = "localhost"
    port: int = Field(default=25, ge=1, le=65535)
    from_: str = Field(alias="from")
    starttls: bool = False
    ssl: bool = Field(default=False, description="Implicit TLS (port 465) instead of STARTTLS.")
    ca_file: str | None = Field(default=None, description="CA bundle to verify the server with.")
    username: str | None = None
    password: str | None = None
    timeout: float = Field(default=15.0, gt=0)

    @field_validator("from_")
    @classmethod
    def _sender_is_address(cls, value: str) -> str:
        if not is_address(value):
            raise ValueError(
                f"`from` must be a plain address like reach@example.com, got {value!r}"
            )
        return value


class NotifySettings(BaseModel):
    """The whole plugin."""

    model_config = ConfigDict(extra="forbid")

    webhooks: dict[str, Webhook] = Field(default_factory=dict)
    smtp: SmtpSettings | None = None
    allow_recipients: list[str] = Field(
        default_factory=list,
        description="Addresses (ops@example.com) or domains (example.com or @example.com).",
    )
    max_recipients: int = Field(default=10, ge=1)
    max_text_chars: int = Field(default=4_000, ge=1)
    max_subject_chars: int = Field(default=200, ge=1)
    max_body_chars: int = Field(default=20_000, ge=1)

    @field_validator("webhooks")
    @classmethod
    def _channel_names(cls, value: dict[str, Webhook]) -> dict[str, Webhook]:
        for name in value:
            if not _CHANNEL_NAME.match(name):
                raise ValueError(f"webhook name {name!r} must be a simple name like 'ops'")
        return value

    @field_validator("allow_recipients")
    @classmethod
    def _rules(cls, value: list[str]) -> list[str]:
        return [normalise_rule(rule) for rule in value]
