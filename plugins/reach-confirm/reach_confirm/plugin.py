"""Hook implementations of reach-confirm.

Only ``reach_core.hookimpl`` is imported with this module (``reach plugins``
imports it); the queue, its store and the settings model load when a Reach uses them.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from reach_core import ToolResult

    from .queue import Confirmations

REACH_HOOK_PRIORITY = {"reach_pre_invoke": 50}
# Both hooks act only on a call that needs a person's approval: the core leaves them out of
# the routes where nothing can ask for one (reach_core.hooks.for_route).
REACH_HOOK_WHEN = {"reach_pre_invoke": "confirmation", "reach_post_invoke": "confirmation"}

#: each Reach's queue, for as long as that Reach lives: keyed by the instance (weakly,
#: and the queue holds its Reach weakly too), so a host that makes and drops Reach
#: instances does not keep them, and a new one never inherits an old one's queue
_QUEUES: weakref.WeakKeyDictionary[Any, Confirmations] = weakref.WeakKeyDictionary()


def queue_for(reach: Any) -> Confirmations:
    """The confirmation queue of ``reach`` (one per Reach instance)."""
    q = _QUEUES.get(reach)
    if q is None:
        from .queue import Confirmations
        from .settings import ConfirmSettings

        settings = reach.plugin_settings("reach-confirm") or ConfirmSettings()
        q = _QUEUES[reach] = Confirmations(reach, settings)
    return q


@hookimpl
def reach_plugin_settings() -> Any:
    from .settings import ConfirmSettings

    return ConfirmSettings


class QueueConfirmer:
    """The ``queue`` confirmer as the agent loop sees it: it can resolve a pending result."""

    name = "queue"

    async def resolve(self, reach: Any, result: ToolResult, wait: float) -> ToolResult:
        """The decision on ``result``'s confirmation, waiting up to ``wait`` s for it.

        Approved and run: that call's result (under the model's call id). Rejected or
        expired: a ``denied`` result with the reason. Still pending: ``result`` itself.
        Also ``result`` itself when the request is for another tool than ``result.name``
        or another agent than ``result.meta["agent"]`` (when given): an id a tool's output
        or another conversation holds never brings in someone else's decision or result.
        """
        cid = result.meta.get("confirmation_id")
        if not cid:
            return result
        from reach_core import ToolError, ToolResult

        from .queue import ConfirmationError
        q = queue_for(reach)
        try:
            c = await q.wait(cid, timeout=wait) if wait > 0 else await q.get(cid)
        except ConfirmationError:
            return result
        agent = result.meta.get("agent")
        if (not result.name or c.tool != result.name) or (agent is not None and c.agent != agent):
            return result
        if c.status == "executed" and c.result:
            done = c.result
            err = done.get("error")
            return ToolResult(result.call_id, c.tool, bool(done.get("ok")), done.get("content"),
                              ToolError(err["code"], err["message"], err.get("retry_after")) if err else None,
                              0.0, result.trace_id, {"confirmation_id": cid, "approved": True})
        if c.status in ("rejected", "expired"):
            why = f" ({c.reason})" if c.reason else ""
            return ToolResult(result.call_id, c.tool, False, None,
                              ToolError("denied", f"a person {c.status} this action{why}; do not retry it."),
                              0.0, result.trace_id, {"confirmation_id": cid})
        return result


@hookimpl
def reach_register_confirmers(register: Any) -> None:
    register("queue", QueueConfirmer())


@hookimpl
def reach_pre_invoke(call: Any, tool: Any, ctx: Any) -> Any:
    """Ask for (or find) a person's approval of a call that needs one.

    A plain function, so a call that needs no confirmation (nearly all of them) pays
    no coroutine; otherwise it returns the coroutine that asks, which the core awaits.
    """
    if not ctx.needs_confirmation or ctx.approved:
        return None  # nothing to ask, or an earlier hook (a framework's own approval) already approved this call
    return _confirm(call, tool, ctx)


async def _confirm(call: Any, tool: Any, ctx: Any) -> None:
    reach = ctx.reach
    chosen = reach.config.strategies.confirmer
    if chosen not in (None, "queue"):
        return  # another confirmer was chosen in [strategies]
    from reach_core import NeedsConfirmation

    from .queue import APPROVING, fingerprint

    q = queue_for(reach)
    args = call.arguments if isinstance(call.arguments, dict) else {}
    approving = APPROVING.get()
    if approving:
        c = await q.get(approving[0])
        if (approving and c.status == "approved" and c.fingerprint == fingerprint(tool.name, args)
                and c.agent == ctx.agent):
            approving.clear()  # one approval, one call (no await between the check and this)
            ctx.approved = True
            ctx.state["confirmation_id"] = c.id
            return
    approved = await q.approved_call(tool, args, ctx)
    if approved is not None:  # a repeat of a call a person approved: the approved execution's outcome
        ctx.approved = True
        ctx.idempotency_key = f"confirm:{approved}"
        ctx.state["confirmation_id"] = approved
        return
    mode = reach.policy(ctx.agent).approval_mode(tool) or q.settings.default_mode
    earlier = await q.already_approved(tool, args, ctx, mode)
    if earlier is not None:
        ctx.approved = True
        ctx.state["confirmation_id"] = earlier
        return
    rejected = await q.rejected_recently(tool, args, ctx)
    if rejected is not None:
        from reach_core import Denied

        why = f" ({rejected.reason})" if rejected.reason else ""
        raise Denied(f"a person rejected this exact action{why}; do not ask again. Tell the user it was "
                     "rejected, or ask them what to do instead.",
                     fix=f"request {rejected.id} was rejected by {rejected.decided_by}; the same call is refused "
                         f"for [plugins.reach-confirm] ttl_seconds ({q.settings.ttl_seconds:g} s) after that")
    c = await q.request(tool, args, ctx, mode)
    raise NeedsConfirmation(c.summary, confirmation_id=c.id)


@hookimpl
def reach_post_invoke(call: Any, tool: Any, result: Any, ctx: Any) -> None:
    if not ctx.approved:
        return  # only an approved call carries a confirmation id (set by reach_pre_invoke)
    cid = ctx.state.get("confirmation_id")
    if cid and "confirmation_id" not in result.meta:
        result.meta["confirmation_id"] = cid
        result.meta["approved"] = True


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .commands import confirm_group

    cli.add_command(confirm_group)
