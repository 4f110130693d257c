"""Every exception reach defines, in one place.

Two families, kept apart on purpose:

``ReachError`` — programming and set-up mistakes. They raise at once, at the
line that made them, because a person must fix them::

    ReachError
    ├── ConfigError        bad reach.toml / dict / env, unknown strategy name
    ├── PluginError        a plugin failed to load (with strict=True) or misbehaved
    ├── ConnectorError     a connector cannot be registered (bad name, bad schema, duplicate)
    └── ToolCallError      raised by invoke(..., raise_errors=True); carries the ToolResult

``ToolFailure`` — what went wrong with one tool call. Connectors and hooks raise
these; the pipeline never lets them escape: each becomes a ``ToolResult`` with
``ok=False`` and a stable ``error.code`` the model can act on::

    ToolFailure (code)
    ├── InvalidArguments   invalid_arguments   a field is wrong; says what is expected
    ├── NotFound           not_found           the thing asked about does not exist
    ├── BusinessError      execution_failed    the service said no on purpose; never retried
    ├── RetryableError     upstream_unavailable  transient; retried only for idempotent tools
    ├── RateLimited        rate_limited        slow down; carries retry_after
    ├── Denied             denied              policy or a hook refused the call
    └── NeedsConfirmation  needs_confirmation  a person must approve first

Any other exception out of a connector becomes ``execution_failed`` with a
model-safe message; the traceback goes to the log only.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

__all__ = [
    "ERROR_CODES",
    "BusinessError",
    "ConfigError",
    "ConnectorError",
    "Denied",
    "InvalidArguments",
    "NeedsConfirmation",
    "NotFound",
    "PluginError",
    "RateLimited",
    "ReachError",
    "RetryableError",
    "ToolCallError",
    "ToolFailure",
]

#: The stable error codes a ToolResult may carry.
ERROR_CODES = frozenset(
    {
        "unknown_tool",
        "invalid_json",
        "invalid_arguments",
        "not_found",
        "denied",
        "needs_confirmation",
        "timeout",
        "outcome_unknown",
        "rate_limited",
        "budget_exceeded",
        "execution_failed",
        "upstream_unavailable",
        "max_steps",
    }
)


class ReachError(Exception):
    """Base of every programming/set-up error reach raises."""


class ConfigError(ReachError):
    """Configuration is invalid: names the section and field."""


class PluginError(ReachError):
    """A plugin failed to load or broke a hook's contract."""


class ConnectorError(ReachError):
    """A connector cannot be registered: duplicate or illegal name, invalid schema."""


class ToolCallError(ReachError):
    """Raised by ``invoke(..., raise_errors=True)`` when a call fails."""

    def __init__(self, result: Any) -> None:
        self.result = result
        err = result.error
        super().__init__(f"{result.name}: {err.code}: {err.message}" if err else str(result))


class ToolFailure(Exception):
    """One tool call failed; becomes ``ToolResult(ok=False, error=...)``.

    ``code`` is one of :data:`ERROR_CODES`; ``message`` is written for a model.
    """

    code: str = "execution_failed"
    retryable: bool = False

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        retry_after: float | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        if code is not None:
            self.code = code
        self.message = message
        self.retry_after = retry_after
        self.details = details or {}
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        # subclasses take other __init__ arguments; rebuild from state so copy/pickle work
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[ToolFailure], args: tuple[Any, ...], state: dict[str, Any]) -> ToolFailure:
    obj = cls.__new__(cls)
    Exception.__init__(obj, *args)
    obj.__dict__.update(state)
    return obj


class InvalidArguments(ToolFailure):
    """A field of the arguments is wrong.

    ``InvalidArguments("date", "a date like YYYY-MM-DD", "2024-05-01")`` tells the
    model exactly what to send instead.
    """

    code = "invalid_arguments"

    def __init__(
        self,
        field: str,
        expected: str | None = None,
        example: Any = None,
        *,
        message: str | None = None,
    ) -> None:
        self.field = field
        self.expected = expected
        self.example = example
        if message is None:
            message = f"`{field}` must be {expected}" if expected else f"`{field}` is not valid"
            if example is not None:
                message += f", e.g. {example}"
            message += "; send the call again with a corrected value."
        super().__init__(message)


class NotFound(ToolFailure):
    """The thing the model asked about does not exist."""

    code = "not_found"

    def __init__(self, what: str, *, message: str | None = None) -> None:
        self.what = what
        super().__init__(message or _not_found_message(what))


@functools.cache
def _sentence() -> re.Pattern[str]:
    """Compiled on first use (as ``_bare_key``): ``reach plugins`` imports this module and needs neither."""
    return re.compile(r"[;.!?:]\s|[;.!?]$|^(no|none|there (is|are)|cannot|can't|could not|couldn't|unknown)\b"
                      r"|\b(not found|not exist|no such|doesn't exist|does not exist|not known)\b", re.I)


def _not_found_message(what: str) -> str:
    """``NotFound("order A-17")`` says the thing was not found; ``NotFound("no order A-17;
    ask the user for the number")`` is already a sentence and is kept as it is."""
    what = what.strip()
    if _sentence().search(what):
        return what if what[-1:] in ".!?" else what + "."
    return f"{what} was not found; check the name or ask the user."


class BusinessError(ToolFailure):
    """The service refused on purpose (bad state, no permission upstream). Never retried."""

    code = "execution_failed"


class RetryableError(ToolFailure):
    """A transient failure (connection error, 502/503/504). Retried only for idempotent tools."""

    code = "upstream_unavailable"
    retryable = True

    def __init__(self, message: str = "the service is unavailable", *, retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=retry_after)


class RateLimited(ToolFailure):
    """The upstream or reach's own limiter says slow down."""

    code = "rate_limited"
    retryable = True

    def __init__(self, retry_after: float | None = None, message: str | None = None) -> None:
        if message is None:
            message = "rate limit reached"
            if retry_after is not None:
                message += f"; try again in {retry_after:.0f} s"
        super().__init__(message, retry_after=retry_after)


@functools.cache
def _bare_key() -> re.Pattern[str]:
    return re.compile(r"[A-Za-z0-9_-]+\Z")


def _toml_key(key: str) -> str:
    return key if _bare_key().match(key) else json.dumps(key, ensure_ascii=False)


def config_line(table: str | tuple[str, ...], key: str, value: Any) -> str:
    """One line of configuration as a ``fix`` names it: ``[agents.support] allow = ["a", "b"]``.

    A fix is for a person (and tools) to apply as written: every such line in it is
    to be set, together. ``table`` is a dotted path or a tuple of its parts (parts
    are quoted when TOML needs it: ``agents."ops.bot"``); ``value`` is written as
    JSON, which is also TOML for strings, numbers, booleans and lists of them.
    """
    parts = table.split(".") if isinstance(table, str) else table
    return f"[{'.'.join(_toml_key(p) for p in parts)}] {_toml_key(key)} = {json.dumps(value, ensure_ascii=False)}"


class Denied(ToolFailure):
    """Policy or a hook refused this call. The reason is shown to the model.

    ``fix`` is for the person who runs reach, not the model: what would allow the
    call, written with :func:`config_line` where config can allow it.
    """

    code = "denied"

    def __init__(self, reason: str, *, fix: str | None = None) -> None:
        self.reason = reason
        self.fix = fix
        super().__init__(reason, details={"fix": fix} if fix else None)


class NeedsConfirmation(ToolFailure):
    """A person must approve this exact call first."""

    code = "needs_confirmation"

    def __init__(self, summary: str, *, confirmation_id: str | None = None) -> None:
        self.summary = summary
        self.confirmation_id = confirmation_id
        msg = f"this action needs a person's approval: {summary}."
        if confirmation_id:
            msg += f" Confirmation id {confirmation_id}; tell the user and wait for the decision."
        super().__init__(msg, details={"confirmation_id": confirmation_id} if confirmation_id else None)
