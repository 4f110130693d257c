"""Approvals given by the agent framework reach runs under (the host).

LangGraph interrupts, pydantic-ai deferred tools and the OpenAI Agents SDK's
``needs_approval`` all ask a person themselves and then call the tool again.
The bridge marks exactly that call — tool name and tool-call id — for the
duration of ``reach.invoke``; the pipeline then counts it as approved, before
any confirmer plugin runs, so nobody is asked twice. Only in-process code can
set the mark: nothing a model sends reaches it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["approved_call", "host_approval", "native_approval"]

_APPROVED: contextvars.ContextVar[tuple[str, str, str] | None] = contextvars.ContextVar(
    "reach_host_approved", default=None
)


@contextmanager
def approved_call(tool: str, call_id: str, *, by: str) -> Iterator[None]:
    """Within this block, the call ``(tool, call_id)`` counts as approved by a person (``by``)."""
    token = _APPROVED.set((tool, call_id, by))
    try:
        yield
    finally:
        _APPROVED.reset(token)


def host_approval(tool: str, call_id: str) -> str | None:
    """Who approved this exact call through the host framework, or ``None``."""
    mark = _APPROVED.get()
    return mark[2] if mark is not None and mark[:2] == (tool, call_id) else None


def native_approval(reach: Any, approval: str) -> bool:
    """Should the host framework's own approval be used for calls that need a person?

    ``"auto"``: yes, unless reach has a confirmer of its own (reach-confirm), which
    then decides, so nobody is asked twice. ``"native"``: yes. ``"reach"``: no.
    """
    if approval not in ("auto", "native", "reach"):
        raise ValueError(f"approval must be 'auto', 'native' or 'reach', not {approval!r}")
    if approval == "reach":
        return False
    return approval == "native" or not reach.providers("confirmer")
