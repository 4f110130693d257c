"""Settings of `[plugins.reach-notify]`: where messages may go and how they are sent.

Secrets (webhook URLs, SMTP credentials) are written `{ env = "VAR" }` in
reach.toml; the core replaces them with the variable's value before these
models validate, so a missing variable is a ConfigError at start-up.
"""

from __future__ import annotations

import ipaddress
import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
    allow_plaintext_auth: bool = Field(
        default=False,
        description=(
            "Log in without TLS to a server that is not on this machine (one without TLS, on a "
            "network you trust); without it, `username` needs `starttls` or `ssl` unless `host` is loopback."
        ),
    )
    timeout: float = Field(default=15.0, gt=0)

    @field_validator("from_")
    @classmethod
    def _sender_is_address(cls, value: str) -> str:
        if not is_address(value):
            raise ValueError(
                f"`from` must be a plain address like reach@example.com, got {value!r}"
            )
        return value

    @model_validator(mode="after")
    def _login_is_sendable(self) -> SmtpSettings:
        """The login is checked when reach starts, never quoted (it is a secret).

        smtplib sends AUTH as ASCII: a non-ASCII username or password failed only at the
        first send, as an internal ``UnicodeEncodeError``. And without ``starttls`` or
        ``ssl`` the password crosses the network base64-encoded, that is in clear text, to
        anyone on the path; a server on this machine (loopback) is the one exception, and
        ``allow_plaintext_auth`` says so for a server that has no TLS on a trusted network."""
        for field in ("username", "password"):
            value = getattr(self, field)
            if value is not None and not value.isascii():
                raise ValueError(
                    f"`{field}` holds a non-ASCII character, which SMTP login (smtplib) cannot send; "
                    f"use an ASCII {field} (the mail provider's app password, for one)"
                )
        if self.username and not (self.starttls or self.ssl) and not self.allow_plaintext_auth \
                and not _is_loopback(self.host):
            raise ValueError(
                f"`username` is set but neither `starttls` nor `ssl` is: the password would go to "
                f"{self.host!r} in clear text; set `starttls = true` (usually port 587) or `ssl = true` "
                "(port 465), or `allow_plaintext_auth = true` for a server without TLS on a network you trust"
            )
        return self


def _is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1) as written: a server on this
    machine. Any other spelling (``localhost.``, ``localhost.example.com``, a name that
    resolves to 127.0.0.1) is a name a resolver answers, so it counts as the network."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
