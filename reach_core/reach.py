"""``Reach``: the registry, the policy and the pipeline behind one object."""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import AsyncIterator, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .calls import TaggedParser
from .config import Config, load_config
from .configfile import mask_secrets
from .connectors import Connector
from .context import CallContext
from .errors import ConfigError, ConnectorError, PluginError
from .hookcall import HookCaller
from .pins import PinStore
from .pipeline import invoke as _invoke
from .plugins import PluginInfo, PluginNames, build_instances, load_plugins, new_manager
from .policy import Policy
from .redact import Redactor
from .result import ToolResult
from .streaming import invoke_stream as _invoke_stream
from .streaming import prepare_connector
from .tool import Tool

__all__ = ["Reach"]

USER_PLUGIN = "user"


@dataclass
class Provider:
    """A named strategy provider (selector, adapter, confirmer, parser)."""

    kind: str
    name: str
    plugin: str
    obj: Any


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
        self.config = load_config(config)
        cfg = self.config
        self.strict = cfg.reach.strict if strict is None else strict
        self.data_dir: Path = Path(cfg.reach.data_dir)
        self._pm = new_manager()
        self.plugin_info: list[PluginInfo] = load_plugins(
            self._pm, plugins, disable=set(disable) | set(cfg.plugins.disable),
            allow=cfg.plugins.load, strict=self.strict,
        )
        #: every name config may use for a plugin (entry-point and distribution names)
        self.plugin_names = PluginNames((p.name, p.distribution) for p in self.plugin_info)
        self._settings: dict[str, Any] = {}
        self._tools: dict[str, Tool] = {}
        self._candidates: dict[str, list[Tool]] = {}
        self.conflicts: dict[str, list[str]] = {}
        self._providers: dict[str, dict[str, Provider]] = {}
        self._policies: dict[str | None, Policy] = {}
        self._routes: dict[str | None, dict[str, tuple[int, Any]]] = {}  # pipeline flags, guard plan per agent and tool
        self._allowed: dict[str | None, list[Tool]] = {}
        self._allowed_name_sets: dict[str | None, frozenset[str]] = {}
        self._started = False
        self._start_lock: asyncio.Lock | None = None
        self._store: Any = None
        self._guards: Any = None
        self._pins: PinStore | None = None
        self._delegation: Any = None
        self._logger: Any = None
        # Masks secrets in the core's log events; plugins add rules (reach-audit shares it).
        self.redactor = Redactor()
        self._log_calls = cfg.reach.log_calls
        self._setup()

    # ------------------------------------------------------------ set-up
    def _loaded(self) -> list[PluginInfo]:
        return [p for p in self.plugin_info if p.status == "loaded"]

    def _fail_plugin(self, info: PluginInfo, exc: BaseException) -> None:
        if self.strict or isinstance(exc, ConfigError):
            raise exc
        info.status, info.reason = "failed", f"{type(exc).__name__}: {exc}"
        self._pm.unregister(name=info.name)

    def _setup(self) -> None:
        from .config_names import check_plugin_names, check_strategies
        from .config_problems import raise_problems

        cfg = self.config
        raise_problems(check_plugin_names(cfg, self.plugin_names))  # before [plugins.NAME] is read
        disabled_hooks: dict[str, set[str]] = {}
        for info in self._loaded():
            table = cfg.plugins.plugin_table(info.name)
            disabled_hooks[info.name] = set(table.pop("hooks_disabled", []) or [])
            self._settings[info.name] = self._validate_settings(info, table)
        build_instances(self._pm, self.plugin_info, self._settings, self, self._fail_plugin)  # per-Reach objects
        self._register_provider("parser", "tagged", "reach-core", TaggedParser())
        for info in list(self._loaded()):
            try:
                self._setup_plugin(info, disabled_hooks[info.name])
            except (ConnectorError, PluginError, TypeError, ValueError) as exc:
                self._fail_plugin(info, exc)
        raise_problems(check_strategies(cfg, self._providers, self.plugin_names))
        from .delegate import CORE, Delegation

        self._delegation = Delegation.from_config(self)
        if self._delegation is not None:  # only agents that name delegates are offered `delegate`
            self._add(self._delegation.connector, plugin=CORE)
            self._pm.register(self._delegation.hooks, name="reach-core.delegation")
        self._resolve_conflicts()
        self._hooks = HookCaller(self._pm, order=cfg.hooks, disabled=disabled_hooks)
        from .guard import Guards

        self._guards = Guards(self)

    def _validate_settings(self, info: PluginInfo, table: dict[str, Any]) -> Any:
        impls = [i for i in self._pm.hook.reach_plugin_settings.get_hookimpls() if i.plugin_name == info.name]
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

    def _setup_plugin(self, info: PluginInfo, disabled: set[str]) -> None:
        name = info.name
        hook = self._pm.hook
        for impl in hook.reach_register_tools.get_hookimpls():
            if impl.plugin_name != name or "reach_register_tools" in disabled:
                continue
            settings = self._settings.get(name)
            kwargs = {"register": lambda obj, _n=name, _s=settings: self._add(obj, plugin=_n, settings=_s),
                      "settings": settings, "reach": self}
            impl.function(**{a: kwargs[a] for a in impl.argnames})
        for kind in ("selector", "adapter", "confirmer", "parser", "runner"):
            caller = getattr(hook, f"reach_register_{kind}s")
            for impl in caller.get_hookimpls():
                if impl.plugin_name != name:
                    continue
                impl.function(register=lambda pname, obj, _k=kind, _n=name: self._register_provider(_k, pname, _n, obj))

    def _register_provider(self, kind: str, name: str, plugin: str, obj: Any) -> None:
        bucket = self._providers.setdefault(kind, {})
        if name in bucket:
            raise PluginError(f"two {kind}s are named {name!r} (plugins {bucket[name].plugin} and {plugin})")
        bucket[name] = Provider(kind, name, plugin, obj)

    def _add(self, obj: Connector, *, plugin: str, settings: Any = None) -> Tool:
        obj = prepare_connector(obj)  # a streaming connector gets an aggregating execute
        name = getattr(obj, "name", None)
        ccfg = self.config.connectors.get(name) if isinstance(name, str) else None
        overrides = ccfg.overrides() if ccfg else {}
        if "timeout" not in overrides and self.config.reach.default_timeout:
            overrides["timeout"] = self.config.reach.default_timeout
        tool = Tool.build(obj, plugin=plugin, overrides=overrides, settings=settings)
        if not tool.description and not self.config.reach.allow_undocumented:
            raise ConnectorError(
                f"the tool {tool.name!r} has no description, and a model cannot use a tool it cannot read "
                "about: give it a docstring (a @connector function) or a `description` (a Connector class), "
                "or set [reach] allow_undocumented = true")
        same = [t for t in self._candidates.get(tool.name, []) if t.plugin == plugin]
        if same:
            raise ConnectorError(f"plugin {plugin!r} registers the tool {tool.name!r} twice")
        self._candidates.setdefault(tool.name, []).append(tool)
        return tool

    def _resolve_conflicts(self) -> None:
        self._tools.clear()
        self.conflicts.clear()
        for name, tools in self._candidates.items():
            ccfg = self.config.connectors.get(name)
            if ccfg is not None and not ccfg.enabled:
                continue
            if ccfg is not None and ccfg.provider:
                chosen = [t for t in tools if t.plugin == ccfg.provider]
                if not chosen:
                    raise ConfigError(
                        f"[connectors.{name}] provider = {ccfg.provider!r}, but that plugin does not provide "
                        f"{name!r} (providers: {', '.join(t.plugin for t in tools)})"
                    )
                self._tools[name] = chosen[0]
            elif len(tools) == 1:
                self._tools[name] = tools[0]
            else:
                self.conflicts[name] = [t.plugin for t in tools]
                self._log.warning(
                    "reach.tool_conflict", tool=name, plugins=self.conflicts[name],
                    fix=f'set [connectors.{name}] provider = "<plugin>"',
                )
        pins = self.pins
        for tool in self._tools.values():
            tool.blocked = pins.check(tool)
            if tool.blocked:
                self._log.warning("reach.tool_pin_mismatch", tool=tool.name, reason=tool.blocked)
        self._invalidate()

    @property
    def pins(self) -> PinStore:
        """The pin file (``[reach] pins``, default ``<data_dir>/pins.json``)."""
        if self._pins is None:
            self._pins = PinStore(self.config.reach.pins or self.data_dir / "pins.json")
        return self._pins

    def pin_tools(self, names: Sequence[str] | None = None) -> dict[str, str]:
        """Pin the current definitions (all tools, or ``names``) and unblock them."""
        tools = [t for n, cands in self._candidates.items() for t in cands
                 if (names is None or n in names) and n in self._tools]
        pins = self.pins.pin(tools)
        self._resolve_conflicts()
        return pins

    @property
    def _log(self) -> Any:
        """reach's structlog logger, bound once (structlog's lazy proxy would re-resolve its
        config on every call) and created on first use (importing structlog costs start-up time)."""
        if self._logger is None:
            from .logs import get_logger
            from .redact import RedactingLogger

            self._logger = RedactingLogger(get_logger(), self.redactor)
        return self._logger

    async def start(self) -> None:
        """Run ``reach_startup`` hooks and guard-rail recovery (called lazily by the first invoke)."""
        if self._started:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._started:
                return
            if self._guards is not None:
                await self._guards.startup()
            for impl in self._pm.hook.reach_startup.get_hookimpls():
                res = impl.function(reach=self)
                if inspect.isawaitable(res):
                    await res
            self._warn_unknown_tools()
            self._started = True

    def _warn_unknown_tools(self) -> None:
        """Log tool names in config that no tool has (a misspelt ``deny`` restricts nothing)."""
        from .config_names import unknown_tool_names

        for problem in unknown_tool_names(self.config, set(self._candidates) | set(self._tools)):
            self._log.warning("reach.config_unknown_tool", problem=str(problem))

    async def aclose(self) -> None:
        """Run ``reach_shutdown`` hooks and close the state store."""
        for impl in self._pm.hook.reach_shutdown.get_hookimpls():
            res = impl.function(reach=self)
            if inspect.isawaitable(res):
                await res
        if self._guards is not None:
            await self._guards.aclose()
        if self._store is not None:
            await self._store.aclose()
            self._store = None
        self._started = False

    async def __aenter__(self) -> Reach:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------ registry
    def register(self, obj: Connector, *, provider: str = USER_PLUGIN) -> Connector:
        """Register a connector (instance or ``@connector`` function); returns it.

        Raises ``ConnectorError`` for a duplicate or illegal name or an invalid schema.
        """
        name = getattr(obj, "name", None)
        if isinstance(name, str) and (name in self._tools or name in self._candidates):
            raise ConnectorError(f"a tool named {name!r} is already registered (by {self._owner(name)})")
        tool = self._add(obj, plugin=provider)
        ccfg = self.config.connectors.get(tool.name)
        if ccfg is None or ccfg.enabled:  # incremental: registering many tools stays linear
            self._tools[tool.name] = tool
            tool.blocked = self.pins.check(tool)
        self._invalidate()
        return obj

    def block_tool(self, name: str, reason: str | None) -> None:
        """Block (``reason``) or unblock (``None``) a tool at run time, e.g. when a remote
        server changes a pinned definition. Blocked tools are neither offered nor run."""
        self._tools[name].blocked = reason
        self._invalidate()

    def tool_changed(self, name: str) -> None:
        """Say that tool ``name``'s definition (risk, idempotence) changed at run time, e.g. a
        remote server's new annotations: decisions cached per tool are made again."""
        self._invalidate()

    def _invalidate(self) -> None:
        """Forget per-agent caches after the tool set or a tool's state changed."""
        self._policies.clear()
        self._routes.clear()
        self._allowed.clear()
        self._allowed_name_sets.clear()

    def _owner(self, name: str) -> str:
        return ", ".join(t.plugin for t in self._candidates.get(name, [])) or "?"

    def get(self, name: str) -> Connector:
        """The connector registered as ``name`` (KeyError if none)."""
        return self._tools[name].connector

    def tool(self, name: str) -> Tool:
        return self._tools[name]

    def connectors(self) -> list[Connector]:
        return [t.connector for t in self._tools.values()]

    def all_tools(self) -> list[Tool]:
        return list(self._tools.values())

    def plugin_settings(self, plugin: str) -> Any:
        return self._settings.get(plugin)

    # ------------------------------------------------------------ policy
    def _policy(self, agent: str | None) -> Policy:
        pol = self._policies.get(agent)
        if pol is None:
            name, acfg = self.config.agent(agent)
            if self._delegation is None:
                pol = self._policies[agent] = Policy(name, acfg)
            else:
                from .delegate import DELEGATE, DelegatingPolicy

                pol = self._policies[agent] = DelegatingPolicy(name, acfg, self._core_tool(DELEGATE))
        return pol

    def policy(self, agent: str | None = None) -> Policy:
        """The compiled policy of ``agent`` (``allows(tool)``, ``needs_confirmation(tool)``,
        ``approval_mode(tool)``); agents not named in config get ``default``'s."""
        return self._policy(agent)

    def needs_confirmation(self, name: str, agent: str | None = None) -> bool:
        """Would a call of tool ``name`` by ``agent`` wait for a person's approval?"""
        return self._policy(agent).needs_confirmation(self._tools[name])

    def _allowed_tools(self, agent: str | None) -> list[Tool]:
        allowed = self._allowed.get(agent)
        if allowed is None:
            pol = self._policy(agent)
            allowed = self._allowed[agent] = [t for t in self._tools.values() if pol.allows(t)]
        return allowed

    # ------------------------------------------------------------ providers
    def providers(self, kind: str) -> dict[str, Provider]:
        return dict(self._providers.get(kind, {}))

    def provider(self, kind: str, name: str | None = None) -> Any:
        """The provider of ``kind`` named by ``name`` or ``[strategies]``; the only one
        installed when unnamed; ``None`` when there is none."""
        bucket = self._providers.get(kind, {})
        name = name or getattr(self.config.strategies, kind, None)
        if name:
            if name not in bucket:
                raise ConfigError(
                    f"[strategies] {kind} = {name!r}, but no installed plugin provides it "
                    f"(available: {', '.join(sorted(bucket)) or 'none'})"
                )
            return bucket[name].obj
        if not bucket:
            return None
        if kind == "parser":
            return bucket["tagged"].obj if "tagged" in bucket and len(bucket) == 1 else None
        if len(bucket) == 1:
            return next(iter(bucket.values())).obj
        raise ConfigError(f"several {kind}s are installed ({', '.join(sorted(bucket))}); choose one in [strategies] {kind}")

    def parse_tagged(self, text: str) -> tuple[list[Any], list[str]]:
        parser = self.provider("parser") or self._providers["parser"]["tagged"].obj
        return parser.parse(text)  # type: ignore[no-any-return]

    async def notify(self, hook: str, **kwargs: Any) -> None:
        """Call an observer hook; an observer's failure is logged, never raised."""
        for impl in self._hooks.impls.get(hook, ()):
            try:
                await self._hooks._call(impl, kwargs)
            except Exception as exc:  # noqa: BLE001
                self._log.error("reach.observer_error", hook=hook, plugin=impl.plugin, error=mask_secrets(repr(exc)))

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
        ``query`` is given and a selector is installed; pinned tools always included."""
        chosen = self.select(agent=agent, query=query, limit=limit, names=names)
        if self._delegation is not None:
            return [self._delegation.declaration(t, self._policy(agent), strict=strict)
                    if t.connector is self._delegation.connector else t.declaration(strict=strict) for t in chosen]
        return [t.declaration(strict=strict) for t in chosen]

    def _core_tool(self, name: str) -> Tool | None:
        tool = self._tools.get(name)
        return tool if tool is not None and tool.plugin == "reach-core" else None

    def select(self, *, agent: str | None = None, query: str | None = None, limit: int | None = None,
               names: Sequence[str] | None = None) -> list[Tool]:
        """The tools ``agent`` may use, ranked by the selector for ``query``; pinned ones first."""
        allowed = self._allowed_tools(agent)
        if names is not None:
            wanted = set(names)
            allowed = [t for t in allowed if t.name in wanted]
            allowed_names: Collection[str] = wanted & self._allowed_names(agent)
        else:
            allowed_names = self._allowed_names(agent)
        policy = self._policy(agent)
        pinned_names = policy.config.pinned
        if self._delegation is not None and policy.config.delegates:
            pinned_names = [*pinned_names, "delegate"]  # a selector must not hide the way to other agents
        if query:
            selector = self.provider("selector")
            if selector is not None:
                ctx = CallContext(self, None, agent=agent or "default", run_id=None, call_id="", trace_id="", query=query)
                ranked = selector.select(query, allowed, ctx, limit or len(allowed))
                tools = self._tools
                chosen = [tools[n] for n in ranked if n in allowed_names]
                pinned = [tools[n] for n in pinned_names if n in allowed_names and tools[n] not in chosen]
                out = pinned + chosen
                return out[: max(limit or len(out), len(pinned))]
        if query:  # no selector installed: a plain keyword ranking, so a limit never drops a match
            from .keywords import rank_by_keywords

            allowed = rank_by_keywords(query, allowed)
        if limit is not None:
            pinned = [t for t in allowed if t.name in pinned_names]
            rest = [t for t in allowed if t.name not in pinned_names]
            return (pinned + rest)[: max(limit, len(pinned))]
        return allowed

    def _allowed_names(self, agent: str | None) -> frozenset[str]:
        names = self._allowed_name_sets.get(agent)
        if names is None:
            names = self._allowed_name_sets[agent] = frozenset(t.name for t in self._allowed_tools(agent))
        return names

    # ------------------------------------------------------------ invoking
    # The pipeline function itself, bound as a method: no wrapper coroutine per call.
    invoke = _invoke

    def invoke_stream(self, call: Any, arguments: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        """Run one call like ``invoke`` and yield its progress and partial items as they
        happen (``StreamEvent`` dicts), then the final ``ToolResult``.

        Takes ``invoke``'s keyword arguments. Stopping early (``break``, ``aclose()``)
        cancels the call and closes the tool's stream. See ``reach_core.streaming``.
        """
        return _invoke_stream(self, call, arguments, **kwargs)

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
        from .concurrency import run_turn

        return await run_turn(self, calls, agent=agent, run_id=run_id, query=query, parent_run_id=parent_run_id,
                              limit=concurrency or self.config.reach.concurrency, allowed=allowed,
                              deadline=deadline)

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

    # ------------------------------------------------------------ state
    @property
    def store(self) -> Any:
        """The state store (SQLite WAL in ``data_dir`` by default), opened on first use."""
        if self._store is None:
            from .stores import open_store

            self._store = open_store(getattr(getattr(self.config, "reach", None), "store", None), self.data_dir)
        return self._store

    def hook_order(self, hook: str) -> list[str]:
        return self._hooks.order(hook)

    def __repr__(self) -> str:
        return f"<Reach tools={len(self._tools)} plugins={len(self._loaded())}>"

