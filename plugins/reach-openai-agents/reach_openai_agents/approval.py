"""Carrying the Agents SDK's "a person approved this call" into reach's pipeline.

A tool built with ``needs_approval=True`` is only invoked by the SDK after the
run was interrupted and the call approved (``RunState.approve``). Its
``on_invoke_tool`` then marks exactly that call (tool name and tool-call id) in
a context variable for the duration of ``reach.invoke``, and the plugin's
``reach_pre_invoke`` hook sets ``ctx.approved`` for it. Only the bridge sets the
variable, and only for such a call: the model cannot reach it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

PLUGIN = "reach-openai-agents"

_APPROVED: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "reach_openai_agents_approved", default=None
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
    """Is this plugin's hook part of ``reach`` (so that an SDK approval counts)?"""
    return any(p.name == PLUGIN and p.status == "loaded" for p in getattr(reach, "plugin_info", ()))


def native_approval(reach: object, approval: str) -> bool:
    """Should the framework's own approval be used for calls that need a person?

    ``"auto"``: yes, unless reach has a confirmer of its own (reach-confirm), which
    then decides, so nobody is asked twice. ``"native"``: yes. ``"reach"``: no.
    Never without this plugin's hook in ``reach``: the approval would not count.
    """
    if approval not in ("auto", "native", "reach"):
        raise ValueError(f"approval must be 'auto', 'native' or 'reach', not {approval!r}")
    if approval == "reach" or not hook_loaded(reach):
        return False
    providers = getattr(reach, "providers", None)
    return approval == "native" or not (providers and providers("confirmer"))
