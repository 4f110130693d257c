"""Redaction: the core's :class:`reach_core.redact.Redactor`, shared with reach's own log events.

reach-audit adds ``redact_keys`` and ``redact_patterns`` from its settings to the
Redactor of its Reach (``reach.redactor``), so the audit trail, the audit events
and the core's ``reach.tool_call`` events all mask the same things.
"""

from __future__ import annotations

from reach_core.redact import MASK, Redactor

__all__ = ["MASK", "Redactor"]
