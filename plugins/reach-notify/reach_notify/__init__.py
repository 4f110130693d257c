"""reach-notify: messages to people, through configured webhooks and SMTP.

Sending is a side effect that cannot be taken back, so both tools are `write`,
never retried, and forward the call's idempotency key to the receiver where it
has a place for one (an `Idempotency-Key` header; a derived `Message-ID`).
Targets are fixed in settings: the model picks a channel name or a recipient on
the allow-list, never a URL or an arbitrary address.
"""

from typing import TYPE_CHECKING

from reach_core.lazy import exports

# Public names and their modules, imported on first access (PEP 562): the entry
# point (reach_notify.plugin) imports this package, and listing plugins must not pay for them.
_EXPORTS = {
    "SendEmail": "connectors", "SendWebhook": "connectors", "NotifySettings": "settings",
    "SmtpSettings": "settings", "Webhook": "settings",
}

if TYPE_CHECKING:
    from .connectors import SendEmail, SendWebhook
    from .settings import NotifySettings, SmtpSettings, Webhook


__getattr__ = exports(__name__, _EXPORTS)


__all__ = ["NotifySettings", "SendEmail", "SendWebhook", "SmtpSettings", "Webhook"]
