"""Finding, blocking and loading plugins. One ``PluginManager`` per ``Reach``.

Plugins are entry points in the group ``reach``; the entry-point name is the
distribution name and the plugin's name everywhere. A blocked plugin
(``[plugins] disable``, ``REACH_DISABLE_PLUGINS``, or not in the allow-list
``[plugins] load`` / ``REACH_PLUGINS``) is never imported: the check happens on
the entry point's name before ``ep.load()``. A plugin that fails to import is
recorded as ``failed`` and skipped, unless ``strict``.

``importlib_metadata`` (the backport) is used rather than the stdlib module
because its ``entry_points(group=...)`` is faster and uniform across Python
versions, which matters for ``reach --version`` start-up time.
"""

from __future__ import annotations

import os
import types
from dataclasses import dataclass, field
from typing import Any

import pluggy

from . import hookspecs
from .errors import PluginError

__all__ = ["PluginInfo", "load_plugins", "new_manager"]


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


def _load_entry_points(pm: pluggy.PluginManager, *, disable: set[str], allow: list[str] | None,
                       strict: bool) -> list[PluginInfo]:
    import importlib_metadata

    infos: list[PluginInfo] = []
    seen: set[str] = set()
    eps = sorted(importlib_metadata.entry_points(group="reach"), key=lambda e: e.name)
    for ep in eps:
        if ep.name in seen:
            continue
        seen.add(ep.name)
        dist = getattr(ep, "dist", None)
        dist_name = dist.name if dist is not None else None
        version = dist.version if dist is not None else None
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
