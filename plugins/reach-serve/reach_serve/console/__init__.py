"""The operators' console (``/console``): approvals, runs, the audit trail and tools in a browser."""

from __future__ import annotations

from .routes import console_routes

__all__ = ["console_routes"]
