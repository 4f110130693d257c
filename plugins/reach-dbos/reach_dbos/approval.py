"""Durable approval waits (see docs/plugins/reach-dbos.md)."""

from __future__ import annotations

from typing import Any


class DurableConfirmer:
    """Wraps the installed confirmer; its waits are checkpointed steps of the run."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
