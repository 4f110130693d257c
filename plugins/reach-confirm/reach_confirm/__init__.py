"""reach-confirm: a person approves exactly the call the model asked for, once."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .queue import Confirmation, ConfirmationError, Confirmations


def __getattr__(name: str) -> Any:
    """The exports, imported on first access: the entry point (``reach_confirm.plugin``)
    imports this package, and listing plugins must not pay for the queue."""
    if name in __all__:
        from . import queue

        return getattr(queue, name)
    raise AttributeError(f"module 'reach_confirm' has no attribute {name!r}")

__all__ = ["Confirmation", "ConfirmationError", "Confirmations"]
