"""The run scope: what the calls of one agent-loop step know about their run.

The loop sets it (a context variable, so parallel runs never see each other's
scope) around each step's ``invoke_many``; delegation (``reach_core.builtin.delegation``)
reads it to keep a child run inside its parent's limits.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .policy import Policy
    from .runtime import Runtime

__all__ = ["RunScope", "current_scope", "run_scope"]


@dataclass(frozen=True, slots=True)
class RunScope:
    """What the calls of one agent-loop step know about the run they belong to."""

    run_id: str
    agent: str | None
    depth: int
    allowed: frozenset[str] | None
    ends_at: float | None
    adapter: Any
    max_steps: int
    ancestors: tuple[str | None, ...] = ()
    #: the compiled policies of ``ancestors``, in the same order
    ancestor_policies: tuple[Policy, ...] = ()


_SCOPE: contextvars.ContextVar[RunScope | None] = contextvars.ContextVar("reach_run_scope", default=None)


def current_scope() -> RunScope | None:
    return _SCOPE.get()


@contextlib.contextmanager
def run_scope(
    rt: Runtime | Any,
    *,
    run_id: str,
    agent: str | None,
    parent_run_id: str | None,
    allowed: list[str] | None,
    ends_at: float | None,
    adapter: Any,
    max_steps: int,
) -> Iterator[None]:
    """Make this run's scope current while its tools run. ``rt`` is the ``Runtime`` (a
    ``Reach`` is accepted too); a run nested in the current one (``parent_run_id``) is
    one level deeper, its tools never wider than its parent's."""
    rt = getattr(rt, "runtime", rt)
    parent = _SCOPE.get()
    names = frozenset(allowed) if allowed is not None else None
    if parent is not None and parent_run_id is not None and parent.run_id == parent_run_id:
        if parent.allowed is not None:
            names = parent.allowed if names is None else names & parent.allowed
        scope = RunScope(run_id, agent, parent.depth + 1, names, ends_at, adapter, max_steps,
                         (*parent.ancestors, parent.agent),
                         (*parent.ancestor_policies, rt.policy(parent.agent)))
    else:
        scope = RunScope(run_id, agent, 0, names, ends_at, adapter, max_steps)
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)
