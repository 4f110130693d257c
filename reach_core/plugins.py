"""Finding, blocking and loading plugins. One ``PluginManager`` per ``Reach``.

Plugins are entry points in the group ``reach``; the entry-point name is the
distribution name and the plugin's name everywhere. A blocked plugin
(``[plugins] disable``, ``REACH_DISABLE_PLUGINS``, or not in the allow-list
``[plugins] load`` / ``REACH_PLUGINS``) is never imported: the check happens on
the entry point's name before ``ep.load()``. A plugin that fails to import is
recorded as ``failed`` and skipped, unless ``strict``.

The stdlib ``importlib.metadata`` finds the entry points: on Python 3.11 it
was measured faster than the ``importlib_metadata`` backport both at finding
the group and at reading each distribution's name and version (which matters
for ``reach plugins`` start-up time), and the name and version are read from the
metadata file's header only, not by parsing the whole file (long descriptions).

:func:`inventory` is what ``reach plugins`` and the CLI's command discovery use:
the plugins found, blocked, imported and registered, without starting them
(no settings validated, no tools registered), so it imports neither pydantic
nor the rest of the core.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from . import hookspecs
from .errors import PluginError

__all__ = ["Inventory", "PluginInfo", "extend_reach", "inventory", "load_plugins", "new_manager"]


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "distribution": self.distribution, "version": self.version,
            "module": self.module, "status": self.status, "reason": self.reason, "hooks": self.hooks,
        }


# Methods plugins add to ``Reach`` (see ``extend_reach``), kept until ``reach_core.reach`` is imported.
_REACH_METHODS: dict[str, Any] = {}


def extend_reach(name: str, function: Any) -> None:
    """Give ``reach_core.Reach`` the method ``name``, without importing it.

    A plugin module that adds a method (``reach.as_something()``) calls this at
    import: the method is set at once if ``reach_core.reach`` is already imported,
    else as soon as ``Reach`` is used (``reach_core.Reach``, or any ``Reach()``),
    so listing plugins (``reach plugins``) does not import the core's pipeline.
    An attribute already on ``Reach`` is never replaced.
    """
    _REACH_METHODS.setdefault(name, function)
    apply_reach_methods()


def apply_reach_methods() -> None:
    """Set the methods ``extend_reach`` collected on ``Reach``, if it is imported yet."""
    module = sys.modules.get("reach_core.reach")
    cls = getattr(module, "Reach", None) if module is not None else None
    if cls is None:
        return
    for name, function in list(_REACH_METHODS.items()):
        if name not in cls.__dict__:
            setattr(cls, name, function)
    _REACH_METHODS.clear()


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
) -> list[PluginInfo]:
    """Register the plugins ``spec`` asks for ("auto" = entry points, or a list)."""
    infos: list[PluginInfo] = []
    apply_reach_methods()  # plugins imported before Reach was (``reach plugins``, a direct import)
    items = ["auto"] if spec == "auto" else list(spec or [])
    env_allow = _env_list("REACH_PLUGINS")
    env_disable = set(_env_list("REACH_DISABLE_PLUGINS") or [])
    disable = disable | env_disable
    if env_allow is not None:
        allow = env_allow if allow is None else [a for a in allow if a in env_allow]
    for item in items:
        if item == "auto":
            infos.extend(_load_entry_points(pm, disable=disable, allow=allow, strict=strict))
            continue
        name, obj = item if isinstance(item, tuple) else (_plugin_name(item), item)
        reason = blocked_reason(name, disable=disable, allow=None)
        if reason:
            infos.append(PluginInfo(name=name, status="blocked", reason=reason))
            continue
        _register(pm, name, obj, infos, strict=strict)
    apply_reach_methods()  # ... and plugins imported just now
    return infos


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


def _dist_name_version(dist: Any) -> tuple[str | None, str | None]:
    """Name and version from the header of the distribution's metadata file.

    ``dist.name`` / ``dist.version`` parse the whole file with ``email`` (long
    descriptions included); the header is all that is needed.
    """
    if dist is None:
        return None, None
    name = version = None
    try:
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    except Exception:  # noqa: BLE001 - unusual finders: fall back to the library
        text = ""
    for line in text.splitlines():
        if not line.strip():
            break  # end of the header
        if name is None and line.startswith("Name:"):
            name = line[5:].strip()
        elif version is None and line.startswith("Version:"):
            version = line[8:].strip()
        if name is not None and version is not None:
            return name, version
    return (name or dist.name), (version or dist.version)


def _load_entry_points(pm: pluggy.PluginManager, *, disable: set[str], allow: list[str] | None,
                       strict: bool) -> list[PluginInfo]:
    from importlib.metadata import entry_points

    infos: list[PluginInfo] = []
    seen: set[str] = set()
    eps = sorted(entry_points(group="reach"), key=lambda e: e.name)
    for ep in eps:
        if ep.name in seen:
            continue
        seen.add(ep.name)
        dist_name, version = _dist_name_version(getattr(ep, "dist", None))
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
    selection = None
    if config is None or isinstance(config, (str, os.PathLike, dict)):
        from .configfile import read_config

        selection = _selection(read_config(config)[0])
    if selection is None:
        from .config import load_config

        cfg = load_config(config)
        selection = set(cfg.plugins.disable), cfg.plugins.load, cfg.reach.strict
    blocked, allow, strict = selection
    pm = new_manager()
    infos = load_plugins(pm, "auto", disable=blocked | set(disable), allow=allow, strict=strict)
    return Inventory(infos, pm)
