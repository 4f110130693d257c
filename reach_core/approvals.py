"""Approvals given by the agent framework reach runs under (the host).

LangGraph interrupts, pydantic-ai deferred tools and the OpenAI Agents SDK's
``needs_approval`` all ask a person themselves and then call the tool again.
The bridge marks exactly that call — tool name and tool-call id — for the
duration of ``reach.invoke``; the pipeline then counts it as approved, before
any confirmer plugin runs, so nobody is asked twice. Only in-process code can
set the mark: nothing a model sends reaches it.

The mark approves one call, once: the first check takes it. Calls started
inside the approved one (a ``delegate`` child run, a tool that invokes reach
again) inherit the context, and the ids of a child's calls come from a model:
a child call named and numbered like the approved one must not count as
approved by the person who saw only the outer call.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["approved_call", "host_approval", "native_approval"]

# [tool, call id, approved by, still unused]: a list, so the first check can spend it
# for every context that inherited it.
_APPROVED: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "reach_host_approved", default=None
)


@contextmanager
def approved_call(tool: str, call_id: str, *, by: str) -> Iterator[None]:
    """Within this block, the call ``(tool, call_id)`` counts as approved by a person
    (``by``), for the first check only (see the module docstring)."""
    token = _APPROVED.set([tool, call_id, by, True])
    try:
        yield
    finally:
        _APPROVED.reset(token)


def host_approval(tool: str, call_id: str) -> str | None:
    """Who approved this exact call through the host framework, or ``None``.

    Spends the approval: a second check for the same ``(tool, call_id)`` inside the
    block (a nested call spelt like the approved one) gets ``None``."""
    mark = _APPROVED.get()
    if mark is None or not mark[3] or mark[0] != tool or mark[1] != call_id:
        return None
    mark[3] = False
    return str(mark[2])


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
