"""reach-audit: every tool call on the record.

Redacted, append-only, hash-chained audit records of every invocation and
agent-loop step, in the Reach state store; figures per tool and agent; optional
OpenTelemetry spans. The API other code uses::

    import reach_audit

    await reach_audit.flush(reach)                       # records so far are durable
    figures = await reach_audit.stats(reach, since="24h")  # AuditStats
    rates = await reach_audit.success_rates(reach, since="7d")  # {"get_weather": 0.98, ...}
    report = await reach_audit.verify(reach)             # VerifyReport(ok, checked, broken_at, ...)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core.lazy import exports

# Public names, imported on first access (PEP 562): the entry point
# (``reach_audit.plugin``) imports this package, and listing plugins must not pay
# for the writer, the store and structlog.
_EXPORTS = {
    "Audit": "audit", "get_audit": "audit", "VerifyReport": "query", "stats_sync": "query",
    "verify_sync": "query", "Redactor": "redact", "AuditSettings": "settings", "Since": "stats",
}

if TYPE_CHECKING:
    from .audit import Audit, get_audit
    from .query import VerifyReport, stats_sync, verify_sync
    from .redact import Redactor
    from .settings import AuditSettings
    from .stats import Since

# Imported now (it is light), so that the submodule is bound before the function
# ``stats`` below replaces it: ``reach_audit.stats`` is the function.
from .stats import AuditStats, Group  # noqa: E402

__getattr__ = exports(__name__, _EXPORTS)

__all__ = [
    "Audit",
    "AuditSettings",
    "AuditStats",
    "Group",
    "Redactor",
    "VerifyReport",
    "flush",
    "get_audit",
    "stats",
    "stats_sync",
    "success_rates",
    "verify",
    "verify_sync",
]


async def flush(reach: Any) -> None:
    """Make every audit record captured so far durable (no-op when audit is off)."""
    from .audit import get_audit

    audit = get_audit(reach)
    if audit is not None:
        await audit.flush()


async def stats(reach: Any, *, since: Since = "24h", until: Since = None) -> AuditStats:
    """Figures per tool and per agent over ``[since, until)`` (this process's records flushed first)."""
    import asyncio

    from .query import stats_sync

    await flush(reach)
    return await asyncio.to_thread(stats_sync, reach.store, since=since, until=until)


async def success_rates(reach: Any, *, since: Since = "7d", min_calls: int = 1) -> dict[str, float]:
    """``{tool: success rate}`` for tools with at least ``min_calls`` calls in the window."""
    figures = await stats(reach, since=since)
    return {
        name: g.success_rate
        for name, g in figures.tools.items()
        if g.calls >= min_calls and g.success_rate is not None
    }


async def verify(reach: Any) -> VerifyReport:
    """Walk the hash chain; the report names the first broken link, if any."""
    import asyncio

    from .query import verify_sync

    await flush(reach)
    return await asyncio.to_thread(verify_sync, reach.store)
