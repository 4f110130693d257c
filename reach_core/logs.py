"""reach's logger, created on first use.

structlog (and what it pulls in) costs start-up time that ``reach --version`` or
``reach plugins`` should not pay, so the CLI only *asks* for a configuration
(:func:`configure_later`) and it is applied when the first logger is made.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["configure_later", "get_logger"]

_pending: int | None = None


def configure_later(level: int) -> None:
    """Send logs at ``level`` and above to stderr, once a logger is first needed."""
    global _pending
    _pending = level


def get_logger() -> Any:
    """The ``reach`` structlog logger, bound once (the lazy proxy would re-read config per call)."""
    global _pending
    import structlog

    if _pending is not None:
        structlog.configure(
            wrapper_class=structlog.make_filtering_bound_logger(_pending),
            logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
            cache_logger_on_first_use=False,
        )
        _pending = None
    return structlog.get_logger("reach").bind()
