"""``Runtime``: everything the hot path reads, in one slotted object.

``Reach`` (the facade in ``reach.py``) builds one ``Runtime`` from its config and
plugins and hands it down; the pipeline, the turn runner, streaming, the call
context, delegation and the executor read only the ``Runtime``, never ``Reach``,
and no module below ``reach.py`` imports ``reach.py`` (``tests/test_layers.py``
keeps it so). A lower module can therefore be read, and tested, with a
``Runtime`` alone.

What lives here: the registry (tools, their candidates per name, conflicts, pins,
named providers), the config, the compiled policies and the per-(agent, tool)
route cache, the hook caller, the guard rails, the execution settings and the
lifecycle state (started, store). ``facade`` is the ``Reach`` this runtime
belongs to: plugins' hooks receive it as ``reach`` (and a call's ``ctx.reach``);
core modules only hand it on, never read its private state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .context import CallContext
from .errors import ConfigError, ConnectorError, PluginError
from .pins import PinStore
from .pipeline import invoke
from .policy import Policy
from .redact import Redactor

if TYPE_CHECKING:
    import pluggy

    from .config import Config
    from .connectors import Connector
    from .guard import Guards
    from .hooks import HookCaller
    from .result import ToolResult
    from .tool import Tool

__all__ = ["CORE", "Provider", "Runtime"]

#: the plugin name of the core's own tools and providers
CORE = "reach-core"


@dataclass(slots=True)
class Provider:
    """A named strategy provider (selector, adapter, confirmer, parser, runner)."""

    kind: str
    name: str
    plugin: str
    obj: Any


@dataclass(slots=True, eq=False, repr=False)
class Runtime:
    """The state one ``Reach`` runs calls with (see the module docstring)."""

    config: Config
    pm: pluggy.PluginManager
    #: the facade: handed to plugins' hooks as ``reach``; never read by core modules
    facade: Any = None
    #: masks secrets in the core's log events; plugins add rules (reach-audit shares it)
    redactor: Redactor = field(default_factory=Redactor)
    data_dir: Path = field(default_factory=lambda: Path(".reach"))
    # ---- execution settings
    log_calls: bool = False
    # ---- registry
    tools: dict[str, Tool] = field(default_factory=dict)
    candidates: dict[str, list[Tool]] = field(default_factory=dict)
    conflicts: dict[str, list[str]] = field(default_factory=dict)
    #: by folded name (``_folded``): the first candidate that is not imported, and the imported ones
    own_names: dict[str, Tool] = field(default_factory=dict)
    imported_names: dict[str, list[Tool]] = field(default_factory=dict)
    providers: dict[str, dict[str, Provider]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    #: model adapters built from their factories, once per name (their connection pools with them)
    adapters: dict[str, Any] = field(default_factory=dict)
    # ---- per-agent caches, cleared by invalidate()
    policies: dict[str | None, Policy] = field(default_factory=dict)
    #: pipeline flags and guard plan per agent and tool (see pipeline._route)
    routes: dict[str | None, dict[str, Any]] = field(default_factory=dict)
    allowed: dict[str | None, list[Tool]] = field(default_factory=dict)
    allowed_name_sets: dict[str | None, frozenset[str]] = field(default_factory=dict)
    # ---- parts built at set-up
    hooks: HookCaller = None  # type: ignore[assignment]  # set once the plugins are set up
    guards: Guards | None = None
    #: a policy factory ``(name, agent config, runtime) -> Policy`` (a built-in plugin may set it)
    policy_factory: Any = None
    # ---- lifecycle
    started: bool = False
    start_lock: asyncio.Lock | None = None
    store_: Any = None
    pins_: PinStore | None = None
    logger: Any = None

    # ------------------------------------------------------------ logging, pins, store
    @property
    def log(self) -> Any:
        """reach's structlog logger, bound once (structlog's lazy proxy would re-resolve its
        config on every call) and created on first use (importing structlog costs start-up time)."""
        if self.logger is None:
            from .logs import get_logger
            from .redact import RedactingLogger

            self.logger = RedactingLogger(get_logger(), self.redactor)
        return self.logger

    @property
    def pins(self) -> PinStore:
        """The pin file (``[reach] pins``, default ``<data_dir>/pins.json``)."""
        if self.pins_ is None:
            self.pins_ = PinStore(self.config.reach.pins or self.data_dir / "pins.json")
        return self.pins_

    @property
    def store(self) -> Any:
        """The state store (SQLite WAL in ``data_dir`` by default), opened on first use."""
        if self.store_ is None:
            from .stores import open_store

            self.store_ = open_store(self.config.reach.store, self.data_dir)
        return self.store_

    # ------------------------------------------------------------ registry
    def add(self, obj: Connector, *, plugin: str, settings: Any = None) -> Tool:
        """Build ``obj`` into a candidate ``Tool`` of ``plugin`` (not yet chosen: see
        ``resolve_conflicts``)."""
        from .streaming import prepare_connector
        from .tool import Tool

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
        same = [t for t in self.candidates.get(tool.name, []) if t.plugin == plugin]
        if same:
            raise ConnectorError(f"plugin {plugin!r} registers the tool {tool.name!r} twice")
        self.candidates.setdefault(tool.name, []).append(tool)
        if tool.connector.imported:
            self.imported_names.setdefault(_folded(tool.name), []).append(tool)
        else:
            self.own_names.setdefault(_folded(tool.name), tool)
        return tool

    def register(self, obj: Connector, *, provider: str) -> Tool:
        """Register one tool at run time (``Reach.register``): chosen at once, unless config
        disables it; duplicate names are refused, except that imported tools (``Connector.imported``)
        step aside for one that is not (see ``resolve_conflicts``)."""
        name = getattr(obj, "name", None)
        imported = bool(getattr(obj, "imported", False))
        if isinstance(name, str):
            held = self.candidates.get(name)
            if (held or name in self.tools) and (imported or not held or not all(t.connector.imported for t in held)):
                raise ConnectorError(f"a tool named {name!r} is already registered (by {self.owner(name)})")
            if imported and (own := self.own_names.get(_folded(name))) is not None:
                raise ConnectorError(f"the imported tool {name!r} steps aside for {own.name!r} (by {own.plugin}): "
                                     "a tool another plugin registered keeps its name")
        tool = self.add(obj, plugin=provider)
        ccfg = self.config.connectors.get(tool.name)
        if not imported:
            for other in self.imported_names.get(_folded(tool.name), ()):
                if self.tools.get(other.name) is other and self._provider(other.name) != other.plugin:
                    del self.tools[other.name]
                    self._stepped_aside(other, tool)
        if ccfg is None or ccfg.enabled:  # incremental: registering many tools stays linear
            self.tools[tool.name] = tool
            tool.blocked = self.pins.check(tool)
        self.invalidate()
        return tool

    def _provider(self, name: str) -> str | None:
        ccfg = self.config.connectors.get(name)
        return ccfg.provider if ccfg is not None else None

    def _stepped_aside(self, tool: Tool, kept: Tool) -> None:
        self.log.warning(
            "reach.imported_tool_skipped", tool=tool.name, plugin=tool.plugin, kept=kept.name, kept_plugin=kept.plugin,
            reason=f"the imported tool {tool.name!r} ({tool.plugin}) has the name of {kept.name!r} ({kept.plugin}), "
                   "which keeps it",
            fix=f'rename the imported operations (a prefix) or set [connectors.{tool.name}] provider = "{tool.plugin}"',
        )

    def owner(self, name: str) -> str:
        return ", ".join(t.plugin for t in self.candidates.get(name, [])) or "?"

    def resolve_conflicts(self) -> None:
        """Choose each name's tool (``[connectors.NAME] provider`` or the only candidate),
        then apply the pins."""
        self.tools.clear()
        self.conflicts.clear()
        # an imported tool (Connector.imported: its name comes from a document someone else serves)
        # never takes a name, or a look-alike of one, that a tool registered by its own plugin holds:
        # it steps aside, where the same name from two plugins would leave neither available
        own = self.own_names if self.imported_names else {}
        for name, tools in self.candidates.items():
            ccfg = self.config.connectors.get(name)
            if ccfg is not None and not ccfg.enabled:
                continue
            if own and not (ccfg is not None and ccfg.provider) and (kept := own.get(_folded(name))) is not None:
                aside = [t for t in tools if t.connector.imported]
                for t in aside:
                    self._stepped_aside(t, kept)
                if aside:
                    tools = [t for t in tools if not t.connector.imported]
                    if not tools:
                        continue
            if ccfg is not None and ccfg.provider:
                chosen = [t for t in tools if t.plugin == ccfg.provider]
                if not chosen:
                    raise ConfigError(
                        f"[connectors.{name}] provider = {ccfg.provider!r}, but that plugin does not provide "
                        f"{name!r} (providers: {', '.join(t.plugin for t in tools)})"
                    )
                self.tools[name] = chosen[0]
            elif len(tools) == 1:
                self.tools[name] = tools[0]
            else:
                self.conflicts[name] = [t.plugin for t in tools]
                self.log.warning(
                    "reach.tool_conflict", tool=name, plugins=self.conflicts[name],
                    fix=f'set [connectors.{name}] provider = "<plugin>"',
                )
        pins = self.pins
        for tool in self.tools.values():
            tool.blocked = pins.check(tool)
            if tool.blocked:
                self.log.warning("reach.tool_pin_mismatch", tool=tool.name, reason=tool.blocked)
        self.invalidate()

    def block_tool(self, name: str, reason: str | None) -> None:
        """Block (``reason``) or unblock (``None``) a tool; blocked tools are neither offered nor run."""
        self.tools[name].blocked = reason
        self.invalidate()

    def invalidate(self) -> None:
        """Forget the per-agent caches (policies, routes, allowed tools) after the tool set,
        a tool's state or a decision a policy depends on changed."""
        self.policies.clear()
        self.routes.clear()
        self.allowed.clear()
        self.allowed_name_sets.clear()
        if self.guards is not None:  # the guard rails' plans read the tier too (write, ledger, read cache)
            self.guards.forget_plans()

    def get(self, name: str) -> Connector:
        """The connector registered as ``name`` (KeyError if none)."""
        return self.tools[name].connector

    def all_tools(self) -> list[Tool]:
        return list(self.tools.values())

    def core_tool(self, name: str) -> Tool | None:
        """The core's own tool ``name`` (a built-in plugin's), if it is registered."""
        tool = self.tools.get(name)
        return tool if tool is not None and tool.plugin.startswith(CORE) else None

    # ------------------------------------------------------------ providers
    def register_provider(self, kind: str, name: str, plugin: str, obj: Any) -> None:
        bucket = self.providers.setdefault(kind, {})
        if name in bucket:
            raise PluginError(f"two {kind}s are named {name!r} (plugins {bucket[name].plugin} and {plugin})")
        bucket[name] = Provider(kind, name, plugin, obj)

    def provider(self, kind: str, name: str | None = None) -> Any:
        """The provider of ``kind`` named by ``name`` or ``[strategies]``; the only one
        installed when unnamed; ``None`` when there is none."""
        bucket = self.providers.get(kind, {})
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
        raise ConfigError(f"several {kind}s are installed ({', '.join(sorted(bucket))}); "
                          f"choose one in [strategies] {kind}")

    def has_confirmer(self) -> bool:
        return bool(self.providers.get("confirmer"))

    # ------------------------------------------------------------ policy
    def policy(self, agent: str | None) -> Policy:
        """The compiled policy of ``agent`` (cached until ``invalidate``)."""
        pol = self.policies.get(agent)
        if pol is None:
            name, acfg = self.config.agent(agent)
            if agent and name != agent:
                self._warn_unknown_agent(agent)
            factory = self.policy_factory
            pol = self.policies[agent] = Policy(name, acfg) if factory is None else factory(name, acfg, self)
        return pol

    def _warn_unknown_agent(self, agent: str) -> None:
        """Log an agent name that has no table but is close to one that has: ``agent="Support"``
        or ``"suport"`` runs under ``[agents.default]``, not the ``[agents.support]`` it was
        surely meant for, which may deny what default allows. (Once per name: policies are cached.)"""
        from .config_problems import suggest

        meant = suggest(agent, (a for a in self.config.agents if a != "default"))
        if meant is not None:
            self.log.warning("reach.config_unknown_agent", agent=agent, meant=meant,
                             problem=f"agent {agent!r} has no [agents.{agent}] table, so it runs under "
                                     f"[agents.default]; did you mean [agents.{meant}]?")

    def allowed_tools(self, agent: str | None) -> list[Tool]:
        allowed = self.allowed.get(agent)
        if allowed is None:
            pol = self.policy(agent)
            allowed = self.allowed[agent] = [t for t in self.tools.values() if pol.allows(t)]
        return allowed

    def allowed_names(self, agent: str | None) -> frozenset[str]:
        names = self.allowed_name_sets.get(agent)
        if names is None:
            names = self.allowed_name_sets[agent] = frozenset(t.name for t in self.allowed_tools(agent))
        return names

    # ------------------------------------------------------------ offering tools
    def select(self, *, agent: str | None = None, query: str | None = None, limit: int | None = None,
               names: Sequence[str] | None = None) -> list[Tool]:
        """The tools ``agent`` may use, ranked by the selector for ``query``; pinned ones first."""
        allowed = self.allowed_tools(agent)
        if names is not None:
            wanted = set(names)
            allowed = [t for t in allowed if t.name in wanted]
            allowed_names: Collection[str] = wanted & self.allowed_names(agent)
        else:
            allowed_names = self.allowed_names(agent)
        pinned_names = self.policy(agent).pinned
        if query:
            selector = self.provider("selector")
            if selector is not None:
                ctx = CallContext(self, None, agent=agent or "default", run_id=None, call_id="", trace_id="",
                                  query=query)
                ranked = selector.select(query, allowed, ctx, limit or len(allowed))
                tools = self.tools
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

    # ------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Guard-rail recovery and ``reach_startup`` hooks, once (the first invoke calls it)."""
        if self.started:
            return
        if self.start_lock is None:
            self.start_lock = asyncio.Lock()
        async with self.start_lock:
            if self.started:
                return
            if self.guards is not None:
                await self.guards.startup()
            await self.hooks.setup("reach_startup", reach=self.facade)
            self._warn_unknown_tools()
            self.started = True

    def _warn_unknown_tools(self) -> None:
        """Log tool names in config that no tool has (a misspelt ``deny`` restricts nothing)."""
        from .config_names import unknown_tool_names

        registered = [*self.tools.values(), *(t for ts in self.candidates.values() for t in ts)]
        tags = {tag for tool in registered for tag in tool.tags}
        for problem in unknown_tool_names(self.config, set(self.candidates) | set(self.tools), tags):
            self.log.warning("reach.config_unknown_tool", problem=str(problem))

    async def aclose(self) -> None:
        """``reach_shutdown`` hooks, then the guard rails and the store."""
        await self.hooks.setup("reach_shutdown", reach=self.facade)
        if self.guards is not None:
            await self.guards.aclose()
        if self.store_ is not None:
            await self.store_.aclose()
            self.store_ = None
        self.started = False

    # ------------------------------------------------------------ calls
    async def notify(self, hook: str, **kwargs: Any) -> None:
        """Call an observer hook; an observer's failure is logged, never raised."""
        await self.hooks.notify(hook, self, **kwargs)

    def invoke(self, call: Any, arguments: Any = None, **kwargs: Any) -> Any:
        """``pipeline.invoke(self, ...)``: the coroutine of one call."""
        return invoke(self, call, arguments, **kwargs)

    async def invoke_many(self, calls: Sequence[Any], *, agent: str | None = None, run_id: str | None = None,
                          query: str | None = None, parent_run_id: str | None = None,
                          concurrency: int | None = None, allowed: Collection[str] | None = None,
                          deadline: float | None = None) -> list[ToolResult]:
        from .concurrency import run_turn

        return await run_turn(self, calls, agent=agent, run_id=run_id, query=query, parent_run_id=parent_run_id,
                              limit=concurrency or self.config.reach.concurrency, allowed=allowed,
                              deadline=deadline)

    def __repr__(self) -> str:
        return f"<Runtime tools={len(self.tools)} started={self.started}>"


def _folded(name: str) -> str:
    """A tool name as a model might confuse it with another: case and ``-``/``_`` aside."""
    return name.lower().replace("-", "_")
