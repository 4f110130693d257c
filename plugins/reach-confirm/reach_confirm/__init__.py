"""reach-confirm: a person approves exactly the call the model asked for, once."""

from .queue import Confirmation, ConfirmationError, Confirmations

__all__ = ["Confirmation", "ConfirmationError", "Confirmations"]
