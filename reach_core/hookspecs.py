"""Every hook a reach plugin may implement, documented where it is declared.

Implement hooks as module-level functions decorated with ``reach_core.hookimpl``
in the module your ``[project.entry-points.reach]`` entry names. A plugin
implements only the hooks it needs, with only the arguments it needs. A plugin
with state per ``Reach`` returns an object from ``reach_plugin_instance``; its
``@hookimpl`` methods (with ``self``) count as the plugin's hooks.

Set-up hooks are called once per plugin, in plugin-name order, when a
``Reach`` starts. Runtime hooks may be plain or ``async`` functions: pluggy
cannot await, so reach's own caller (``reach_core.hookcall``) takes the
implementations in their documented order, awaits results and applies each
hook's combination rule. Call order never decides who wins a one-of choice:
names and ``[strategies]`` do.

Default order of chained runtime hooks: the plugin module attribute
``REACH_HOOK_PRIORITY = {"reach_post_invoke": 50}`` (lower first, default 100),
then the plugin name; ``[hooks] reach_post_invoke = ["a", "b"]`` in config
overrides it. ``reach plugins --hook NAME`` prints the effective order.
Built-in order: policy (core) before confirmation (50); shaping (50) before audit (90).
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("reach")
hookimpl = pluggy.HookimplMarker("reach")


# ------------------------------------------------------------------ set-up


@hookspec
def reach_plugin_settings() -> Any:
    """Return the pydantic model class of this plugin's settings.

    Import the model inside this function: the entry-point module is imported
    by ``reach plugins`` without starting a ``Reach``, and this hook is only
    called when one starts.

    ``[plugins.NAME]`` is validated against it at start-up (errors name the plugin
    and the field); ``{ env = "VAR" }`` values are read from the environment. The
    validated instance is passed to ``reach_register_tools`` and set on ``ctx.settings``.
    """


@hookspec
def reach_plugin_instance(reach: Any, settings: Any) -> Any:
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
def reach_register_tools(register: Any, settings: Any, reach: Any) -> None:
    """Register this plugin's tools: call ``register(connector)`` for each.

    Called once per plugin with that plugin's own validated ``settings`` (or
    ``None``). The core names the provider, validates names and schemas, and
    refuses duplicates within a plugin; the same name from two plugins leaves the
    tool unavailable until ``[connectors.NAME] provider = "..."`` picks one.
    """


@hookspec
def reach_register_selectors(register: Any) -> None:
    """``register(name, selector)``: a tool-selection strategy.

    ``selector.select(query, tools, ctx, limit) -> list[str]`` returns tool names,
    best first, from ``tools`` (already filtered by policy). Optional
    ``selector.explain(...) -> list[dict]``. ``[strategies] selector`` picks one.
    """


@hookspec
def reach_register_adapters(register: Any) -> None:
    """``register(name, factory)``: an LLM adapter for ``reach.run``.

    ``factory(reach, settings)`` returns an object implementing
    ``reach_core.adapter.Adapter``. ``[strategies] adapter`` picks one.
    """


@hookspec
def reach_register_confirmers(register: Any) -> None:
    """``register(name, confirmer)``: who asks a person when a call needs approval.

    ``[strategies] confirmer`` picks one. Without any, calls that need
    confirmation are denied with the reason and the fix.
    """


@hookspec
def reach_register_parsers(register: Any) -> None:
    """``register(name, parser)``: parse tool calls out of model text.

    ``parser.parse(text) -> (list[ToolCall], list[str])``. The core registers
    ``tagged``; ``[strategies] parser`` picks one.
    """


@hookspec
def reach_register_runners(register: Any) -> None:
    """``register(name, runner)``: another way to drive ``reach.run`` (e.g. durable).

    ``await runner.run(reach, messages_or_text, **kwargs)`` returns a ``RunResult``.
    Used only when asked: ``reach.run(..., durable=True)`` or ``[strategies] runner``;
    otherwise the in-process loop runs.
    """


@hookspec
def reach_register_commands(cli: Any) -> None:
    """Add commands to the ``reach`` CLI; ``cli`` is the root ``click.Group``."""


@hookspec
def reach_startup(reach: Any) -> Any:
    """After every tool is registered; may be async. Open stores, start writers."""


@hookspec
def reach_shutdown(reach: Any) -> Any:
    """On ``await reach.aclose()``; may be async. Flush and close."""


# ------------------------------------------------------------------ runtime


@hookspec
def reach_pre_validate(call: Any, tool: Any, ctx: Any) -> Any:
    """Before schema validation. Chained: return a new arguments dict (passed to
    the next implementation and then validated) or ``None`` to keep them.

    ``call.arguments`` holds the decoded dict. Raise a ``ToolFailure`` to refuse.
    """


@hookspec
def reach_pre_invoke(call: Any, tool: Any, ctx: Any) -> Any:
    """After validation and the core's policy, before execution. All run.

    Raise ``Denied(reason)`` to refuse or ``NeedsConfirmation(summary)`` to ask
    for a person. Return value is ignored. ``call.arguments`` is the validated dict.
    """


@hookspec
def reach_post_invoke(call: Any, tool: Any, result: Any, ctx: Any) -> Any:
    """After every call, successful or not (``tool`` is ``None`` for an unknown
    tool). Chained: return a replacement ``ToolResult`` or ``None`` to keep it.
    """


@hookspec
def reach_format_error(call: Any, error: Any, ctx: Any) -> Any:
    """Shape the model-facing message of a failed call. ``error`` is a
    ``ToolError``. The first non-``None`` string wins (plugins in order, or the
    one named by ``[strategies] error_formatter``); the core default runs last.
    """


@hookspec
def reach_run_step(step: Any, ctx: Any) -> Any:
    """Observer: one agent-loop step finished (tools offered, calls, results, usage)."""


@hookspec
def reach_tool_progress(event: Any, ctx: Any) -> Any:
    """Observer: a running tool reported progress (``ctx.report_progress``)."""


@hookspec
def reach_confirmation(event: Any, ctx: Any, reach: Any) -> Any:
    """Observer: a confirmation was requested or decided.

    ``event`` is a dict with ``kind`` (``requested``, ``approved``, ``rejected``,
    ``expired``, ``executed``), ``confirmation_id``, ``tool``, ``agent``,
    ``summary`` and, for decisions, ``by`` and ``reason``. Chat front-ends present
    requests from here; audit records every decision. ``ctx`` may be ``None``
    for decisions taken outside a call (the CLI); ``reach`` is always the ``Reach``.
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
