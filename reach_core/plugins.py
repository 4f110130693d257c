"""Finding, blocking and loading plugins. One ``PluginManager`` per ``Reach``.

Plugins are entry points in the group ``reach``; the entry-point name is the
distribution name and the plugin's name everywhere. A blocked plugin
(``[plugins] disable``, ``REACH_DISABLE_PLUGINS``, or not in the allow-list
``[plugins] load`` / ``REACH_PLUGINS``) is never imported: the check happens on
the entry point's name before ``ep.load()``. A plugin that fails to import is
recorded as ``failed`` and skipped, unless ``strict``.

Config may name a plugin by its entry-point name or its distribution name
(``Name:`` in its metadata, or that name normalised as pip does:
``reach-weather``). :class:`PluginNames` resolves either to the entry-point
name. A name in ``disable``/``load`` (or ``REACH_DISABLE_PLUGINS``/``REACH_PLUGINS``)
that no installed plugin has is a ``ConfigError`` raised before any plugin is
imported, with the closest installed name: a misspelt ``disable`` would
otherwise load the very plugin it was meant to block.

Entry points come from ``importlib_metadata`` (the backport, a dependency: one
behaviour on every Python, zips and custom finders included), and a plugin's
name and version from its metadata file's header only: ``reach plugins``
start-up time is a target (≤ 150 ms; ``reach --version`` imports none of this).
:func:`inventory` takes them from ``reach_core.entry_index``'s store while nothing
installed has changed (the store is invalidated by a fingerprint of what
``importlib_metadata`` reads); ``Reach`` reads them afresh.

:func:`inventory` is what ``reach plugins`` and the CLI's command discovery use:
the plugins found, blocked, imported and registered, without starting them
(no settings validated, no tools registered), so it imports neither pydantic
nor the rest of the core.
"""

from __future__ import annotations

import os
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from . import hookspecs
from .builtin import BUILTIN_NAMES
from .errors import PluginError

__all__ = ["Inventory", "PluginInfo", "PluginNames", "build_instances", "inventory", "load_plugins", "new_manager",
           "plugin_instance"]


@dataclass
class PluginInfo:
    """What ``reach plugins`` shows for one plugin."""

    name: str
    distribution: str | None = None
    version: str | None = None
    module: str | None = None
    status: str = "loaded"  # loaded | blocked | failed
    reason: str | None = None
    hooks: list[str] = field(default_factory=list)
    obj: Any = None
    #: the per-``Reach`` object ``reach_plugin_instance`` built (``None``: the plugin has none)
    instance: Any = None

    @property
    def aliases(self) -> list[str]:
        """Every name config may use for this plugin: the entry-point name, the distribution name."""
        return _aliases(self.name, self.distribution)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "entry_point": self.name, "distribution": self.distribution,
            "aliases": self.aliases, "version": self.version,
            "module": self.module, "status": self.status, "reason": self.reason, "hooks": self.hooks,
        }


def canonical_distribution(name: str) -> str:
    """A distribution name as pip compares them (PEP 503): ``Reach_Weather`` -> ``reach-weather``."""
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _aliases(name: str, distribution: str | None) -> list[str]:
    out = [name]
    if distribution:
        out += [distribution, canonical_distribution(distribution)]
    return list(dict.fromkeys(out))


class PluginNames:
    """Which plugin each name in config means: entry-point names first, then distribution names.

    Built from what was found; entry points not seen yet (``Reach(plugins=[...])``
    does not look at them) are read on the first name that is not known, so a
    config naming an installed plugin that was not loaded is still valid.
    """

    def __init__(self, found: Iterable[tuple[str, str | None]] = (), *, scanned: bool = False) -> None:
        self._found: dict[str, str | None] = {}
        self._alias: dict[str, str] = {}
        self._scanned = scanned
        self.add(found)

    def add(self, found: Iterable[tuple[str, str | None]]) -> None:
        for name, dist in found:
            if name not in self._found or (dist and not self._found[name]):
                self._found[name] = dist
        self._alias = {}
        for name in self._found:  # entry-point names win over another plugin's distribution name
            self._alias[name] = name
        for name, dist in self._found.items():
            for alias in _aliases(name, dist)[1:]:
                self._alias.setdefault(alias, name)

    def _scan(self) -> None:
        if not self._scanned:
            self._scanned = True
            self.add((ep.name, ep.distribution) for ep in _entry_points())

    def resolve(self, name: str) -> str | None:
        """The entry-point (or registered) name ``name`` means, or ``None`` if no plugin has it."""
        if name not in self._alias:
            self._scan()
        return self._alias.get(name)

    def all(self) -> list[str]:
        """Every accepted name (entry-point and distribution names)."""
        self._scan()
        return sorted(self._alias)

    def entry_names(self) -> list[str]:
        self._scan()
        return sorted(self._found)

    def canonical(self, names: Iterable[str], table: str, key: str | None, problems: list[Any]) -> list[str]:
        """``names`` as entry-point names; an unknown one adds a problem with the closest name."""
        out: list[str] = []
        for raw in names:
            name = raw.strip() if isinstance(raw, str) else raw
            found = self.resolve(name) if isinstance(name, str) else None
            if found is not None:
                out.append(found)
                continue
            from .config_problems import Problem, look_alike, named, suggest  # only for a problem: difflib is not free

            known = self.all()
            hint = suggest(look_alike(name), known) if isinstance(name, str) else None
            listing = "" if hint else f" (installed: {', '.join(self.entry_names()) or 'none'})"
            shown = named(name) if isinstance(name, str) else repr(name)
            problems.append(Problem(table, key, f"{shown} is not an installed plugin{listing}", hint))
        return out


def new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("reach")
    pm.add_hookspecs(hookspecs)
    return pm


def _env_list(var: str) -> list[str] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return [p.strip() for p in raw.split(",") if p.strip()]


def blocked_reason(name: str, *, disable: set[str], allow: list[str] | None) -> str | None:
    if name in disable:
        return "disabled by config or REACH_DISABLE_PLUGINS"
    if allow is not None and name not in allow:
        return "not in the allow-list ([plugins] load / REACH_PLUGINS)"
    return None


def _plugin_name(obj: Any) -> str:
    name = getattr(obj, "REACH_PLUGIN_NAME", None)
    if name:
        return str(name)
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    return getattr(obj, "name", None) or type(obj).__name__


def load_plugins(
    pm: pluggy.PluginManager,
    spec: Any,
    *,
    disable: set[str],
    allow: list[str] | None,
    strict: bool,
    cached: bool = False,
) -> list[PluginInfo]:
    """Register the plugins ``spec`` asks for ("auto" = entry points, or a list); ``cached``: entry
    points from ``reach_core.entry_index``'s store while nothing installed has changed."""
    infos: list[PluginInfo] = []
    items = ["auto"] if spec == "auto" else list(spec or [])
    explicit = [item if isinstance(item, tuple) else (_plugin_name(item), item) for item in items if item != "auto"]
    eps = _entry_points(cached=cached) if "auto" in items else None
    meta: dict[str, tuple[str | None, str | None]] = {}
    for ep in eps or ():
        meta.setdefault(ep.name, (ep.distribution, ep.version))
    names = PluginNames([(n, None) for n, _ in explicit] + [(n, m[0]) for n, m in meta.items()],
                        scanned=eps is not None)
    # every name is checked before any plugin is imported: a misspelt `disable` must not load the plugin
    problems: list[Any] = []
    disable, allow = checked_selection(names, disable, allow, problems)
    if problems:
        from .config_problems import raise_problems

        raise_problems(problems)
    explicit_iter = iter(explicit)
    for item in items:
        if item == "auto":
            infos.extend(_load_entry_points(pm, eps or [], meta, disable=disable, allow=allow, strict=strict))
            continue
        name, obj = next(explicit_iter)
        reason = blocked_reason(name, disable=disable, allow=None)
        if reason:
            infos.append(PluginInfo(name=name, status="blocked", reason=reason))
            continue
        _register(pm, name, obj, infos, strict=strict)
    return infos


def checked_selection(names: PluginNames, disable: Iterable[str], allow: list[str] | None,
                      problems: list[Any]) -> tuple[set[str], list[str] | None]:
    """The blocked and allowed entry-point names from config (``disable``, ``load``) and the
    environment (``REACH_DISABLE_PLUGINS``, ``REACH_PLUGINS``); unknown names add problems."""
    env_allow = _env_list("REACH_PLUGINS")
    if env_allow is not None:
        env_allow = names.canonical(env_allow, "REACH_PLUGINS", None, problems)
    env_disable = set(names.canonical(_env_list("REACH_DISABLE_PLUGINS") or [], "REACH_DISABLE_PLUGINS", None,
                                      problems))
    blocked = set(names.canonical(sorted(disable), "plugins", "disable", problems)) | env_disable
    if allow is not None:
        allow = names.canonical(allow, "plugins", "load", problems)
    if env_allow is not None:
        allow = env_allow if allow is None else [a for a in allow if a in env_allow]
    return blocked, allow


def _register(pm: pluggy.PluginManager, name: str, obj: Any, infos: list[PluginInfo], *, strict: bool,
              dist: str | None = None, version: str | None = None, module: str | None = None) -> None:
    if pm.has_plugin(name):
        msg = f"two plugins are named {name!r}; the second was skipped"
        if strict:
            raise PluginError(msg)
        infos.append(PluginInfo(name=name, status="failed", reason=msg))
        return
    try:
        pm.register(obj, name=name)
    except Exception as exc:  # noqa: BLE001 - a broken plugin must not take reach down
        if strict:
            raise PluginError(f"plugin {name!r} could not be registered: {exc}") from exc
        infos.append(PluginInfo(name=name, status="failed", reason=f"{type(exc).__name__}: {exc}"))
        return
    hooks = sorted(h.name for h in (pm.get_hookcallers(obj) or []))
    infos.append(PluginInfo(
        name=name, distribution=dist, version=version,
        module=module or getattr(obj, "__name__", None), hooks=hooks, obj=obj,
    ))


class PluginHooks:
    """One plugin's hook implementations in one ``Reach``: its module's functions and the
    ``@hookimpl`` methods of the object its ``reach_plugin_instance`` built for that ``Reach``.

    Registered in place of the module, under the plugin's name. Why one object and not
    the instance beside the module: pluggy attributes an implementation to the object
    registered and its name, and everything that names plugins reads that name (``[hooks]``
    order, ``[plugins.NAME] hooks_disabled``, ``REACH_HOOK_PRIORITY``, ``reach plugins
    --hook``, ``Reach(disable=...)``); a second registration would need a second name.
    A hook both implement is the instance's. ``REACH_HOOK_PRIORITY`` and ``REACH_HOOK_WHEN``
    are the module's, updated by the instance's.
    """

    def __init__(self, pm: pluggy.PluginManager, module: Any, instance: Any) -> None:
        by_hook: dict[str, tuple[str, Any]] = {}
        # The instance's hooks are read off its class: dir() of an instance gives it a __dict__
        # on CPython 3.11+, after which every self.x its hooks read is ~10x slower (unslotted
        # plugin objects; docs/architecture.md, "What each plugin costs a call").
        for source, names in ((module, dir(module)), (instance, dir(type(instance)))):
            for attr in names:
                if attr.startswith("__"):
                    continue
                opts = pm.parse_hookimpl_opts(source, attr)
                if opts is not None:
                    by_hook[opts.get("specname") or attr] = (attr, getattr(source, attr))
        for attr, function in by_hook.values():
            setattr(self, attr, function)
        self.REACH_HOOK_PRIORITY = {**(getattr(module, "REACH_HOOK_PRIORITY", None) or {}),
                                    **(getattr(instance, "REACH_HOOK_PRIORITY", None) or {})}
        self.REACH_HOOK_WHEN = {**(getattr(module, "REACH_HOOK_WHEN", None) or {}),
                                **(getattr(instance, "REACH_HOOK_WHEN", None) or {})}
        self.__name__ = getattr(module, "__name__", type(module).__name__)
        self._reach_module = module
        self._reach_instance = instance

    def __repr__(self) -> str:
        return f"<PluginHooks {self.__name__} + {type(self._reach_instance).__name__}>"


def build_instances(pm: pluggy.PluginManager, infos: Iterable[PluginInfo], settings: dict[str, Any], reach: Any,
                    fail: Any) -> None:
    """Build every loaded plugin's per-``Reach`` object and register its hooks under the plugin's name.

    ``reach_plugin_instance(reach, settings)`` is called once per plugin, in plugin-name
    order, with that plugin's validated settings, before any ``reach_register_*`` hook (so
    those may be methods of the object too). A plugin whose factory raises is passed to
    ``fail(info, error)`` with a ``PluginError`` naming it (``ConfigError`` as raised),
    which records it as failed or, when strict, raises.
    """
    from .errors import ConfigError
    from .hooks import call_by_name

    loaded = {i.name: i for i in infos if i.status == "loaded"}
    for impl in sorted(pm.hook.reach_plugin_instance.get_hookimpls(), key=lambda i: i.plugin_name):
        info = loaded.get(impl.plugin_name)
        if info is None:
            continue
        args = {"reach": reach, "settings": settings.get(info.name)}
        try:
            instance = call_by_name(impl, args)
        except ConfigError as exc:
            fail(info, exc)
            continue
        except Exception as exc:  # noqa: BLE001 - one broken plugin must not take reach down
            error = PluginError(f"plugin {info.name!r} could not build its object for this Reach: "
                                f"{type(exc).__name__}: {exc}")
            error.__cause__ = exc
            fail(info, error)
            continue
        if instance is None:
            continue
        combined = PluginHooks(pm, impl.plugin, instance)
        pm.unregister(name=info.name)
        pm.register(combined, name=info.name)
        info.instance = instance
        info.hooks = sorted(h.name for h in (pm.get_hookcallers(combined) or []))


def plugin_instance(reach: Any, name: str) -> Any:
    """The object plugin ``name`` built for ``reach`` with ``reach_plugin_instance``.

    ``name`` is the entry-point or the distribution name. ``None`` when that plugin is
    not loaded in ``reach`` (not installed, blocked, failed) or builds no object: this is
    how a plugin's public functions (``reach_audit.audit_of(reach)``) find their state.
    """
    names = getattr(reach, "plugin_names", None)
    wanted = (names.resolve(name) if names is not None else None) or name
    for info in getattr(reach, "plugin_info", ()):
        if info.name == wanted and info.status == "loaded":
            return info.instance
    return None


def _entry_points(*, cached: bool = False) -> list[Any]:
    """The installed ``reach`` entry points, by name, with their distribution's name and version
    (``reach_core.entry_index``: read by importlib_metadata; with ``cached``, remembered between
    runs while nothing it reads changes)."""
    from .entry_index import entry_points

    return entry_points(cache=cached)


def _load_entry_points(pm: pluggy.PluginManager, eps: list[Any], meta: dict[str, tuple[str | None, str | None]], *,
                       disable: set[str], allow: list[str] | None, strict: bool) -> list[PluginInfo]:
    infos: list[PluginInfo] = []
    seen: set[str] = set()
    for ep in eps:
        if ep.name in seen:
            continue
        seen.add(ep.name)
        dist_name, version = meta.get(ep.name) or (ep.distribution, ep.version)
        reason = blocked_reason(ep.name, disable=disable, allow=allow)
        if reason:
            infos.append(PluginInfo(name=ep.name, distribution=dist_name, version=version,
                                    module=ep.value, status="blocked", reason=reason))
            continue
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - report, do not crash
            if strict:
                raise PluginError(f"plugin {ep.name!r} failed to import: {exc}") from exc
            infos.append(PluginInfo(name=ep.name, distribution=dist_name, version=version, module=ep.value,
                                    status="failed", reason=f"{type(exc).__name__}: {exc}"))
            continue
        _register(pm, ep.name, obj, infos, strict=strict, dist=dist_name, version=version, module=ep.value)
    return infos


@dataclass
class Inventory:
    """The installed plugins, found, blocked, imported and registered but not started.

    ``plugin_info`` is what ``reach plugins`` lists; ``pm`` holds the loaded
    plugins' hook implementations (``reach_register_commands`` for the CLI).
    Problems that only show when a plugin starts (its settings, its tools, tool
    name conflicts) need a ``Reach``.
    """

    plugin_info: list[PluginInfo]
    pm: pluggy.PluginManager
    #: the raw config data read to select the plugins (``None`` when given a ``Config``):
    #: ``reach plugins`` reads ``hooks_disabled`` from it rather than parse the file again
    config_data: dict[str, Any] | None = None


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _selection(data: Any) -> tuple[set[str], list[str] | None, bool] | None:
    """``[plugins] disable``, ``[plugins] load`` and ``[reach] strict`` from raw config data,
    or ``None`` when they are not plainly valid (then the full validation says why)."""
    if not isinstance(data, dict):
        return None
    plugins, reach = data.get("plugins", {}), data.get("reach", {})
    if not isinstance(plugins, dict) or not isinstance(reach, dict):
        return None
    load, disable, strict = plugins.get("load"), plugins.get("disable", []), reach.get("strict", False)
    if (load is not None and not _str_list(load)) or not _str_list(disable) or not isinstance(strict, bool):
        return None
    return set(disable), load, strict


def inventory(config: Any = None, *, disable: Iterable[str] = ()) -> Inventory:
    """The installed plugins (entry points) as ``config`` selects them, imported but not started.

    ``config`` is what ``Reach`` takes (a path, a dict, a ``Config`` or ``None``).
    Only ``[plugins] load``, ``[plugins] disable`` and ``[reach] strict`` are read;
    when one of them is not plainly valid the whole config is validated, so the
    error is the one ``Reach`` would raise (``ConfigError``). Blocked plugins are
    never imported; with ``strict`` a plugin that fails to import raises ``PluginError``.
    """
    selection = data = None
    if config is None or isinstance(config, (str, os.PathLike, dict)):
        from .configfile import read_config

        data = read_config(config, remember=True)[0]  # a pyproject.toml without [tool.reach]: not reparsed
        selection = _selection(data)
    if selection is None:
        from .config import load_config

        cfg = load_config(config)
        selection = set(cfg.plugins.disable), cfg.plugins.load, cfg.reach.strict
    blocked, allow, strict = selection
    pm = new_manager()
    # the core's own plugins (reach.tagged, reach.delegation) are not entry points: nothing to block here
    infos = load_plugins(pm, "auto", disable=(blocked | set(disable)) - BUILTIN_NAMES, allow=allow, strict=strict,
                         cached=True)
    return Inventory(infos, pm, data)
