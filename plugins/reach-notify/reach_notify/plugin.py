"""Hook implementations of reach-notify (entry point `reach-notify`)."""

from __future__ import annotations

from typing import Any

from reach_core import hookimpl

from .connectors import SendEmail, SendWebhook
from .settings import NotifySettings


@hookimpl
def reach_plugin_settings() -> type[NotifySettings]:
    return NotifySettings


@hookimpl
def reach_register_tools(register: Any, settings: NotifySettings | None) -> None:
    """Each tool appears only when it has somewhere to send: no channel, no `send_webhook`."""
    settings = settings if settings is not None else NotifySettings()
    if settings.webhooks:
        register(SendWebhook(settings))
    if settings.smtp is not None:
        register(SendEmail(settings))
