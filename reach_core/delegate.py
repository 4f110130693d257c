"""Delegation moved to ``reach_core.builtin.delegation`` (the run scope to
``reach_core.scope``); these names stay importable from here."""

from __future__ import annotations

from .builtin.delegation import (
    DELEGATE,
    MAX_DEPTH_CAP,
    DelegateTool,
    DelegatingPolicy,
    Delegation,
    strictest_mode,
)
from .runtime import CORE
from .scope import RunScope, current_scope, run_scope

__all__ = ["CORE", "DELEGATE", "MAX_DEPTH_CAP", "DelegateTool", "DelegatingPolicy", "Delegation", "RunScope",
           "current_scope", "run_scope", "strictest_mode"]
