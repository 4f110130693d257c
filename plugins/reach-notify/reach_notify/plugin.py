"""Hook implementations of reach-notify (entry point `reach-notify`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from .settings import NotifySettings


# Only reach_core.hookimpl is imported with this module (``reach plugins`` imports it);
# connectors and the pydantic settings model load when a Reach starts the plugin.


@hookimpl
def reach_plugin_settings() -> type[NotifySettings]:
    from .settings import NotifySettings

    return NotifySettings


@hookimpl
def reach_register_tools(register: Any, settings: NotifySettings | None) -> None:
    """Each tool appears only when it has somewhere to send: no channel, no `send_webhook`."""
    from .connectors import SendEmail, SendWebhook
    from .settings import NotifySettings

    settings = settings if settings is not None else NotifySettings()
    if settings.webhooks:
        register(SendWebhook(settings))
    if settings.smtp is not None:
        register(SendEmail(settings))
