"""Every hook a reach plugin may implement, documented where it is declared.

Implement hooks as module-level functions decorated with ``reach_core.hookimpl``
in the module your ``[project.entry-points.reach]`` entry names. A plugin
implements only the hooks it needs, with only the arguments it needs. A plugin
with state per ``Reach`` returns an object from ``reach_plugin_instance``; its
``@hookimpl`` methods (with ``self``) count as the plugin's hooks.

Set-up hooks are called once per plugin, in plugin-name order, when a
``Reach`` is built. Runtime hooks may be plain or ``async`` functions: pluggy
cannot await, so reach's own caller (``reach_core.hooks``) takes the
implementations in their documented order, awaits results and applies each
hook's combination rule. Call order never decides who wins a one-of choice:
names and ``[strategies]`` do.

Each hookspec below states its **rule** (how the implementations combine:
``chain``, ``each``, ``first``, ``notify``, ``setup``; see ``reach_core.hooks``)
and its **exception rule** (what happens when an implementation raises: which
error the caller sees, whether other implementations still run).
``tests/test_hook_rules.py`` holds one test per exception rule.

Default order of chained runtime hooks: the plugin module attribute
``REACH_HOOK_PRIORITY = {"reach_post_invoke": 50}`` (lower first, default 100),
then the plugin name; ``[hooks] reach_post_invoke = ["a", "b"]`` in config
overrides it. ``reach plugins --hook NAME`` prints the effective order.
Built-in order: policy (core) before confirmation (50); shaping (50) before audit (90).

The strategies a plugin registers by name are ``Protocol``s declared here:
:class:`Selector` (``[strategies] selector``; "select tools" is the card's hook,
provided by name), :class:`Confirmer`, :class:`Parser` and :class:`Adapter`
(declared in ``reach_core.adapter``, re-exported).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pluggy

if TYPE_CHECKING:
    import click
    from pydantic import BaseModel

    from .adapter import Adapter
    from .calls import ToolCall
    from .connectors import Connector
    from .context import CallContext
    from .loop import RunContext, RunStep
    from .result import ToolError, ToolResult
    from .tool import Tool

__all__ = ["LIFECYCLE_HOOKS", "RUNTIME_HOOKS", "Adapter", "Confirmer", "Parser", "Selector", "hookimpl",
           "hookspec"]


def __getattr__(name: str) -> Any:
    """``Adapter`` is re-exported on first use: ``reach plugins`` (which imports this module to
    find plugins' hooks) does not pay for the adapter module's dataclasses."""
    if name == "Adapter":
        from .adapter import Adapter

        return Adapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


hookspec = pluggy.HookspecMarker("reach")
hookimpl = pluggy.HookimplMarker("reach")


# ------------------------------------------------------------------ strategies (Protocols)


@runtime_checkable
class Selector(Protocol):
    """Ranks tools for a query: the card's "select tools" hook, provided by name
    (``reach_register_selectors``) and chosen by ``[strategies] selector``.

    ``select`` returns tool names, best first, from ``tools`` (already filtered by
    policy). An optional ``explain(query, tools, ctx, limit) -> list[dict]`` backs
    ``reach tools --explain``. An exception from ``select`` reaches the caller of
    ``Reach.tools``/``select`` (nothing is hidden behind a silent fallback).
    """

    def select(self, query: str, tools: Sequence[Tool], ctx: CallContext, limit: int) -> list[str]: ...


@runtime_checkable
class Confirmer(Protocol):
    """Asks a person before a call that needs approval (``[strategies] confirmer``).

    The confirmer's ``reach_pre_invoke`` decides a call (approve, or raise
    ``NeedsConfirmation``). The agent loop asks ``resolve`` for decisions taken
    since: ``await resolve(reach, result, wait)`` returns the decided call's result,
    or ``result`` itself while still pending (waiting up to ``wait`` seconds). The
    loop resumes waiting calls only through this method; an exception from it ends
    the run with that exception. ``result.name`` is the tool of the waiting call and,
    when the loop resumes one from a run's messages, ``result.meta["agent"]`` the run's
    agent: the id came from a tool message, which any tool's output can imitate, so a
    request for another tool or agent must be answered with ``result`` itself.
    """

    async def resolve(self, reach: Any, result: ToolResult, wait: float) -> ToolResult: ...


@runtime_checkable
class Parser(Protocol):
    """Reads tool calls a model wrote into text (``[strategies] parser``; built-in ``tagged``).

    ``parse(text)`` returns the calls and an error string per broken call (for the
    model); it should not raise: an exception reaches the caller (``Reach.parse_tagged``,
    an adapter in tagged mode).
    """

    def parse(self, text: str) -> tuple[list[ToolCall], list[str]]: ...


#: ``register(name, obj)`` as the ``reach_register_*s`` hooks receive it
Register = Callable[[str, Any], None]


# ------------------------------------------------------------------ set-up


@hookspec
def reach_plugin_settings() -> type[BaseModel] | None:
    """Return the pydantic model class of this plugin's settings.

    Rule: ``setup``, the plugin's own implementation only. Import the model inside this
    function: the entry-point module is imported by ``reach plugins`` without starting a
    ``Reach``, and this hook is only called when one starts.

    ``[plugins.NAME]`` is validated against it at start-up (errors name the plugin
    and the field); ``{ env = "VAR" }`` values are read from the environment. The
    validated instance is passed to ``reach_register_tools`` and set on ``ctx.settings``.

    Exceptions: invalid settings raise ``ConfigError`` from ``Reach(...)``; an exception
    raised by the hook itself also propagates out of ``Reach(...)``.
    """


@hookspec
def reach_plugin_instance(reach: Any, settings: Any) -> object | None:
    """Return this plugin's object for this ``Reach`` (or ``None``): where per-``Reach`` state lives.

    Called once per plugin when a ``Reach`` starts, after every plugin's settings are
    validated and before ``reach_register_tools``, with this plugin's validated
    ``settings`` (or ``None``). The object's ``@hookimpl`` methods are registered with
    this ``Reach``'s plugin manager under the plugin's name, beside the module's
    functions (a hook both implement is the object's): ``[hooks]`` order,
    ``hooks_disabled``, ``REACH_HOOK_PRIORITY`` (module or object attribute) and
    ``reach plugins --hook`` name it as the plugin. A plugin's public functions find it
    with ``reach_core.plugin_instance(reach, "NAME")``. Keep per-``Reach`` state on it,
    never in a module-level map or an attribute set on ``reach``. An exception marks the
    plugin failed (``PluginError``; raised when strict).
    """


@hookspec
def reach_register_tools(register: Callable[[Connector], Tool], settings: Any, reach: Any) -> None:
    """Register this plugin's tools: call ``register(connector)`` for each.

    Rule: ``setup``, once per plugin with that plugin's own validated ``settings``
    (or ``None``); ``reach`` is the ``Reach`` being built. The core names the provider,
    validates names and schemas, and refuses duplicates within a plugin; the same name
    from two plugins leaves the tool unavailable until ``[connectors.NAME] provider =
    "..."`` picks one.

    Exceptions: a ``ConnectorError``, ``PluginError``, ``TypeError`` or ``ValueError``
    marks this plugin ``failed`` (``reach plugins`` shows why), unregisters it and the
    other plugins still load; with ``[reach] strict`` it propagates out of ``Reach(...)``.
    A ``ConfigError`` or any other exception always propagates out of ``Reach(...)``.
    """


@hookspec
def reach_register_selectors(register: Register) -> None:
    """``register(name, selector)``: a tool-selection strategy (a :class:`Selector`).

    ``[strategies] selector`` picks one. Rule and exceptions: as ``reach_register_tools``
    (two providers of the same kind and name raise ``PluginError``).
    """


@hookspec
def reach_register_adapters(register: Register) -> None:
    """``register(name, factory)``: an LLM adapter for ``reach.run``.

    ``factory(reach, settings)`` returns an :class:`Adapter`. ``[strategies] adapter``
    picks one. Rule and exceptions: as ``reach_register_tools``.
    """


@hookspec
def reach_register_confirmers(register: Register) -> None:
    """``register(name, confirmer)``: who asks a person when a call needs approval
    (a :class:`Confirmer`).

    ``[strategies] confirmer`` picks one. Without any, calls that need
    confirmation are denied with the reason and the fix. Rule and exceptions: as
    ``reach_register_tools``.
    """


@hookspec
def reach_register_parsers(register: Register) -> None:
    """``register(name, parser)``: parse tool calls out of model text (a :class:`Parser`).

    The built-in plugin ``reach.tagged`` registers ``tagged``; ``[strategies] parser``
    picks one. Rule and exceptions: as ``reach_register_tools``.
    """


@hookspec
def reach_register_runners(register: Register) -> None:
    """``register(name, runner)``: another way to drive ``reach.run`` (e.g. durable).

    ``await runner.run(reach, messages_or_text, **kwargs)`` returns a ``RunResult``.
    Used only when asked: ``reach.run(..., durable=True)`` or ``[strategies] runner``;
    otherwise the in-process loop runs. Rule and exceptions: as ``reach_register_tools``.
    """


@hookspec
def reach_register_commands(cli: click.Group) -> None:
    """Add commands to the ``reach`` CLI; ``cli`` is the root ``click.Group``.

    Rule: ``setup``, when the CLI first lists or looks up a plugin command. Exceptions:
    a warning naming the plugin goes to stderr; the other plugins' commands still load.
    """


@hookspec
def reach_startup(reach: Any) -> Awaitable[None] | None:
    """After every tool is registered, on ``reach.start()`` (the first invoke calls it);
    may be async. Open stores, start writers.

    Rule: ``setup``, in plugin registration order. Exceptions: the first one ends
    start-up and reaches the caller of ``start()`` (or of the first ``invoke``);
    later implementations do not run and the ``Reach`` stays unstarted (the next
    call tries again).
    """


@hookspec
def reach_shutdown(reach: Any) -> Awaitable[None] | None:
    """On ``await reach.aclose()``; may be async. Flush and close.

    Rule: ``setup``, in plugin registration order. Exceptions: the first one reaches
    the caller of ``aclose()``; later implementations do not run and the guard rails
    and store stay open.
    """


# ------------------------------------------------------------------ runtime


@hookspec
def reach_pre_validate(call: ToolCall, tool: Tool, ctx: CallContext) -> dict[str, Any] | None:
    """Before schema validation.

    Rule: ``chain``: return a new arguments dict (passed to the next implementation
    and then validated) or ``None`` to keep them. ``call.arguments`` holds the
    decoded dict.

    Exceptions: raise a ``ToolFailure`` (e.g. ``InvalidArguments``) to refuse: the
    call's result is that failure. Any other exception is a bug: logged
    (``reach.pipeline_error``), the result is ``execution_failed``. Either way later
    implementations do not run, the tool does not run, ``reach_post_invoke`` does.
    """


@hookspec
def reach_pre_invoke(call: ToolCall, tool: Tool, ctx: CallContext) -> Awaitable[None] | None:
    """After validation and the core's policy, before execution.

    Rule: ``each``: all run, in order; return values are ignored.
    ``call.arguments`` is the validated dict.

    Exceptions: raise ``Denied(reason)`` to refuse or ``NeedsConfirmation(summary)``
    to ask for a person: the result is that failure (``denied``,
    ``needs_confirmation``). Any other exception is a bug: logged
    (``reach.pipeline_error``), the result is ``execution_failed``. Either way later
    implementations do not run, the tool does not run, ``reach_post_invoke`` does.
    """


@hookspec
def reach_post_invoke(call: ToolCall, tool: Tool | None, result: ToolResult,
                      ctx: CallContext) -> ToolResult | None:
    """After every call, successful or not (``tool`` is ``None`` for an unknown tool).

    Rule: ``chain``: return a replacement ``ToolResult`` or ``None`` to keep it.

    Exceptions: logged (``reach.post_invoke_error`` with the plugin) and that
    implementation skipped: the result so far stands, the later implementations
    still run, the caller never sees the exception.
    """


@hookspec
def reach_format_error(call: ToolCall, error: ToolError, ctx: CallContext) -> str | None:
    """Shape the model-facing message of a failed call. ``error`` is a ``ToolError``.

    Rule: ``first``: the first non-``None`` string wins (plugins in order, or only the
    one named by ``[strategies] error_formatter``); the core's message otherwise.

    Exceptions: logged (``reach.format_error_failed``); the core's message stands and
    no later implementation is asked; the caller never sees the exception.
    """


@hookspec
def reach_run_step(step: RunStep, ctx: RunContext) -> Awaitable[None] | None:
    """Observer: one agent-loop step finished (tools offered, calls, results, usage).

    Rule: ``notify``. Exceptions: logged (``reach.observer_error``); the other
    observers still run and the run goes on.
    """


@hookspec
def reach_tool_progress(event: dict[str, Any], ctx: CallContext) -> Awaitable[None] | None:
    """Observer: a running tool reported progress (``ctx.report_progress``).

    Rule: ``notify``. Exceptions: logged (``reach.observer_error``); the other
    observers still run and the tool's call goes on.
    """


@hookspec
def reach_confirmation(event: dict[str, Any], ctx: CallContext | None, reach: Any) -> Awaitable[None] | None:
    """Observer: a confirmation was requested or decided.

    ``event`` is a dict with ``kind`` (``requested``, ``approved``, ``rejected``,
    ``expired``, ``executed``), ``confirmation_id``, ``tool``, ``agent``,
    ``summary`` and, for decisions, ``by`` and ``reason``. Chat front-ends present
    requests from here; audit records every decision. ``ctx`` may be ``None``
    for decisions taken outside a call (the CLI); ``reach`` is always the ``Reach``.

    Rule: ``notify``. Exceptions: logged (``reach.observer_error``); the other
    observers still run and the confirmation goes on.
    """


RUNTIME_HOOKS = (
    "reach_pre_validate",
    "reach_pre_invoke",
    "reach_post_invoke",
    "reach_format_error",
    "reach_run_step",
    "reach_tool_progress",
    "reach_confirmation",
)

#: set-up hooks the hook caller also runs (rule ``setup``, see ``reach_core.hooks``)
LIFECYCLE_HOOKS = ("reach_startup", "reach_shutdown")
