"""Guard rails that hold with no plugin installed: rate limits, budgets, run
limits, the identical-call and failing-call guards, the per-run read cache and
the operation ledger.

The pipeline calls one seam, :class:`Guards`:

* ``guards.before(tool, args, ctx, plan)`` after validation and policy, before
  ``reach_pre_invoke``/execute. It may raise a ``ToolFailure`` (``rate_limited``,
  ``budget_exceeded``, ``denied``, ``outcome_unknown``) or return a ``ToolResult``
  to hand back without running (a ledger receipt, the earlier result of a
  repeated read, a cached read).
* ``guards.after(tool, args, ctx, result)`` with every failed result of a call
  whose ``before`` returned ``None``, and with a good one when ``before`` left
  something to settle (``ctx._guard_pending``): settles budgets (a call that never
  ran gets its reservation back), completes or releases the ledger row, records
  failures and results for the run.
* ``await guards.startup()`` once: ledger rows left ``running`` by a dead
  process become ``unknown``; connectors with ``reconcile(key)`` may settle them.

Both are plain functions that return a coroutine to await only when something
must wait (a shared store, a budget, the ledger): in-memory checks cost no
coroutine. Every check is decided per tool and per agent once (a *plan*), so a
tool with no limit configured pays a dict lookup and nothing else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orjson import OPT_SORT_KEYS
from orjson import dumps as _dumps

from ..errors import Denied, ToolFailure, config_line
from ..result import ToolError, ToolResult, to_jsonable
from .budgets import DailyBudgets, Exhausted
from .concurrency import Slots, WeightedLimit
from .config import AgentGuard, ConnectorGuard, GuardDefaults, LimitsConfig, section
from .ledger import Ledger, derived_key, legacy_key
from .ratelimit import RateLimiter, Rule
from .runs import Runs, RunState, call_key, canonical

if TYPE_CHECKING:
    from ..context import CallContext
    from ..tool import Tool

__all__ = ["Guards", "GuardDefaults", "LimitsConfig", "ConnectorGuard", "AgentGuard"]

#: failures that say nothing about the arguments (time-based or a person's decision)
#: failures of a started non-idempotent call that mean the action did not happen
_TRANSIENT_NOT_DONE = frozenset({"upstream_unavailable", "rate_limited"})
_NOT_ARGUMENT_FAILURES = frozenset({"rate_limited", "budget_exceeded", "needs_confirmation", "outcome_unknown"})


@dataclass(slots=True)
class _ToolPlan:
    rate_rules: list[Rule]
    daily_budget: int | None
    max_calls_per_run: int | None
    identical_limit: int
    read_cache: bool
    write: bool
    ledgered: bool
    caps: tuple[WeightedLimit, ...]  # process-wide concurrency caps, one unit each per attempt
    unkeyed_simple: bool = False  # nothing to check outside a run for a call without an idempotency key
    simple: bool = False  # nothing to check outside a run
    waits: bool = False  # a check that may have to await (budget, shared rate-limit store)
    keeps_epoch: bool = False  # a write, or a read with the read cache: settling needs the run's epoch
    # A read's good result is kept for the identical-call guard from this count on:
    # only a call made identical_limit times is ever replayed, so distinct calls (most)
    # keep no result alive in the run (a run may live long and results can be large).
    keep_from: int = 0
    settle_from: int = 0  # a good result must be settled from this count on (0: always, for a write)
    # Below this many calls in a run, no run limit can refuse a call of this tool (the
    # lower of its own per-run cap and [reach]'s; 0 with the read cache, which always
    # looks). A run's total bounds each tool's count, so one comparison rules out both.
    run_limit: int = sys.maxsize


@dataclass(slots=True)
class _AgentPlan:
    rate_rules: list[Rule]
    daily_budget: int | None
    max_calls_per_run: int | None
    #: the ``[agents.NAME]`` table the limits come from: ``default`` for an agent without one,
    #: whose calls then count in ``default``'s rate limits and budgets (a fresh agent name
    #: must never be a fresh allowance)
    table: str = "default"
    simple: bool = False
    waits: bool = False  # a check that may have to await (budget, shared rate-limit store)
    run_cap: int = sys.maxsize  # the lower of [reach] and this agent's max_calls_per_run (an int: cheaper to compare)


@dataclass(slots=True)
class _Pending:
    """What ``before`` took and ``after`` must settle."""

    budget_keys: list[tuple[str, str, str]] | None = None
    ledger_key: str | None = None
    run: RunState | None = None
    key: int | None = None  # the exact-call key in its run (see .runs)
    seen: int = 0  # how often the exact call was made in its run, this one included
    counted: bool = False


def _validated(model: type[Any], data: dict[str, Any], where: str) -> Any:
    from pydantic import ValidationError

    from ..errors import ConfigError

    try:
        return model(**data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"invalid config: {where} {loc}: {first['msg']}") from None


def _uncount(run: RunState, key: int, plan: _ToolPlan, name: str) -> None:
    """Take back a call counted in its run that never ran."""
    run.calls -= 1
    run.counts[key] -= 1
    if plan.max_calls_per_run is not None:
        run.counts[name] -= 1


def _run_limit(limit: int, who: str, table: str | tuple[str, ...]) -> ToolFailure:
    return ToolFailure(
        f"the limit of {limit} tool call{'' if limit == 1 else 's'} for {who} is reached. "
        "Answer with what you have, or tell the user the task needs more steps.",
        code="budget_exceeded",
        details={"fix": f"set {config_line(table, 'max_calls_per_run', limit * 2)}"},
    )


def _raise_if_limited(denied: tuple[float, str] | None) -> None:
    if denied is not None:
        retry_after, who = denied
        retry_after = round(max(retry_after, 0.001), 3)
        raise ToolFailure(
            f"the rate limit of {who} is reached; wait {retry_after:g} s before calling it again.",
            code="rate_limited",
            retry_after=retry_after,
        )


def _args_hash(args: dict[str, Any]) -> str:
    """The ledger's fingerprint of a call's arguments: canonical JSON (keys sorted), so
    the same call sent again with its keys in another order is the same call."""
    return hashlib.sha256(canonical("", to_jsonable(args))).hexdigest()


class Guards:
    """The guard rails of one ``Reach``; built from its config, store opened lazily."""

    def __init__(self, reach: Any) -> None:
        self.reach = reach
        cfg = getattr(reach, "config", None)
        self._cfg = cfg
        self.defaults = _validated(GuardDefaults, section(cfg, "reach"), "[reach]")
        self.limits = _validated(LimitsConfig, section(cfg, "limits"), "[limits]")
        # validate every table now: a typo must fail at start-up, not on the 1000th call
        for name in section(cfg, "connectors"):
            _validated(ConnectorGuard, section(cfg, "connectors", name), f"[connectors.{name}]")
        for name in section(cfg, "agents"):
            _validated(AgentGuard, section(cfg, "agents", name), f"[agents.{name}]")
        self.limiter = RateLimiter(self.limits.storage, self.limits.strategy)
        self.budgets = DailyBudgets(lambda: reach.store, self.defaults.budget_timezone)
        self.ledger = Ledger(lambda: reach.store)
        self.runs = Runs()
        self.slots = Slots()
        self._tool_plans: dict[str, _ToolPlan] = {}
        self._agent_plans: dict[str, _AgentPlan] = {}
        self._route_plans: dict[tuple[str | None, str], _ToolPlan] = {}
        self._pool: Any = None

    # ------------------------------------------------------------------ plans
    def forget_plans(self) -> None:
        """Drop the plans (``Runtime.invalidate``): a tool whose tier or idempotency changed
        (``reach.refresh()``, reach-mcp raising a tier) must not keep being treated as a read,
        answered from the read cache or replayed instead of refused, or run without the ledger."""
        self._tool_plans.clear()
        self._agent_plans.clear()
        self._route_plans.clear()

    def tool_plan(self, tool: Tool) -> _ToolPlan:
        plan = self._tool_plans.get(tool.name)
        if plan is None:
            plan = self._tool_plans[tool.name] = self._build_tool_plan(tool)
        return plan

    def _build_tool_plan(self, tool: Tool) -> _ToolPlan:
        conn = tool.connector
        data = {k: getattr(conn, k) for k in ConnectorGuard.model_fields if getattr(conn, k, None) is not None}
        data.update({k: v for k, v in section(self._cfg, "connectors", tool.name).items() if v is not None})
        g = ConnectorGuard(**data)
        rules: list[Rule] = []
        if g.rate_limit:
            rules.append((self.limiter.parse(g.rate_limit), ("reach", "tool", tool.name), f"tool `{tool.name}`"))
        plugin = self.limits.plugins.get(getattr(tool, "plugin", "") or "")
        if plugin is not None and plugin.rate_limit:
            rules.append((self.limiter.parse(plugin.rate_limit), ("reach", "plugin", tool.plugin),
                          f"plugin `{tool.plugin}`"))
        caps: list[WeightedLimit] = []
        if tool.max_concurrency:
            caps.append(self.slots.limit(f"tool:{tool.name}", int(tool.max_concurrency)))
        if plugin is not None and plugin.max_concurrency:
            caps.append(self.slots.limit(f"plugin:{tool.plugin}", plugin.max_concurrency))
        write = tool.risk != "read"
        plan = _ToolPlan(
            rate_rules=rules,
            daily_budget=g.daily_budget,
            max_calls_per_run=g.max_calls_per_run or getattr(tool, "max_calls_per_run", None),
            identical_limit=g.identical_call_limit or self.defaults.identical_call_limit,
            read_cache=bool(g.read_cache if g.read_cache is not None else self.defaults.read_cache) and not write,
            write=write,
            ledgered=not tool.idempotent,
            caps=tuple(caps),
        )
        plan.unkeyed_simple = not rules and plan.daily_budget is None  # the ledger keeps only keyed calls
        plan.simple = plan.unkeyed_simple and not plan.ledgered
        plan.keeps_epoch = plan.write or plan.read_cache
        plan.keep_from = 0 if plan.read_cache else plan.identical_limit - 1
        plan.settle_from = 0 if plan.keeps_epoch else plan.keep_from
        run_caps = [c for c in (plan.max_calls_per_run, self.defaults.max_calls_per_run) if c is not None]
        plan.run_limit = 0 if plan.read_cache else min(run_caps, default=sys.maxsize)
        plan.waits = plan.daily_budget is not None or bool(rules and not self.limiter.is_memory)
        return plan

    def agent_table(self, agent: str | None) -> str:
        """The ``[agents.NAME]`` table whose limits hold for ``agent``: its own, else ``default``'s
        (as for its policy: an agent not named in config *is* the default agent)."""
        return agent if agent and agent in section(self._cfg, "agents") else "default"

    def agent_plan(self, agent: str | None) -> _AgentPlan:
        name = agent or "default"
        plan = self._agent_plans.get(name)
        if plan is None:
            table = self.agent_table(name)
            g = AgentGuard(**{k: v for k, v in section(self._cfg, "agents", table).items()
                              if k in AgentGuard.model_fields})
            rules: list[Rule] = []
            if g.rate_limit:
                rules.append((self.limiter.parse(g.rate_limit), ("reach", "agent", table), f"agent `{table}`"))
            plan = self._agent_plans[name] = _AgentPlan(rules, g.daily_budget, g.max_calls_per_run, table)
            plan.simple = not rules and g.daily_budget is None
            plan.waits = g.daily_budget is not None or bool(rules and not self.limiter.is_memory)
            caps = [c for c in (self.defaults.max_calls_per_run, g.max_calls_per_run) if c is not None]
            plan.run_cap = min(caps) if caps else sys.maxsize
        return plan

    def route_plan(self, tool: Tool, agent: str | None) -> _ToolPlan:
        """The plan of ``tool`` for calls by ``agent``: its tool plan with ``run_limit``
        lowered to the agent's own per-run cap. The pipeline keeps it with its route."""
        plan = self._route_plans.get((agent, tool.name))
        if plan is None:
            plan = self.tool_plan(tool)
            run_cap = self.agent_plan(agent).run_cap
            if run_cap < plan.run_limit:
                plan = dataclasses.replace(plan, run_limit=run_cap)
            self._route_plans[(agent, tool.name)] = plan
        return plan

    def thread_pool(self) -> Any:
        """The bounded pool sync connectors run in (``[reach] thread_pool`` workers)."""
        if self._pool is None:
            from .threads import DaemonPool

            self._pool = DaemonPool(self.defaults.thread_pool)
        return self._pool

    # ------------------------------------------------------------------ seam
    def quiet(self, tool: Tool, agent: str | None) -> bool:
        """True when no check applies to calls of ``tool`` by ``agent`` outside a run (no
        limit, no budget, no ledger): the pipeline then skips ``before``/``after``
        without creating coroutines, holding only the tool's concurrency caps, if any.
        The pipeline caches the answer per (agent, tool)."""
        return self.tool_plan(tool).simple and self.agent_plan(agent).simple

    def quiet_unkeyed(self, tool: Tool, agent: str | None) -> bool:
        """True when the only check on calls of ``tool`` by ``agent`` outside a run is the
        ledger of a non-idempotent tool, which applies only to a call with an idempotency
        key: such a call without one is as quiet as a :meth:`quiet` tool's."""
        return self.tool_plan(tool).unkeyed_simple and self.agent_plan(agent).simple

    def before(
        self, tool: Tool, args: dict[str, Any], ctx: CallContext, plan: _ToolPlan
    ) -> ToolResult | None | Coroutine[Any, Any, ToolResult | None]:
        """Check and take what the call needs (see the module doc); ``plan`` is
        :meth:`route_plan` for the call's tool and agent (the pipeline keeps it).

        A plain function: what needs no wait (run limits, the identical- and
        failing-call guards, in-memory rate limits, counting the call in its run) is
        settled right here; a coroutine is returned, for the caller to await, only
        when something has to wait (a shared rate-limit store, a daily budget, the
        ledger). A call in a run is counted there first, like a budget reservation,
        and taken back if a later check refuses it.
        """
        aplan = self._agent_plans.get(ctx.agent) or self.agent_plan(ctx.agent)
        if ctx.run_id is not None:  # 1. run-scoped guards
            earlier = self.before_in_run(tool, args, ctx, plan)
            if earlier is not None:
                return earlier
        elif plan.simple and aplan.simple:
            return None
        if plan.waits or aplan.waits or (plan.ledgered and ctx.idempotency_key):
            return self._before_wait(tool, args, ctx, plan, aplan)
        if plan.rate_rules or aplan.rate_rules:  # 2. in-memory rate limits: all or nothing
            denied = self.limiter.hit_sync(plan.rate_rules + aplan.rate_rules)
            if denied is not None:
                counted = ctx._guard_counted
                if counted is not None:  # not to run: no longer counted in its run
                    ctx._guard_counted = ctx._guard_pending = None
                    _uncount(counted[0], counted[1], plan, tool.name)
                _raise_if_limited(denied)
        return None

    def before_in_run(self, tool: Tool, args: dict[str, Any], ctx: CallContext, plan: _ToolPlan) -> ToolResult | None:
        """The run-scoped guards, then the call counted in its run (``ctx.run_id`` is set;
        ``plan`` is :meth:`route_plan` for the call's tool and agent).

        The pipeline calls this instead of :meth:`before` for a *quiet* tool (no
        limit, budget or ledger, see :meth:`quiet`), whose call in a run needs
        nothing else. The precise checks run only when one of them could trigger:
        for most calls none can.
        """
        name = tool.name
        runs = self.runs
        run_id = ctx.run_id
        agent = ctx.agent  # a run's state is its agent's own (see .runs)
        run = (runs._last if run_id == runs._last_id and agent == runs._last_agent
               else runs.get(run_id, agent))  # type: ignore[arg-type]
        try:
            key = hash(_dumps((name, args), option=OPT_SORT_KEYS))  # call_key(), inlined
        except TypeError:
            key = call_key(name, args)
        counts = run.counts
        seen = counts.get(key, 0)
        if seen >= plan.identical_limit or run.calls >= plan.run_limit or run.failures:
            earlier = self._check_run(tool, plan, run, key, ctx)
            if earlier is not None:
                return earlier
        run.calls += 1
        counts[key] = seen = seen + 1
        if plan.max_calls_per_run is not None:
            counts[name] = counts.get(name, 0) + 1
        # after() settles a failure; a good result only when it is kept or ends failures
        # in a row, or the call is a write (a new epoch): else the pipeline skips after()
        ctx._guard_counted = counted = (run, key, seen)
        if seen >= plan.settle_from or run.failures:
            ctx._guard_pending = counted
        return None

    def _check_run(self, tool: Tool, plan: _ToolPlan, run: RunState, key: int,
                   ctx: CallContext) -> ToolResult | None:
        """Run limits, the failing- and identical-call guards: raise, replay an earlier
        result (returned), or let the call go on (``None``)."""
        aplan = self._agent_plans.get(ctx.agent) or self.agent_plan(ctx.agent)
        failed = run.failures.get(key) if run.failures else None
        if failed is not None and failed[0] >= self.defaults.failing_call_limit:
            raise Denied(
                f"this exact call of `{tool.name}` already failed {failed[0]} times in this run "
                f"(last error: {failed[1]}). Change the arguments or stop; do not send it again.",
                fix=f"set {config_line('reach', 'failing_call_limit', failed[0] + 1)}",
            )
        seen = run.counts.get(key, 0)
        kept = run.kept.get(key) if run.kept else None
        if plan.read_cache and kept is not None and kept[1] == run.epoch:
            return self._replay(kept[0], ctx, {"cached": True})
        if seen >= plan.identical_limit:
            earlier = kept[0] if kept is not None else None
            if not plan.write and earlier is not None:
                return self._replay(
                    earlier, ctx, {"repeated": True},
                    note=(f"`{tool.name}` was already called {seen} times with these exact arguments in "
                          "this run; this is the earlier result. Do not call it again with the same arguments."),
                )
            raise Denied(
                f"`{tool.name}` was already called {seen} times with these exact arguments in this run; "
                "refusing to repeat it. Use the earlier result, change the arguments, or stop.",
                fix=f"set {config_line(('connectors', tool.name), 'identical_call_limit', seen * 2)}",
            )
        limit = self.defaults.max_calls_per_run
        if limit is not None and run.calls >= limit:
            raise _run_limit(limit, "this run", "reach")
        limit = aplan.max_calls_per_run
        if limit is not None and run.calls >= limit:
            raise _run_limit(limit, f"this run of agent `{aplan.table}`", ("agents", aplan.table))
        limit = plan.max_calls_per_run
        if limit is not None and run.counts.get(tool.name, 0) >= limit:
            raise _run_limit(limit, f"`{tool.name}` in this run", ("connectors", tool.name))
        return None

    async def _before_wait(self, tool: Tool, args: dict[str, Any], ctx: CallContext, plan: _ToolPlan,
                           aplan: _AgentPlan) -> ToolResult | None:
        """Steps 2-4 of :meth:`before` (rate limits, budgets, the ledger) when one may have to wait."""
        pending = _Pending()
        counted = ctx._guard_counted
        if counted is not None:  # counted in its run by before_in_run
            pending.run, pending.key, pending.seen = counted
            pending.counted = True
            ctx._guard_counted = None
        ctx._guard_pending = pending
        try:
            # 2. rate limits (tool, plugin, agent): all or nothing
            rules = plan.rate_rules + aplan.rate_rules
            if rules:
                _raise_if_limited(self.limiter.hit_sync(rules) if self.limiter.is_memory
                                  else await self.limiter.hit(rules))
            # 3. daily budgets: reserved now, given back in after() if the call never runs
            if plan.daily_budget is not None or aplan.daily_budget is not None:
                wanted = []
                if aplan.daily_budget is not None:
                    wanted.append(("agent", aplan.table, aplan.daily_budget))
                if plan.daily_budget is not None:
                    wanted.append(("tool", tool.name, plan.daily_budget))
                try:
                    pending.budget_keys = self.budgets.try_reserve(wanted) or await self.budgets.reserve(wanted)
                except Exhausted as exc:
                    table = ("agents", aplan.table) if exc.scope == "agent" else ("connectors", tool.name)
                    raise ToolFailure(exc.message, code="budget_exceeded", retry_after=round(exc.retry_after),
                                      details={"fix": f"set {config_line(table, 'daily_budget', exc.limit * 2)}"}
                                      ) from None
            # 4. the ledger: claim the idempotency key before a side effect can happen
            ikey = ctx.idempotency_key
            if plan.ledgered and ikey:
                receipt = await self._claim(tool, args, ctx, ikey)
                if receipt is not None:
                    self._undo(tool, pending)
                    ctx._guard_pending = None
                    return receipt
                pending.ledger_key = ikey
        except BaseException:
            self._undo(tool, pending)
            ctx._guard_pending = None
            raise
        return None

    async def _claim(self, tool: Tool, args: dict[str, Any], ctx: CallContext, key: str) -> ToolResult | None:
        digest = _args_hash(args)
        run_id = ctx.run_id
        legacy = (legacy_key(run_id, ctx.call_id) if run_id and key == derived_key(ctx.agent, run_id, ctx.call_id)
                  else None)
        claim = await self.ledger.claim(
            tool.name, key, digest, agent=ctx.agent, run_id=run_id, call_id=ctx.call_id, legacy=legacy
        )
        if claim.claimed:
            return None
        if claim.agent is not None and claim.agent != ctx.agent:
            # another agent's key: neither its result nor whether the arguments match is this agent's to learn
            # (a row claimed with no agent, through the ledger's own API, belongs to no one in particular)
            raise Denied(
                f"idempotency key {key!r} is already in use for `{tool.name}`; send this call with a new key "
                "of your own."
            )
        if claim.args_hash != digest:
            raise Denied(
                f"idempotency key {key!r} was already used for `{tool.name}` with different arguments; "
                "send this call with a new key."
            )
        if claim.state in ("done", "failed") and claim.result is not None:
            rec = claim.result
            err = rec.get("error")
            return ToolResult(
                call_id=ctx.call_id,
                name=tool.name,
                ok=bool(rec.get("ok")),
                content=rec.get("content"),
                error=ToolError(err["code"], err["message"], err.get("retry_after")) if err else None,
                trace_id=ctx.trace_id,
                meta={"receipt": True, "idempotency_key": key},
            )
        if claim.state == "running":
            raise ToolFailure(
                f"a call of `{tool.name}` with idempotency key {key!r} is still running; its outcome is not "
                "known yet. Wait and check before repeating.",
                code="outcome_unknown",
            )
        raise ToolFailure(
            f"an earlier call of `{tool.name}` with idempotency key {key!r} has an unknown outcome (it was "
            "interrupted); the action may or may not have happened. It will not be re-run automatically: "
            "check its effect before repeating it.",
            code="outcome_unknown",
        )

    def _undo(self, tool: Tool, pending: _Pending) -> None:
        """Give back what ``before`` took for a call that will not run (budgets, its count in its run)."""
        if pending.budget_keys:
            self.budgets.release(pending.budget_keys)
            pending.budget_keys = None
        if pending.counted and pending.run is not None and pending.key is not None:
            _uncount(pending.run, pending.key, self.tool_plan(tool), tool.name)
            pending.counted = False

    @staticmethod
    def _replay(earlier: ToolResult, ctx: CallContext, meta: dict[str, Any], note: str | None = None) -> ToolResult:
        content = {"result": earlier.content, "note": note} if note else earlier.content
        return ToolResult(
            call_id=ctx.call_id, name=earlier.name, ok=earlier.ok, content=content,
            error=earlier.error, trace_id=ctx.trace_id, meta={**meta, "from_call": earlier.call_id},
        )

    def after(
        self, tool: Tool, args: dict[str, Any], ctx: CallContext, result: ToolResult
    ) -> Coroutine[Any, Any, None] | None:
        """Settle what :meth:`before` took. A plain function; returns a coroutine to
        await only when the ledger has to be written.

        The pipeline calls it with every failed result, and with a good one only
        when ``ctx._guard_pending`` is set (a good read made for the first time in
        its run, the usual call, has nothing to settle)."""
        pending: _Pending | tuple[RunState, int, int] | None = ctx._guard_pending
        if pending is None:
            pending = ctx._guard_counted
            if pending is None or (result.ok and ctx.attempt):
                return None
        if isinstance(pending, tuple):  # only counted in its run (the usual call in a run)
            ctx._guard_pending = ctx._guard_counted = None
            run, key, seen = pending
            if ctx.attempt == 0:
                _uncount(run, key, self.tool_plan(tool), tool.name)
            self._settle(tool, ctx, result, run, key, seen)
            return None
        if isinstance(pending, _Pending):
            ctx._guard_pending = None
            if pending.ledger_key:
                return self._after_ledger(tool, args, ctx, result, pending)
            if ctx.attempt == 0:  # the call never ran: give back what it took
                self._undo(tool, pending)
        elif ctx.run_id is None:
            return None
        self._settle_run(tool, ctx, result, pending)
        return None

    async def _after_ledger(self, tool: Tool, args: dict[str, Any], ctx: CallContext, result: ToolResult,
                            pending: _Pending) -> None:
        key = pending.ledger_key
        assert key is not None
        if ctx.attempt == 0:
            self._undo(tool, pending)
            await self.ledger.release(tool.name, key)
        elif result.error is not None and result.error.code in _TRANSIENT_NOT_DONE:
            # the service refused before acting (503, 429, connection refused): the key may
            # be used again once it recovers, instead of replaying a stale failure forever
            await self.ledger.release(tool.name, key)
        else:
            code = result.error.code if result.error else None
            state = "done" if result.ok else ("unknown" if code in ("outcome_unknown", "timeout") else "failed")
            await self.ledger.complete(
                tool.name,
                key,
                state,
                {"ok": result.ok, "content": result.content,
                 "error": result.error.to_dict() if result.error else None},
                wait=False,  # the claim was durable; see Ledger.complete
            )
        self._settle_run(tool, ctx, result, pending)

    def _settle_run(self, tool: Tool, ctx: CallContext, result: ToolResult,
                    pending: _Pending | None) -> None:
        """Record the call's outcome in its run: failures, the last good result, the read cache.
        (A call refused before it was counted, ``pending`` None, has nothing to record.)"""
        if pending is not None and pending.run is not None and pending.key is not None:
            self._settle(tool, ctx, result, pending.run, pending.key, pending.seen)

    def _settle(self, tool: Tool, ctx: CallContext, result: ToolResult, run: RunState, key: int,
                seen: int) -> None:
        """Record a call's outcome: its last good result once the call is repeated (what
        the identical-call guard replays), failures in a row, and a new write epoch (a
        write may change what reads return, so the read cache starts over)."""
        ran = ctx.attempt > 0
        plan = self._tool_plans.get(tool.name) or self.tool_plan(tool)
        if result.ok:
            if run.failures:
                run.failures.pop(key, None)
            if not plan.write:
                if seen >= plan.keep_from:
                    if run.kept is None:
                        run.kept = {}
                    run.kept[key] = (result, run.epoch)
                return
        elif ran and result.error is not None and result.error.code not in _NOT_ARGUMENT_FAILURES:
            if run.failures is None:
                run.failures = {}
            count = run.failures.get(key, (0, ""))[0] + 1
            run.failures[key] = (count, result.error.message[:200])
        if plan.write and ran:
            run.epoch += 1

    async def startup(self) -> int:
        """Turn ``running`` ledger rows into ``unknown``; let connectors reconcile them.

        Returns how many rows were marked ``unknown`` now. Without a database file
        there is nothing to recover, and none is created (a read-only user of reach
        gets no ``.reach/`` directory until something needs state).
        """
        store = self.reach.store
        if getattr(store, "shared", False):
            marked = await self.ledger.recover(older_than=self.stale_before())
        elif not store.path.exists():
            return 0
        else:
            marked = await self.ledger.recover()
        for tool_name, key in await self.ledger.unknown_rows():
            await self._reconcile(tool_name, key)
        return marked

    def stale_before(self, margin: float = 10.0) -> float:
        """Epoch seconds before which a ``running`` ledger row cannot belong to a live
        call of any instance: every call ends (or is marked unknown) by its deadline."""
        import time

        longest = max((float(t.timeout or 0) for t in self.reach.all_tools()), default=0.0)
        return time.time() - longest - margin

    async def _reconcile(self, tool_name: str, key: str) -> None:
        try:
            conn = self.reach.get(tool_name)
        except Exception:
            return
        fn = getattr(conn, "reconcile", None)
        if fn is None:
            return
        try:
            outcome = fn(key)
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except ToolFailure as failure:
            await self.ledger.complete(tool_name, key, "failed", {
                "ok": False, "content": None,
                "error": {"code": failure.code, "message": failure.message},
            })
            return
        except Exception:
            return  # stays unknown; reconcile again at the next start
        if outcome is None:
            return
        await self.ledger.complete(tool_name, key, "done", {"ok": True, "content": to_jsonable(outcome), "error": None})

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

