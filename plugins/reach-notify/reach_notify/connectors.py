"""The `send_webhook` and `send_email` tools."""

from __future__ import annotations

import re
from typing import Any

from reach_core import ConfigError, Connector, Denied, InvalidArguments

from . import mail, webhook
from .headers import one_line
from .recipients import RecipientRefused, describe_rules, outside_allow_list, parse_recipients
from .settings import NotifySettings


class _Notifier(Connector):
    """Shared stance: a message cannot be unsent, so never retry it automatically."""

    risk = "write"
    idempotent = False
    max_retries = 0
    tags = ("notify", "message")


class SendWebhook(_Notifier):
    """Posts a text message to one of the configured channels."""

    name = "send_webhook"
    risk = "write"

    def __init__(self, settings: NotifySettings) -> None:
        self.settings = settings
        self.targets = {
            channel: webhook.WebhookTarget(
                channel=channel,
                url=_check_url(hook.url, channel),
                headers=_check_headers(hook.headers, hook.idempotency_header, channel),
                text_field=hook.text_field,
                idempotency_header=hook.idempotency_header or None,
                timeout=hook.timeout,
                allow_private=hook.allow_private,
                proxy=_check_proxy(hook.proxy, channel),
                allow_mentions=hook.allow_mentions,
            )
            for channel, hook in settings.webhooks.items()
        }
        self.guard = webhook.new_guard()  # replaceable: tests give it a resolver
        self.timeout = max((t.timeout for t in self.targets.values()), default=10.0) + 2
        self.transport: Any = None  # an httpx transport seam for offline tests
        channels = "; ".join(
            f"{name}: {hook.description}" if hook.description else name
            for name, hook in sorted(settings.webhooks.items())
        )
        self.description = (
            "Post a short text message to a team chat channel through its webhook. "
            "Use when the user asks to notify, tell or alert a team or channel. Sent once, never retried: "
            "do not call again for the same message. "
            f"Channels: {channels}."
        )
        self.input_schema = {  # type: ignore[misc]  # per-instance: enums come from settings
            "type": "object",
            "properties": {
                "channel": {
                    "type": "string",
                    "enum": sorted(self.targets),
                    "description": "Name of the configured channel.",
                },
                "text": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": settings.max_text_chars,
                    "description": "The message, plain text.",
                },
            },
            "required": ["channel", "text"],
            "additionalProperties": False,
        }

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        channel, text = params.get("channel"), params.get("text")
        target = self.targets.get(channel) if isinstance(channel, str) else None
        if target is None:
            names = sorted(self.targets)
            raise InvalidArguments("channel", "one of: " + ", ".join(names), names[0])
        if not isinstance(text, str) or not text.strip():
            raise InvalidArguments("text", "a non-empty message", '"Deploy finished"')
        if len(text) > self.settings.max_text_chars:
            raise InvalidArguments(
                "text", f"at most {self.settings.max_text_chars} characters", "a shorter summary"
            )
        key = getattr(ctx, "idempotency_key", None)
        status = await webhook.post(target, text, key, transport=self.transport, guard=self.guard)
        return {"sent": True, "channel": channel, "status": status}


class SendEmail(_Notifier):
    """Sends a plain-text e-mail to allow-listed recipients."""

    name = "send_email"
    risk = "write"

    def __init__(self, settings: NotifySettings) -> None:
        assert settings.smtp is not None, "SendEmail needs [plugins.reach-notify.smtp]"
        self.settings = settings
        smtp = settings.smtp
        self.target = mail.SmtpTarget(
            host=smtp.host,
            port=smtp.port,
            sender=smtp.from_,
            starttls=smtp.starttls,
            implicit_tls=smtp.ssl,
            ca_file=smtp.ca_file,
            username=smtp.username,
            password=smtp.password,
            timeout=smtp.timeout,
        )
        self.timeout = smtp.timeout + 5
        self.description = (
            "Send a plain-text e-mail. Use when the user asks to e-mail or write to "
            "someone. Recipients must be on the allowed list "
            f"({describe_rules(settings.allow_recipients)}). Sent once, never retried: "
            "do not call again for the same message."
        )
        self.input_schema = {  # type: ignore[misc]  # per-instance: enums come from settings
            "type": "object",
            "properties": {
                "to": {
                    "anyOf": [
                        {"type": "string"},
                        {
                            "type": "array",
                            "items": {"type": "string"},
                            "minItems": 1,
                            "maxItems": settings.max_recipients,
                        },
                    ],
                    "description": "One address, or a list of addresses (plain, no names).",
                },
                "subject": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": settings.max_subject_chars,
                    "description": "One line.",
                },
                "body": {
                    "type": "string",
                    "maxLength": settings.max_body_chars,
                    "description": "Plain text.",
                },
            },
            "required": ["to", "subject", "body"],
            "additionalProperties": False,
        }

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        try:
            to = parse_recipients(params.get("to"), limit=self.settings.max_recipients)
        except RecipientRefused as bad:
            raise InvalidArguments(bad.field, bad.expected, bad.example) from None
        outside = outside_allow_list(to, self.settings.allow_recipients)
        if outside:
            raise Denied(
                f"{', '.join(outside)} {'is' if len(outside) == 1 else 'are'} not an allowed "
                f"recipient; allowed: {describe_rules(self.settings.allow_recipients)}. "
                "Nothing was sent; ask the user whom to send it to.",
                fix="add the address or its domain to [plugins.reach-notify] allow_recipients",
            )
        subject = one_line("subject", params.get("subject"), self.settings.max_subject_chars, '"Deploy finished"')
        body = params.get("body")
        if not isinstance(body, str):
            raise InvalidArguments("body", "plain text", '"The deploy finished at 10:02."')
        if len(body) > self.settings.max_body_chars:
            raise InvalidArguments(
                "body", f"at most {self.settings.max_body_chars} characters", "a shorter text"
            )
        msg_id = mail.message_id(getattr(ctx, "idempotency_key", None), self.target.sender)
        message = mail.build_message(
            sender=self.target.sender, to=to, subject=subject, body=body, msg_id=msg_id
        )
        raw = mail.render(message, sender=self.target.sender, to=to)
        refused = await mail.send(self.target, raw, to)
        content: dict[str, Any] = {
            "sent": True,
            "to": [addr for addr in to if addr not in refused],
            "message_id": msg_id,
        }
        if refused:
            content["refused"] = refused
        return content


def _check_url(url: str, channel: str) -> str:
    """The webhook URL read strictly, as reach-http reads a base URL (see ``reach_http.urls``).

    The message names the webhook, never the URL: webhook URLs usually carry a token.
    """
    if not url.lower().startswith(("https://", "http://")):
        raise ConfigError(
            f"[plugins.reach-notify.webhooks.{channel}] url must start with https:// or http://"
        )
    problem = webhook.url_problem(url)
    if problem:
        raise ConfigError(f"[plugins.reach-notify.webhooks.{channel}] url is not usable: {problem}")
    return url


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _check_headers(headers: dict[str, str], idempotency_header: str | None, channel: str) -> dict[str, str]:
    """The webhook's headers, if every name is an HTTP token and every value one line of
    printable ASCII without spaces at either end; ``ConfigError`` otherwise.

    Checked at start-up because a value read from a secret file usually ends with a line
    break: refused by the HTTP stack only while sending, that was reported as "the message
    may have arrived" (nothing had been sent), and httpcore's debug log quoted the value,
    a token. The error names the header, never its value.
    """
    where = f"[plugins.reach-notify.webhooks.{channel}]"
    for name in [*headers, *([idempotency_header] if idempotency_header else [])]:
        if not _HEADER_NAME.fullmatch(name):
            raise ConfigError(f"{where} header name {name!r} is not a plain HTTP header name")
    for name, value in headers.items():
        if any(not (" " <= c <= "~" or c == "\t") for c in value) or value != value.strip(" \t"):
            raise ConfigError(
                f"{where} headers: the value of {name} is not usable: it must be one line of printable "
                "ASCII without spaces at either end (a value read from a file often ends with a line break)"
            )
    return dict(headers)


def _check_proxy(proxy: str | None, channel: str) -> str | None:
    if proxy is None:
        return None
    problem = webhook.url_problem(proxy) if proxy.lower().startswith(("http://", "https://")) else "not http(s)"
    if problem:
        raise ConfigError(f"[plugins.reach-notify.webhooks.{channel}] proxy is not usable: {problem}")
    return proxy
