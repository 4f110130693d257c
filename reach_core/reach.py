"""``Reach``: the facade. Construction (config ▸ plugins ▸ ``Runtime``), the lifecycle
and the public names of DESIGN.md §4.

Everything a call reads lives on ``self.runtime`` (``reach_core.runtime``); no module
below this one imports it, so the pipeline, the turn runner, streaming, the call
context, delegation and the executor can each be read and tested with a ``Runtime``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Collection, Coroutine, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import builtin
from .config import Config, load_config
from .connectors import Connector
from .errors import ConfigError, ConnectorError, PluginError
from .hooks import HookCaller, call_by_name
from .pins import PinStore
from .pipeline import invoke as _invoke
from .plugins import PluginInfo, PluginNames, build_instances, load_plugins, new_manager
from .policy import Policy
from .redact import Redactor
from .result import ToolResult
from .runtime import Provider, Runtime
from .streaming import invoke_stream as _invoke_stream
from .tool import Tool

if TYPE_CHECKING:
    from .logs import PluginLogger

__all__ = ["Provider", "Reach"]

USER_PLUGIN = "user"


class Reach:
    """Tools for an agent, run through one checked, bounded, audited pipeline.

    ``Reach(config=None, *, plugins="auto", disable=())``: ``config`` is a path, a
    dict or ``None`` (see ``reach_core.config``); ``plugins="auto"`` loads the
    installed plugins (entry-point group ``reach``), or pass a list of plugin
    modules/objects (``"auto"`` may appear in it); ``disable`` blocks plugins by
    name before import.
    """

    def __init__(
        self,
        config: str | os.PathLike[str] | dict[str, Any] | Config | None = None,
        *,
        plugins: Any = "auto",
        disable: Iterable[str] = (),
        strict: bool | None = None,
    ) -> None:
        self.config = cfg = load_config(config)
        self.strict = cfg.reach.strict if strict is None else strict
        self.data_dir: Path = Path(cfg.reach.data_dir)
        pm = new_manager()
        blocked = set(disable) | set(cfg.plugins.disable)
        # the built-ins first, by name (a name in `disable` leaves one out), then the installed plugins
        builtins = [(n, f) for n, f in (*builtin.BEFORE, *builtin.AFTER) if n not in blocked]
        for name, factory in builtins:
            pm.register(factory(), name=name)
        self.plugin_info: list[PluginInfo] = load_plugins(
            pm, plugins, disable=blocked - builtin.BUILTIN_NAMES, allow=cfg.plugins.load, strict=self.strict,
        )
        #: every name config may use for a plugin (entry-point and distribution names)
        self.plugin_names = PluginNames((p.name, p.distribution) for p in self.plugin_info)
        #: everything the hot path reads (tools, policies, hooks, guards): see ``reach_core.runtime``
        self.runtime = Runtime(cfg, pm, facade=self, data_dir=self.data_dir, log_calls=cfg.reach.log_calls)
        self._setup([n for n, _ in builtins])
        if type(self).invoke is Reach.invoke:  # (a subclass that overrides invoke keeps its own)
            # `invoke` below, bound to the runtime in C: no Python frame between a caller and the pipeline
            self.invoke = partial(_invoke, self.runtime)  # type: ignore[method-assign]

    # ------------------------------------------------------------ set-up
    def _loaded(self) -> list[PluginInfo]:
        return [p for p in self.plugin_info if p.status == "loaded"]

    def _fail_plugin(self, info: PluginInfo, exc: BaseException) -> None:
        if self.strict or isinstance(exc, ConfigError):
            raise exc
        info.status, info.reason = "failed", f"{type(exc).__name__}: {exc}"
        self.runtime.pm.unregister(name=info.name)

    def _setup(self, builtins: list[str]) -> None:
        from .config_names import check_plugin_names, check_strategies
        from .config_problems import raise_problems
        from .guard import Guards

        cfg, rt = self.config, self.runtime
        raise_problems(check_plugin_names(cfg, self.plugin_names))  # before [plugins.NAME] is read
        disabled_hooks: dict[str, set[str]] = {}
        from .configfile import secret_values, settings_secrets

        # the secrets config holds (env values, secret-named keys, URL passwords): masked everywhere
        values = secret_values(cfg.model_dump(), rt.redactor.is_secret_key)
        for info in self._loaded():
            values |= secret_values(cfg.plugins.plugin_table(info.name), rt.redactor.is_secret_key)
        rt.redactor.add(values=values)
        for info in self._loaded():
            table = cfg.plugins.plugin_table(info.name)
            disabled_hooks[info.name] = set(table.pop("hooks_disabled", []) or [])
            rt.settings[info.name] = self._validate_settings(info, table)
            # secrets a settings model declares by its keys (reach-mcp's and reach-serve's `tokens`)
            rt.redactor.add(values=settings_secrets(rt.settings[info.name]))
        build_instances(rt.pm, self.plugin_info, rt.settings, self, self._fail_plugin)  # per-Reach plugin objects
        before = [n for n, _ in builtin.BEFORE if n in builtins]
        for name in before:
            self._setup_plugin(name, set())
        for info in list(self._loaded()):
            try:
                self._setup_plugin(info.name, disabled_hooks[info.name])
            except (ConnectorError, PluginError, TypeError, ValueError) as exc:
                self._fail_plugin(info, exc)
        raise_problems(check_strategies(cfg, rt.providers, self.plugin_names))
        for name in builtins:
            if name not in before:
                self._setup_plugin(name, set())
        rt.resolve_conflicts()
        rt.hooks = HookCaller(rt.pm, order=cfg.hooks, disabled=disabled_hooks)
        rt.guards = Guards(rt)

    def _validate_settings(self, info: PluginInfo, table: dict[str, Any]) -> Any:
        impls = [i for i in self.runtime.pm.hook.reach_plugin_settings.get_hookimpls() if i.plugin_name == info.name]
        if not impls:
            return None
        model = impls[0].function()
        if model is None:
            return None
        from .config import validate_settings
        from .config_problems import raise_problems

        settings, problems = validate_settings(model, table, info.name)
        raise_problems(problems)
        return settings

    def _setup_plugin(self, name: str, disabled: set[str]) -> None:
        """Run one plugin's registration hooks (rule ``setup``, once per plugin)."""
        rt = self.runtime
        hook = rt.pm.hook
        for impl in hook.reach_register_tools.get_hookimpls():
            if impl.plugin_name != name or "reach_register_tools" in disabled:
                continue
            settings = rt.settings.get(name)
            kwargs = {"register": lambda obj, _n=name, _s=settings: rt.add(obj, plugin=_n, settings=_s),
                      "settings": settings, "reach": self}
            call_by_name(impl, kwargs)
        for kind in ("selector", "adapter", "confirmer", "parser", "runner"):
            for impl in getattr(hook, f"reach_register_{kind}s").get_hookimpls():
                if impl.plugin_name == name:
                    impl.function(register=lambda pname, obj, _k=kind: rt.register_provider(_k, pname, name, obj))

    # ------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Run ``reach_startup`` hooks and guard-rail recovery (called lazily by the first invoke)."""
        await self.runtime.start()

    async def aclose(self) -> None:
        """Run ``reach_shutdown`` hooks and close the state store."""
        await self.runtime.aclose()

    async def __aenter__(self) -> Reach:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def started(self) -> bool:
        """Has ``start`` run (and ``aclose`` not since)?"""
        return self.runtime.started

    @property
    def store(self) -> Any:
        """The state store (SQLite WAL in ``data_dir`` by default), opened on first use."""
        return self.runtime.store

    @property
    def redactor(self) -> Redactor:
        """Masks secrets in the core's log events; plugins add rules (reach-audit shares it)."""
        return self.runtime.redactor

    def logger(self, plugin: str) -> PluginLogger:
        """The logger a plugin writes through: stdlib ``reach.<plugin>``, every record masked by
        this Reach's redactor (its configured secrets, in any spelling; see ``reach_core.logs.plugin_logger``)."""
        from .logs import plugin_logger

        return plugin_logger(plugin, self.runtime.redactor)

    # ------------------------------------------------------------ registry
    def register(self, obj: Connector, *, provider: str = USER_PLUGIN) -> Connector:
        """Register a connector (instance or ``@connector`` function); returns it.

        Raises ``ConnectorError`` for a duplicate or illegal name or an invalid schema.
        """
        self.runtime.register(obj, provider=provider)
        return obj

    def block_tool(self, name: str, reason: str | None) -> None:
        """Block (``reason``) or unblock (``None``) a tool at run time, e.g. when a remote
        server changes a pinned definition. Blocked tools are neither offered nor run."""
        self.runtime.block_tool(name, reason)

    def refresh(self) -> None:
        """Forget the per-agent decisions cached for the current tools (call it after
        changing something a policy reads, e.g. a tool's risk or tags)."""
        self.runtime.invalidate()

    @property
    def conflicts(self) -> dict[str, list[str]]:
        """Tool names several plugins provide, unavailable until ``[connectors.NAME] provider``."""
        return self.runtime.conflicts

    @property
    def pins(self) -> PinStore:
        """The pin file (``[reach] pins``, default ``<data_dir>/pins.json``)."""
        return self.runtime.pins

    def pin_tools(self, names: Sequence[str] | None = None) -> dict[str, str]:
        """Pin the current definitions (all tools, or ``names``) and unblock them."""
        rt = self.runtime
        tools = [t for n, cands in rt.candidates.items() for t in cands
                 if (names is None or n in names) and n in rt.tools]
        pins = rt.pins.pin(tools)
        rt.resolve_conflicts()
        return pins

    def get(self, name: str) -> Connector:
        """The connector registered as ``name`` (KeyError if none)."""
        return self.runtime.get(name)

    def tool(self, name: str) -> Tool:
        return self.runtime.tools[name]

    def connectors(self) -> list[Connector]:
        return [t.connector for t in self.runtime.tools.values()]

    def all_tools(self) -> list[Tool]:
        return self.runtime.all_tools()

    def plugin_settings(self, plugin: str) -> Any:
        return self.runtime.settings.get(plugin)

    # ------------------------------------------------------------ policy and providers
    def policy(self, agent: str | None = None) -> Policy:
        """The compiled policy of ``agent`` (``allows(tool)``, ``needs_confirmation(tool)``,
        ``approval_mode(tool)``); agents not named in config get ``default``'s."""
        return self.runtime.policy(agent)

    def needs_confirmation(self, name: str, agent: str | None = None) -> bool:
        """Would a call of tool ``name`` by ``agent`` wait for a person's approval?"""
        return self.runtime.policy(agent).needs_confirmation(self.runtime.tools[name])

    def allowed_tools(self, agent: str | None = None) -> list[Tool]:
        """The tools ``agent``'s policy allows (unranked)."""
        return self.runtime.allowed_tools(agent)

    def providers(self, kind: str) -> dict[str, Provider]:
        return dict(self.runtime.providers.get(kind, {}))

    def provider(self, kind: str, name: str | None = None) -> Any:
        """The provider of ``kind`` named by ``name`` or ``[strategies]``; the only one
        installed when unnamed; ``None`` when there is none."""
        return self.runtime.provider(kind, name)

    def parse_tagged(self, text: str) -> tuple[list[Any], list[str]]:
        parser = self.provider("parser") or self.runtime.providers.get("parser", {}).get("tagged")
        if parser is None:
            raise ConfigError("no parser is installed for tool calls written in text: enable the built-in "
                              "`reach.tagged` plugin or install a parser plugin")
        return (parser.obj if isinstance(parser, Provider) else parser).parse(text)  # type: ignore[no-any-return]

    async def notify(self, hook: str, **kwargs: Any) -> None:
        """Call an observer hook; an observer's failure is logged, never raised."""
        await self.runtime.notify(hook, **kwargs)

    # ------------------------------------------------------------ tools for the model
    def tools(
        self,
        *,
        agent: str | None = None,
        query: str | None = None,
        limit: int | None = None,
        strict: bool = False,
        names: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """OpenAI ``tools`` entries this agent may use; ranked by the selector when
        ``query`` is given and a selector is installed; pinned tools always included.
        A connector with ``declaration_for(tool, policy, strict=)`` writes its own entry
        per agent (``delegate`` lists the agent's delegates)."""
        chosen = self.select(agent=agent, query=query, limit=limit, names=names)
        out = []
        for t in chosen:
            custom = getattr(t.connector, "declaration_for", None)
            out.append(t.declaration(strict=strict) if custom is None
                       else custom(t, self.runtime.policy(agent), strict=strict))
        return out

    def select(self, *, agent: str | None = None, query: str | None = None, limit: int | None = None,
               names: Sequence[str] | None = None) -> list[Tool]:
        """The tools ``agent`` may use, ranked by the selector for ``query``; pinned ones first."""
        return self.runtime.select(agent=agent, query=query, limit=limit, names=names)

    # ------------------------------------------------------------ invoking
    def invoke(
        self,
        call: Any,
        arguments: Any = None,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, ToolResult]:
        """Run one tool call through the pipeline; never raises unless ``raise_errors``.

        ``call`` is a :class:`ToolCall`, an OpenAI SDK tool call, a dict or a tool name
        with ``arguments``. Keywords: ``agent``, ``run_id``, ``idempotency_key``,
        ``query``, ``parent_run_id``, ``raise_errors``, ``allowed`` (tool names this call
        may use), ``deadline`` (event-loop time). See ``reach_core.pipeline.invoke``.
        Returns the pipeline's coroutine itself (no wrapper coroutine per call); each
        instance binds this as ``functools.partial(pipeline.invoke, self.runtime)``.
        """
        return _invoke(self.runtime, call, arguments, **kwargs)

    def invoke_stream(self, call: Any, arguments: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        """Run one call like ``invoke`` and yield its progress and partial items as they
        happen (``StreamEvent`` dicts), then the final ``ToolResult``.

        Takes ``invoke``'s keyword arguments. Stopping early (``break``, ``aclose()``)
        cancels the call and closes the tool's stream. See ``reach_core.streaming``.
        """
        return _invoke_stream(self.runtime, call, arguments, **kwargs)

    async def invoke_many(
        self,
        calls: Sequence[Any],
        *,
        agent: str | None = None,
        run_id: str | None = None,
        query: str | None = None,
        parent_run_id: str | None = None,
        concurrency: int | None = None,
        allowed: Collection[str] | None = None,
        deadline: float | None = None,
    ) -> list[ToolResult]:
        """Run one model turn's calls concurrently (limit per turn, default 5), results in order."""
        return await self.runtime.invoke_many(calls, agent=agent, run_id=run_id, query=query,
                                              parent_run_id=parent_run_id, concurrency=concurrency,
                                              allowed=allowed, deadline=deadline)

    async def run(self, messages_or_text: Any, *, durable: bool | None = None, **kwargs: Any) -> Any:
        """The agent loop: model ▸ tools ▸ model … (see ``reach_core.loop``).

        ``durable=True`` (or ``[strategies] runner``) hands the run to a runner plugin
        (reach-dbos: a run that survives a crash); ``durable=False`` forces the in-process loop.
        """
        from .loop import run_agent

        runner = None
        if durable is not False and (durable or self.config.strategies.runner):
            runner = self.provider("runner")
            if runner is None:
                raise ConfigError("durable=True needs a runner plugin: pip install reach-dbos "
                                  "(or call reach.run without durable=True)")
        if runner is not None:
            return await runner.run(self, messages_or_text, **kwargs)
        return await run_agent(self, messages_or_text, **kwargs)

    def run_sync(self, messages_or_text: Any, **kwargs: Any) -> Any:
        """``run`` for scripts without an event loop."""
        return asyncio.run(self.run(messages_or_text, **kwargs))

    def hook_order(self, hook: str) -> list[str]:
        return self.runtime.hooks.order(hook)

    def __repr__(self) -> str:
        return f"<Reach tools={len(self.runtime.tools)} plugins={len(self._loaded())}>"
