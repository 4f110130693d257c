"""Carrying a LangGraph ``interrupt`` approval into reach's pipeline.

With ``approval="interrupt"`` a tool that needs a person calls
``langgraph.types.interrupt`` itself; when the graph is resumed with an
approving ``Command(resume=...)``, the tool marks exactly that call (tool name
and tool-call id) in a context variable for the duration of ``reach.invoke``,
and the plugin's ``reach_pre_invoke`` hook sets ``ctx.approved`` for it. Only
the tool sets the variable, and only after the person's answer: the model
cannot reach it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

PLUGIN = "reach-langchain"

_APPROVED: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "reach_langchain_approved", default=None
)


@contextmanager
def approved_call(tool: str, call_id: str) -> Iterator[None]:
    """Within this block, the call ``(tool, call_id)`` counts as approved by a person."""
    token = _APPROVED.set((tool, call_id))
    try:
        yield
    finally:
        _APPROVED.reset(token)


def is_approved(tool: str, call_id: str) -> bool:
    return _APPROVED.get() == (tool, call_id)


def hook_loaded(reach: object) -> bool:
    """Is this plugin's hook part of ``reach`` (so that an interrupt approval counts)?"""
    return any(p.name == PLUGIN and p.status == "loaded" for p in getattr(reach, "plugin_info", ()))
