"""Delegation: a built-in ``delegate(task, agent)`` tool that cannot escalate.

An agent whose config names delegates (``[agents.main] delegates = ["researcher"]``)
is offered ``delegate``. Calling it runs a child ``reach.run`` as that agent and
returns the child's final text as the tool result (through ``reach_post_invoke``,
so shaping and audit apply as to any tool).

What keeps a child from doing more than its parent could:

* its tools are the delegate agent's allowed tools **intersected** with the
  parent's (and with the parent run's ``tools=`` restriction): never wider;
* ``delegate`` itself is left out of the child's tools unless depth allows it
  (``[reach] max_delegation_depth``, default 1, hard cap 3), and the tool
  re-checks the depth, so a model asking for recursion gets a refusal;
* every child call is checked again at invoke time against every ancestor's
  policy (a core ``reach_pre_invoke`` that runs first): a tool an ancestor may
  not use is denied, and a tool an ancestor would need a person's approval for
  needs approval in the child too, whatever the child agent's own tiers say;
* the approval mode a confirmer reads for a child call
  (``reach.policy(agent).approval_mode(tool)``) is the strictest of the child's
  and every ancestor's for that tool (see :func:`strictest_mode`): a parent's
  ``always`` is never a child's ``once``;
* the child shares the parent's run budget (its run counts into the parent
  run's guard-rail state), deadline (its deadline is what is left of the
  parent's) and cancellation (it runs inside the parent's task);
* its calls carry ``parent_run_id`` for audit;
* a confirmation a child call needs stops the child and comes back as the
  ``delegate`` result (``needs_confirmation`` with the confirmation id), so the
  parent's person decides, not the child model.

Several ``delegate`` calls in one model turn run in parallel like any other
calls (``invoke_many``), under the same guard rails.

A built-in plugin: registered as ``reach.delegation`` before the installed
plugins, and switched off like any plugin (``[plugins] disable = ["reach.delegation"]``).
It offers nothing unless some agent names delegates.
"""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

from ..connectors import Connector
from ..errors import ConfigError, Denied, InvalidArguments, ToolFailure, config_line
from ..hookspecs import hookimpl
from ..policy import Policy, matches, strictest_mode
from ..runtime import CORE
from ..scope import _SCOPE, RunScope

if TYPE_CHECKING:
    from ..config import AgentConfig, Config
    from ..context import CallContext
    from ..result import ToolResult
    from ..runtime import Runtime
    from ..tool import Tool

__all__ = ["DELEGATE", "MAX_DEPTH_CAP", "NAME", "DelegateTool", "Delegation", "DelegationPlugin"]

#: the name this built-in plugin is registered (and disabled) under
NAME = "reach.delegation"
DELEGATE = "delegate"
#: the deepest chain of delegations config may allow
MAX_DEPTH_CAP = 3
#: a child ends this much before the delegate call's own deadline, so its partial answer can be reported
_CHILD_MARGIN = 0.05


# ------------------------------------------------------------------ policy

def _implied_mode(policy: Policy, tool: Tool) -> str | None:
    """The mode ``policy`` holds ``tool`` to: its named mode, ``always`` when its tiers
    want a person without naming a mode (the strictest a confirmer may default to),
    ``None`` when it asks nobody."""
    mode = policy.configured_mode(tool)
    if mode is not None:
        return mode
    return "always" if policy.needs_confirmation(tool) else None


class DelegatingPolicy(Policy):
    """An agent's policy when delegation is configured: ``delegate`` is allowed
    exactly to agents that name delegates (and do not deny it).

    The decision is put in the policy's cache up front, so the hot path
    (``Policy.allows``) stays the parent class's.
    """

    __slots__ = ("_delegate",)

    def __init__(self, name: str, config: AgentConfig, delegate: Tool | None) -> None:
        super().__init__(name, config)
        self._delegate = delegate
        if delegate is not None:
            self._cache[id(delegate)] = (
                bool(config.delegates) and delegate.blocked is None
                and not any(matches(p, delegate) for p in config.deny)
            )

    def approval_mode(self, tool: Tool) -> str | None:
        """This agent's mode for ``tool``; inside a run delegated to this agent, the strictest
        of its own and every ancestor's (what a confirmer must apply to the child's call)."""
        own = self.configured_mode(tool)
        scope = _SCOPE.get()
        if scope is None or not scope.ancestor_policies or (scope.agent or "default") != self.name:
            return own
        inherited = [_implied_mode(p, tool) for p in scope.ancestor_policies]
        if all(m is None for m in inherited):
            return own
        return strictest_mode([_implied_mode(self, tool), *inherited])

    @property
    def pinned(self) -> list[str]:
        """A selector must not hide the way to other agents: ``delegate`` is pinned."""
        return [*self.config.pinned, DELEGATE] if self.config.delegates else list(self.config.pinned)

    def denial_fix(self, tool: Tool, *, confirmer: bool = False) -> str:
        if tool is self._delegate and not self.config.delegates:
            line = config_line(("agents", self.name), "delegates", ["researcher"])
            return f"name the agents it may hand work to: set {line}"
        return super().denial_fix(tool, confirmer=confirmer)


# ------------------------------------------------------------------ the tool


class _Halt(BaseException):  # noqa: N818 - a control-flow signal, not an error
    """Raised from the child's step callback to stop the child run at once.

    A ``BaseException`` so the loop's observer guard (which swallows
    ``Exception`` from callbacks) lets it through.
    """

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.name)
        self.result = result


class DelegateTool(Connector):
    """``delegate(task, agent)``: run a sub-task as another, never more powerful, agent."""

    name = DELEGATE
    description = (
        "Hand a self-contained sub-task to another agent and get its final answer back. "
        "Use it for work another agent is set up for. The other agent does not see this "
        "conversation: put everything it needs into `task`."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "task": {"type": "string", "description": "the complete sub-task, with every detail the agent needs"},
            "agent": {"type": "string", "description": "the agent that should do it"},
        },
        "required": ["task", "agent"],
        "additionalProperties": False,
    }
    tags = ("delegation",)
    risk = "read"  # delegating does nothing itself; every call of the child is checked on its own
    idempotent = True
    max_retries = 0  # a failed child is reported, never silently run twice
    timeout = 120.0

    def __init__(self, delegation: Delegation) -> None:
        self.delegation = delegation

    def declaration_for(self, tool: Tool, policy: Policy, *, strict: bool) -> dict[str, Any]:
        """This agent's entry (``Reach.tools`` asks a connector that has this method)."""
        return self.delegation.declaration(tool, policy, strict=strict)

    async def execute(self, params: Any, ctx: Any = None) -> Any:
        return await self.delegation.delegate(str(params["task"]), str(params["agent"]), ctx)


class _Hooks:
    """The core's own ``reach_pre_invoke`` for calls made by a delegated run.

    Registered only when delegation is configured, with the lowest priority so
    it runs before any confirmer (which must see ``ctx.needs_confirmation``).
    """

    REACH_HOOK_PRIORITY = {"reach_pre_invoke": 0}

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Tool, ctx: CallContext) -> None:
        scope = _SCOPE.get()
        if scope is None or scope.depth == 0 or scope.run_id != ctx.run_id:
            return
        if scope.allowed is not None and tool.name not in scope.allowed:
            raise Denied(
                f"`{tool.name}` is not among the tools this delegated task may use; "
                "do the task with the tools offered to you."
            )
        for policy in scope.ancestor_policies:
            if not policy.allows(tool):
                raise Denied(
                    f"`{tool.name}` is not available to the agent that delegated this task, so it is not "
                    "available here either; do the task with the tools offered to you.",
                    fix=policy.denial_fix(tool, confirmer=ctx.rt.has_confirmer()),
                )
            if policy.needs_confirmation(tool):
                ctx.needs_confirmation = True
                ctx.state.setdefault("approval_by", []).append(policy)  # the fix names each that asks


class Delegation:
    """Delegation for one ``Runtime``: the tool, its hook and the depth limit."""

    def __init__(self, rt: Runtime, max_depth: int) -> None:
        self.rt = rt
        self.max_depth = max_depth
        self.connector = DelegateTool(self)
        self.hooks = _Hooks()
        self._decls: dict[tuple[str, bool], dict[str, Any]] = {}

    @classmethod
    def from_config(cls, rt: Runtime) -> Delegation | None:
        """``None`` unless some agent names delegates; config mistakes raise ``ConfigError``."""
        cfg: Config = rt.config
        raw = getattr(cfg.reach, "max_delegation_depth", None)
        depth = 1
        if raw is not None:
            if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_DEPTH_CAP:
                raise ConfigError(
                    f"[reach] max_delegation_depth must be a whole number from 1 to {MAX_DEPTH_CAP}, got {raw!r}"
                )
            depth = raw
        named = {name: a.delegates for name, a in cfg.agents.items() if a.delegates}
        if not named:
            return None
        for name, delegates in named.items():
            for target in delegates:
                if target not in cfg.agents and target != "default":
                    raise ConfigError(
                        f"[agents.{name}] delegates names {target!r}, but there is no [agents.{target}] table; "
                        "define that agent (its allow-list decides what it may do)"
                    )
        return cls(rt, depth)

    # -------------------------------------------------------------- declaration
    def declaration(self, tool: Tool, policy: Policy, *, strict: bool) -> dict[str, Any]:
        """The ``delegate`` entry for one agent: ``agent`` is an enum of its delegates."""
        key = (policy.name, strict)
        decl = self._decls.get(key)
        if decl is None:
            decl = copy.deepcopy(tool.declaration(strict=strict))
            fn = decl["function"]
            agent = fn["parameters"]["properties"]["agent"]
            agent["enum"] = list(policy.config.delegates)
            fn["description"] = f"{fn['description']} Agents: {', '.join(policy.config.delegates)}."
            self._decls[key] = decl
        return decl

    # -------------------------------------------------------------- running a child
    def _child_tools(self, ctx: CallContext, target: str, scope: RunScope | None, child_depth: int) -> list[str]:
        rt = self.rt
        parent = {t.name for t in rt.allowed_tools(ctx.agent)}
        if scope is not None and scope.allowed is not None:
            parent &= scope.allowed
        for agent in scope.ancestors if scope is not None else ():
            parent &= {t.name for t in rt.allowed_tools(agent)}
        return [
            t.name for t in rt.allowed_tools(target)
            if t.name in parent and (t.name != DELEGATE or child_depth < self.max_depth)
        ]

    async def delegate(self, task: str, target: str, ctx: CallContext) -> Any:
        from .. import streaming

        rt = self.rt
        scope = _SCOPE.get()
        if scope is not None and scope.run_id != ctx.run_id:
            scope = None  # called outside the run that set the scope (a nested plain invoke)
        delegates = rt.policy(ctx.agent).config.delegates
        if target not in delegates:
            raise InvalidArguments("agent", f"one of {', '.join(delegates)}", delegates[0] if delegates else None)
        if not task.strip():
            raise InvalidArguments("task", "the complete sub-task as text", "Find the opening hours of the Louvre")
        depth = scope.depth if scope is not None else 0
        if depth + 1 > self.max_depth:
            raise Denied(
                f"delegation goes at most {self.max_depth} level(s) deep and this task was already delegated; "
                "do it yourself with the tools offered to you.",
                fix=(f"set {config_line('reach', 'max_delegation_depth', depth + 1)}" if depth < MAX_DEPTH_CAP
                     else None),
            )
        tools = self._child_tools(ctx, target, scope, depth + 1)

        loop = asyncio.get_running_loop()
        ends = [e for e in (ctx.deadline, scope.ends_at if scope is not None else None) if e is not None]
        left = max(0.0, min(ends) - loop.time() - _CHILD_MARGIN) if ends else None
        max_steps = scope.max_steps if scope is not None else 5
        parent_run = ctx.run_id
        child_run = f"{parent_run or ctx.trace_id}/{target}/{ctx.call_id}"
        adapter = scope.adapter if scope is not None else None
        if adapter is None:
            from ..loop import adapter_for

            try:
                adapter = adapter_for(rt.facade, None)
            except ConfigError as exc:
                raise ToolFailure(f"delegation is not possible here: {exc}", code="execution_failed") from None

        async def on_step(step: Any) -> None:
            names = [c["function"]["name"] for c in step.tool_calls]
            await ctx.report_progress(
                step.index, max_steps, f"{target}: " + (", ".join(names) if names else "answered")
            )
            for r in step.results:
                if r.error is not None and r.error.code == "needs_confirmation":
                    raise _Halt(r)

        runs = getattr(rt.guards, "runs", None)
        if runs is not None and parent_run is not None:
            # the child's calls count against the parent run's limits (max_calls_per_run, ...)
            runs.alias(child_run, parent_run, child_agent=target, parent_agent=ctx.agent)
        if ctx.progress_sink is None:
            streaming.sink_for(ctx)  # this call's stream gets the child's steps as progress ...
        token = streaming.detach()  # ... while the child's own calls do not feed it
        try:
            result = await rt.facade.run(
                task, agent=target, adapter=adapter,
                max_steps=max_steps, deadline=left, tools=tools, run_id=child_run,
                parent_run_id=parent_run, on_step=on_step,
            )
        except _Halt as halt:
            r = halt.result
            assert r.error is not None
            raise ToolFailure(
                f"the `{target}` agent was stopped: {r.error.message} "
                "Once it is approved, delegate the same task again.",
                code="needs_confirmation",
                details={"confirmation_id": r.meta.get("confirmation_id")},
            ) from None
        finally:
            streaming.reattach(token)
            if runs is not None:
                runs.end(child_run, target)
        if result.outcome == "answered":
            return result.text
        said = f" Its last words: {result.text}" if result.text else ""
        if result.outcome == "max_steps":
            raise ToolFailure(
                f"the `{target}` agent stopped after {max_steps} steps without a final answer.{said} "
                "Give it a narrower task or do it yourself.",
                code="max_steps",
            )
        if result.outcome == "deadline":
            raise ToolFailure(f"the `{target}` agent ran out of time: {result.error}.{said}", code="timeout")
        raise ToolFailure(
            f"the `{target}` agent could not reach its model: {result.error}. Try again later.",
            code="upstream_unavailable",
        )


# ------------------------------------------------------------------ the plugin


class DelegationPlugin:
    """The built-in plugin: when config names delegates, registers ``delegate``, the
    delegating policy and the core's ``reach_pre_invoke`` for delegated runs (that hook
    only then, so a Reach without delegation pays nothing per call)."""

    def __init__(self) -> None:
        self.delegation: Delegation | None = None

    @hookimpl
    def reach_register_tools(self, reach: Any) -> None:
        rt: Runtime = reach.runtime
        self.delegation = delegation = Delegation.from_config(rt)
        if delegation is None:  # only agents that name delegates are offered `delegate`
            return
        rt.add(delegation.connector, plugin=CORE)  # a core tool: `[limits.plugins.reach-core]`
        rt.policy_factory = lambda name, acfg, _rt: DelegatingPolicy(name, acfg, _rt.core_tool(DELEGATE))
        rt.pm.register(delegation.hooks, name=f"{NAME}.hooks")
