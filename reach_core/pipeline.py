"""The one invoke pipeline.

decode → ``reach_pre_validate`` → validate (compiled schema) → policy
(allow-list, tier) → ``reach_pre_invoke`` (confirmation, ...) → guard rails
(rate limit, budget, ledger) → execute (deadline, retries, fallback) →
``reach_post_invoke`` (shaping, audit) → ``ToolResult``.

Every failure becomes a ``ToolResult`` with ``ok=False``; nothing raises out of
here unless the caller asked for ``raise_errors``. Hooks that are not
implemented by any plugin cost nothing: their step is skipped.
"""

from __future__ import annotations

import asyncio
import copy
import difflib
import itertools
import logging
import os
import time
import traceback
from collections.abc import Collection
from inspect import isawaitable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .approvals import host_approval
from .calls import ToolCall, decode_arguments, to_call
from .connectors import NO_FALLBACK
from .context import CallContext
from .errors import Denied, ToolCallError, ToolFailure
from .execute import run_connector
from .hooks import PENDING, chain_attr, chain_rest, each_rest, for_route, log_failure
from .hooks import call as call_impl
from .policy import CONFIRM as _VERDICT_CONFIRM
from .policy import DENY
from .result import ToolError, ToolResult, to_jsonable

if TYPE_CHECKING:
    from .runtime import Runtime
    from .tool import Tool

__all__ = ["invoke"]

# The per-call event goes to the stdlib logger "reach" (see logs.py): silent, and not even
# built, unless the host listens at INFO.
_CALL_LOG = logging.getLogger("reach")
# The logger's own cache of "enabled at this level?" (the stdlib fills it in isEnabledFor and
# clears it, in place, whenever a level or logging.disable changes). Only its False skips
# the call to isEnabledFor (a Python function, on every call); anything else asks it.
_CALL_LOG_CACHE: dict[int, bool] = getattr(_CALL_LOG, "_cache", {})

# Trace ids: 32 random bits per process start, then a counter, written as one hex
# number (a UUID per call would cost more than the rest of a cheap call's bookkeeping);
# the map formats each in C as it is taken, with ``hex`` (the call site drops its ``0x``):
# ``"{:x}".format`` parses its format on every call, which cost 2 % of a cheap call.
_trace_ids = map(hex, itertools.count((int.from_bytes(os.urandom(4), "big") << 40) + 1))
_PLAIN = (str, int, float, bool, type(None))
_new = object.__new__
# a fallback stands in for an unavailable service, never for an answer the service gave on purpose
_FALLBACK_CODES = frozenset({"timeout", "upstream_unavailable", "rate_limited"})


# Route flags: what the pipeline needs to know about (agent, tool), looked up once per call.
RUN = 1  # the agent's policy allows the tool
CONFIRM = 2  # ... and a person must approve each call
QUIET = 4  # no check applies outside a run (no limit, budget or ledger)
CAPPED = 8  # the tool has process-wide concurrency caps to hold
UNKEYED = 16  # no check applies outside a run to a call without an idempotency key (the ledger's)


class Route:
    """Everything the pipeline decides about one (agent, tool) before any call: computed
    once by :func:`_route`, kept in ``Runtime.routes`` until ``Runtime.invalidate``.

    ``plain`` is the usual call's shortcut: the tool runs (no confirmation, no caps, no
    guard outside a run, no ``Args`` model, no argument hook), so a call outside a run
    without a deadline of its own goes from its hooks straight to the connector. It is
    ``PLAIN``, or ``PLAIN_UNKEYED`` when that holds only for a call without an idempotency
    key (a write tool, whose ledger keeps keyed calls), else 0.
    """

    __slots__ = ("tool", "flags", "usual", "plan", "pre_validate", "pre", "post", "pre_fns", "post_fns",
                 "plain", "reader")

    def __init__(self, tool: Tool, flags: int, plan: Any, hooks: Any, max_bytes: int) -> None:
        self.tool = tool
        self.flags = flags
        # the agent may run this idempotent tool without a person: the pipeline skips its
        # denial, idempotency-key and confirmation steps
        self.usual = flags & (RUN | CONFIRM) == RUN and tool.idempotent
        self.plan = plan
        self.pre_validate = hooks.impls["reach_pre_validate"]
        # only the implementations that can act on this route's calls (hooks.for_route)
        pre = hooks.impls["reach_pre_invoke"]
        confirm = bool(flags & CONFIRM or self.pre_validate)  # (an argument hook, too, may ask for a person)
        self.pre = for_route(pre, pre, tool.name, confirm)
        self.post = for_route(hooks.impls["reach_post_invoke"], pre, tool.name, confirm)
        # the hooks as plain functions when each takes every argument and is not async (the
        # usual plugin): called directly, without the rule's per-implementation checks
        self.pre_fns = _plain_functions(self.pre)
        self.post_fns = _plain_functions(self.post)
        # decoding and validation in one step for the usual arguments (schema.json_reader);
        # an argument hook must see the decoded arguments before validation, so not with one
        self.reader = None if self.pre_validate else tool.compiled.reader(max_bytes)
        simple = tool.args_model is None and not self.pre_validate
        self.plain = (PLAIN if simple and flags == RUN | QUIET else
                      PLAIN_UNKEYED if simple and flags == RUN | UNKEYED else 0)


PLAIN, PLAIN_UNKEYED = 1, 2


def _plain_functions(impls: tuple[Any, ...]) -> tuple[Any, ...] | None:
    if all(impl.full and not impl.is_async for impl in impls):
        return tuple(impl.function for impl in impls)
    return None


def _route(rt: Runtime, agent: str | None, tool: Tool) -> Route:
    """Compute and cache the route of ``tool`` for ``agent``: its flags, its guard plan
    and its hooks (cleared with the policies when tools or their state change)."""
    verdict = rt.policy(agent).verdict(tool)
    flags = 0 if verdict == DENY else RUN | (CONFIRM if verdict == _VERDICT_CONFIRM else 0)
    guards: Any = rt.guards
    plan = guards.route_plan(tool, agent)
    if guards.quiet(tool, agent):
        flags |= QUIET
    elif guards.quiet_unkeyed(tool, agent):
        flags |= UNKEYED
    if plan.caps:
        flags |= CAPPED
    route = rt.routes.setdefault(agent, {})[tool.name] = Route(tool, flags, plan, rt.hooks,
                                                                 rt.config.reach.max_argument_bytes)
    return route


def _unknown_tool(rt: Runtime, call: ToolCall, agent: str | None) -> ToolFailure:
    names = [t.name for t in rt.allowed_tools(agent)]
    name = call.name
    # a tool name has at most 64 characters: a longer one is neither matched (difflib is
    # quadratic) nor echoed in full
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5) if len(name) <= 128 else []
    msg = f"there is no tool called {name if len(name) <= 64 else name[:64] + '…'!r}"
    if close:
        msg += f"; did you mean {', '.join(close)}?"
    elif names:
        msg += "; use one of the tools offered to you."
    else:
        msg += "."
    return ToolFailure(msg, code="unknown_tool", details={"suggestions": close})


def _internal_error(tool: Tool, exc: BaseException, ctx: CallContext) -> ToolFailure:
    ctx.log.error(
        "reach.connector_exception",
        error_type=type(exc).__name__,
        error=str(exc),  # ctx.log masks with this Reach's redactor (its configured secrets, any spelling)
        traceback="".join(traceback.format_exception(exc)),
    )
    failure = ToolFailure(
        f"{tool.name}: internal error; do not resend the same arguments.",
        code="execution_failed",
        details={"exception": type(exc).__name__},
    )
    return failure


def _jsonable_result(tool: Tool, content: Any) -> Any:
    """The connector's answer as JSON data; one that refers to itself or is nested past
    Python's recursion limit is a clear failure of this call, not reach's internal error.
    The connector has already run: the message says so, as a write may have taken effect."""
    try:
        return to_jsonable(content)
    except RecursionError:
        raise ToolFailure(
            f"{tool.name} ran, but its answer refers to itself or is nested too deeply to be sent "
            "as JSON; do not resend (it may have taken effect): tell the user its answer could not be read.",
            code="execution_failed",
            details={"exception": "RecursionError"},
        ) from None


async def invoke(
    rt: Runtime,
    call: Any,
    arguments: Any = None,
    *,
    agent: str | None = None,
    run_id: str | None = None,
    idempotency_key: str | None = None,
    query: str | None = None,
    parent_run_id: str | None = None,
    raise_errors: bool = False,
    allowed: Collection[str] | None = None,
    deadline: float | None = None,
) -> ToolResult:
    """Run one tool call through the pipeline. Never raises unless ``raise_errors``.

    ``call`` is a :class:`ToolCall`, an OpenAI SDK tool call, a dict
    (``{"id", "name", "arguments"}`` or ``{"id", "function": {...}}``) or a tool
    name with ``arguments``. ``allowed`` restricts this call to those tool names
    (a run's ``tools=[...]``); ``deadline`` (event-loop time) caps the call's own
    deadline (a run's deadline). ``Reach.invoke`` calls it with its ``Runtime``.
    """
    t0 = time.perf_counter()
    if not rt.started:
        await rt.start()
    try:
        call = to_call(call, arguments)
    except TypeError as exc:
        call = ToolCall(name="", arguments=None)
        failure: ToolFailure | None = ToolFailure(str(exc), code="invalid_arguments")
    else:
        failure = None
    routes = rt.routes.get(agent)
    route = routes.get(call.name) if routes is not None else None
    if route is not None:
        tool: Tool | None = route.tool
    elif (tool := rt.tools.get(call.name)) is not None:
        route = _route(rt, agent, tool)
    # CallContext(rt, tool, agent or "default", run_id, call.id, <trace id>, None, query,
    # parent_run_id, t0), its __init__ written out: calling a class whose __init__ is Python
    # code costs as much again as the stores (test_fast_construction.py holds them equal)
    ctx = _new(CallContext)
    ctx.rt = rt
    ctx.tool = tool
    ctx.agent = agent or "default"
    ctx.run_id = run_id
    ctx.call_id = call.id
    ctx.trace_id = next(_trace_ids)[2:]
    ctx.idempotency_key = None
    ctx.query = query
    ctx.parent_run_id = parent_run_id
    ctx.started = t0
    ctx.needs_confirmation = False  # set, not left to the class: an instance read is the fast one
    result: ToolResult | None = None
    checked: tuple[Any, dict[str, Any]] | None = None  # (Args instance, the arguments it was made from)
    try:
        if failure is not None:
            raise failure
        if route is None or tool is None:
            raise _unknown_tool(rt, call, agent)
        if allowed is not None and (tool.name not in allowed or type(allowed) is str and tool.name != allowed):
            allowed = [allowed] if isinstance(allowed, str) else allowed  # one name, not its characters
            raise ToolFailure(
                f"tool `{tool.name}` is not available in this conversation; use one of: "
                f"{', '.join(sorted(allowed)) or '(none)'}.",
                code="unknown_tool",
            )
        reader = route.reader
        if reader is not None and (args := reader(call.arguments)) is not None:  # the usual call, in one step
            call.arguments = ctx.arguments = args
        else:
            cfg = rt.config.reach
            args = decode_arguments(call.arguments, cfg.max_argument_bytes, cfg.max_argument_depth)
            impls = route.pre_validate
            if impls:  # rule "chain" on call.arguments; an exception propagates (a ToolFailure refuses)
                call.arguments = args
                out = chain_attr(impls, (call, tool, ctx), call, "arguments")
                args = await out if type(out) is PENDING else out
            call.arguments = ctx.arguments = args = tool.compiled.prepare(args)
        if not route.usual:  # denied, a write, or a person must approve (see Route)
            flags = route.flags
            if not flags & RUN:
                policy = rt.policy(agent)
                raise Denied(
                    (f"{tool.blocked}; do not call it again." if tool.blocked else
                     f"the tool {tool.name!r} is not available to this agent; do not call it again."),
                    fix=policy.denial_fix(tool, confirmer=rt.has_confirmer()),
                )
            if not tool.idempotent:
                key = call.idempotency_key
                if key is not None or (key := idempotency_key) is not None:
                    from .guard.ledger import checked_key  # (guard is imported with the first Reach)

                    ctx.idempotency_key = checked_key(key)
                elif run_id:  # derived_key in reach_core.guard.ledger, written out: one is made per write in a run
                    agent_name, run = ctx.agent, str(run_id)
                    ctx.idempotency_key = f"{len(agent_name)}:{agent_name}:{len(run)}:{run}:{call.id}"
            if flags & CONFIRM:
                if tool.args_model is not None:  # a person is never asked about a call its Args would refuse
                    checked = (_model_args(tool, args), copy.deepcopy(args))
                ctx.needs_confirmation = True
                by = host_approval(tool.name, call.id)
                if by is not None:  # a person approved it in the agent framework reach runs under
                    ctx.approved, ctx.confirm_reason = True, f"approved through {by}"
        impls = route.pre
        if impls:  # rule "each" (reach_core.hooks), its sync part inlined; the first exception refuses
            fns = route.pre_fns
            if fns is not None:
                for fn in fns:
                    res = fn(call, tool, ctx)
                    if res is not None and isawaitable(res):  # a plain function may return an awaitable
                        await each_rest(impls, fns.index(fn), res, (call, tool, ctx))
                        break
            else:
                hook_args = (call, tool, ctx)
                for impl in impls:
                    res = impl.function(*hook_args) if impl.full else call_impl(impl, hook_args)
                    if res is not None and (impl.is_async or isawaitable(res)):
                        await each_rest(impls, impls.index(impl), res, hook_args)
                        break
        if ctx.needs_confirmation and not ctx.approved:
            fix = _confirmation_fix(rt, agent, tool, ctx)
            ctx.log.warning("reach.confirmation_unavailable", tool=tool.name, fix=fix)
            raise Denied(
                f"{tool.name} needs a person's approval, which is not available here; "
                "tell the user what you wanted to do instead of retrying.",
                fix=fix,
            )
        plain = route.plain
        if plain and run_id is None and deadline is None and (plain == PLAIN or ctx.idempotency_key is None):
            params, caps, guards = args, (), None  # the usual call (see Route): nothing to check or hold
        else:
            result, params, caps, guards = await _guard_before(rt, route, args, ctx, deadline, checked)
        if result is None:
            try:
                out = run_connector(tool, params, ctx, caps)
                content, meta = out if isinstance(out, tuple) else await out
            except ToolFailure as exc:
                if not (tool.has_fallback and exc.code in _FALLBACK_CODES):
                    raise
                content, meta = _fallback(tool, exc), {"fallback": True, "error_code": exc.code,
                                                        "attempts": exc.details.get("attempts", 1)}
            except Exception as exc:  # noqa: BLE001 - connector bugs become model-safe errors
                internal = _internal_error(tool, exc, ctx)
                if not tool.has_fallback:
                    raise internal from None
                content, meta = _fallback(tool, internal), {"fallback": True, "error_code": "execution_failed",
                                                             "attempts": ctx.attempt}
            if type(content) not in _PLAIN:
                content = _jsonable_result(tool, content)
            # ToolResult(call.id, call.name, True, content, None, 0.0, ctx.trace_id, meta), written
            # out like the context above
            result = _new(ToolResult)
            result.call_id = call.id
            result.name = call.name
            result.ok = True
            result.content = content
            result.error = None
            result.elapsed_ms = 0.0
            result.trace_id = ctx.trace_id
            result.meta = meta
            result._json = None
            if guards is not None and ctx._guard_pending is not None:  # see Guards.after
                settle = guards.after(tool, args, ctx, result)
                if settle is not None:
                    await settle
    except ToolFailure as exc:
        result = await _failed(rt, call, tool, ctx, exc)
        if rt.guards is not None and tool is not None and ctx.arguments is not None:
            try:
                settle = rt.guards.after(tool, ctx.arguments, ctx, result)
                if settle is not None:
                    await settle
            except Exception as gexc:  # noqa: BLE001
                ctx.log.error("reach.guard_error", error=repr(gexc))
    except Exception as exc:  # noqa: BLE001 - a hook bug must not crash the caller
        ctx.log.error("reach.pipeline_error", error=repr(exc), traceback=traceback.format_exc())
        result = await _failed(rt, call, tool, ctx, ToolFailure(
            f"{call.name}: internal error in reach; do not resend the same arguments.", code="execution_failed"))
    result.elapsed_ms = (time.perf_counter() - t0) * 1000.0  # observers (audit) see the call's time
    known = rt.redactor.known
    if known.values:  # configured secrets never reach the model (known_secrets); masked before the post-invoke
        # hooks see the result: one that cuts it (reach-shape: head…[cut]…tail, pages, slices) would split a
        # secret into pieces mid-text, where the mask below finds neither half
        result = known.mask_result(result)
    if route is not None:
        impls, fns = route.post, route.post_fns
    else:  # no such tool: the rule's general loop
        impls, fns = rt.hooks.impls["reach_post_invoke"], None
    if fns is not None:  # rule "chain" (reach_core.hooks), its sync part inlined; one that raises is logged, skipped
        for fn in fns:
            try:
                new = fn(call, tool, result, ctx)
            except Exception as exc:  # noqa: BLE001
                log_failure(ctx, "reach_post_invoke", impls[fns.index(fn)], exc)
                continue
            if new is not None:
                if isawaitable(new):  # a plain function may return an awaitable
                    result = await chain_rest(impls, fns.index(fn), new, (call, tool, result, ctx), 2, ctx,
                                              "reach_post_invoke")
                    break
                result = new
        if fns:
            result.elapsed_ms = (time.perf_counter() - t0) * 1000.0  # with the post-invoke hooks' time
    elif impls:  # the rule's general loop (an async or partial implementation)
        for i, impl in enumerate(impls):
            try:
                new = (impl.function(call, tool, result, ctx) if impl.full
                       else call_impl(impl, (call, tool, result, ctx)))
            except Exception as exc:  # noqa: BLE001
                log_failure(ctx, "reach_post_invoke", impl, exc)
                continue
            if new is not None:
                if impl.is_async or isawaitable(new):
                    result = await chain_rest(impls, i, new, (call, tool, result, ctx), 2, ctx, "reach_post_invoke")
                    break
                result = new
        result.elapsed_ms = (time.perf_counter() - t0) * 1000.0  # with the post-invoke hooks' time
    if known.values and (fns or impls):  # and what the hooks made of it (a plugin may add text of its own)
        result = known.mask_result(result)
    # asked per call: the host may configure logging any time
    if rt.log_calls and _CALL_LOG_CACHE.get(20) is not False and _CALL_LOG.isEnabledFor(20):
        rt.log.info(
            "reach.tool_call", trace_id=ctx.trace_id, run_id=run_id, call_id=call.id, agent=ctx.agent,
            tool=call.name, status="ok" if result.ok else result.error.code if result.error else "error",
            attempts=result.meta.get("attempts", 0), elapsed_ms=result.elapsed_ms,
            result_size=len(result.to_json()),
        )
    if raise_errors and not result.ok:
        raise ToolCallError(result)
    return result


async def _guard_before(rt: Runtime, route: Route, args: dict[str, Any], ctx: CallContext,
                        deadline: float | None, checked: tuple[Any, dict[str, Any]] | None = None,
                        ) -> tuple[ToolResult | None, Any, Any, Any]:
    """What a call that is not plain (see :class:`Route`) needs before its connector runs:
    the guard rails' checks (limits, budgets, ledger), its ``Args`` model, the run's
    deadline. Returns ``(early result or None, params, caps, guards to settle after)``.

    ``checked``: the ``Args`` instance made before a person was asked, with a copy of the
    arguments it was made from. It is what runs, unless a hook changed the arguments in
    place since (then they are checked again: what runs is always what the arguments are
    now, and valid), so a validator with a cost or a side effect runs once per call."""
    tool = route.tool
    flags = route.flags
    guards: Any = rt.guards
    plan = route.plan
    caps: Any = plan.caps if flags & CAPPED else ()
    result: ToolResult | None = None
    if not flags & QUIET:
        early = guards.before(tool, args, ctx, plan)
        result = early if early is None or isinstance(early, ToolResult) else await early
    elif ctx.run_id is None:
        guards = None
    else:  # only the run-scoped guards apply, and none of them waits
        result = guards.before_in_run(tool, args, ctx, plan)
    if result is not None:
        return result, None, caps, guards
    if tool.args_model is None:
        params = args
    elif checked is not None and checked[1] == args:
        params = checked[0]
    else:
        params = _model_args(tool, args)
    if deadline is not None:  # a run's deadline shortens the tool's own
        ctx.deadline = min(deadline, asyncio.get_running_loop().time() + tool.timeout)
    return None, params, caps, guards


def _model_args(tool: Tool, args: dict[str, Any]) -> Any:
    """A connector's ``Args`` instance; what its validators refuse (beyond the JSON Schema
    already checked) is the model's ``invalid_arguments``, not a crash of reach."""
    try:
        return tool.args_model.model_validate(args)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:3]:
            field = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
            problems.append(f"`{field}`: {err.get('msg', 'is not valid')}")
        raise ToolFailure("; ".join(problems) + ". Send the call again with corrected arguments.",
                          code="invalid_arguments") from None


def _confirmation_fix(rt: Runtime, agent: str | None, tool: Tool, ctx: CallContext) -> str:
    """The fix of a call denied for want of a person: a confirmer, or the config lines that
    run it unattended for every policy that asks (the agent's own, and in a delegated run
    each ancestor's that asks, as ``reach_core.builtin.delegation`` records in ``ctx.state``)."""
    policies = [rt.policy(agent), *((ctx._state or {}).get("approval_by") or ())]
    lines = list(dict.fromkeys(line for p in policies for line in p.confirmation_lines(tool)))
    fix = "install a confirmer plugin (pip install reach-confirm) so a person approves each call"
    return f"{fix}, or set {' and '.join(lines)}" if lines else fix


def _fallback(tool: Tool, failure: ToolFailure) -> Any:
    fb = tool.connector.fallback
    if fb is NO_FALLBACK:  # pragma: no cover - guarded by has_fallback
        raise failure
    value = fb(failure) if callable(fb) else fb
    return to_jsonable(value)


async def _failed(rt: Runtime, call: ToolCall, tool: Tool | None, ctx: CallContext, exc: ToolFailure) -> ToolResult:
    error = ToolError(exc.code, exc.message, exc.retry_after)
    hooks = rt.hooks
    if hooks.impls["reach_format_error"]:
        try:
            text = await hooks.first("reach_format_error", only=rt.config.strategies.error_formatter,
                                     call=call, error=error, ctx=ctx)
        except Exception as hexc:  # noqa: BLE001
            ctx.log.error("reach.format_error_failed", error=repr(hexc))
            text = None
        if isinstance(text, str) and text:
            error.message = text
    meta: dict[str, Any] = {"attempts": exc.details.get("attempts", ctx.attempt)}
    for key in ("confirmation_id", "fix", "suggestions", "exception", "delivered"):
        if exc.details.get(key) is not None:
            meta[key] = exc.details[key]
    if isinstance(exc, Denied) and exc.fix:
        meta["fix"] = exc.fix
    return ToolResult(call.id, call.name, False, None, error, 0.0, ctx.trace_id, meta)
