"""The runtime hook caller: ordered, awaiting, with each hook's combination rule.

pluggy calls synchronously and its wrappers cannot await, so runtime hooks are
called here instead: the implementations of each hook are ordered once at
start-up (priority, then name, or ``[hooks]`` in config), each may be sync or
async, and the rule of the hook (chained / all / first non-None / observer) is
applied by the callers below.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import pluggy

from .errors import ConfigError

__all__ = ["HookCaller", "Impl"]


@dataclass(frozen=True, slots=True)
class Impl:
    plugin: str
    function: Any
    argnames: tuple[str, ...]
    is_async: bool = False
    positions: tuple[int, ...] = ()
    full: bool = False


class HookCaller:
    """Ordered implementations of every runtime hook for one ``Reach``."""

    def __init__(self, pm: pluggy.PluginManager, *, order: dict[str, list[str]],
                 disabled: dict[str, set[str]]) -> None:
        self.impls: dict[str, tuple[Impl, ...]] = {}
        from .hookspecs import RUNTIME_HOOKS

        for hook in RUNTIME_HOOKS:
            caller = getattr(pm.hook, hook)
            found = []
            for impl in caller.get_hookimpls():
                if hook in disabled.get(impl.plugin_name, set()):
                    continue
                prio = getattr(impl.plugin, "REACH_HOOK_PRIORITY", {}) or {}
                found.append((int(prio.get(hook, 100)), impl.plugin_name, impl))
            found.sort(key=lambda t: (t[0], t[1]))
            explicit = order.get(hook)
            if explicit:
                names = [f[1] for f in found]
                unknown = [n for n in explicit if n not in names]
                if unknown:
                    raise ConfigError(f"[hooks] {hook} names {unknown}, which implement no {hook}")
                rank = {n: i for i, n in enumerate(explicit)}
                found.sort(key=lambda t: (rank.get(t[1], len(rank)), t[0], t[1]))
            spec_args = tuple(getattr(pm.hook, hook).spec.argnames)
            self.impls[hook] = tuple(
                Impl(plugin=name, function=impl.function, argnames=tuple(impl.argnames),
                     is_async=inspect.iscoroutinefunction(impl.function),
                     positions=tuple(spec_args.index(a) for a in impl.argnames),
                     full=tuple(impl.argnames) == spec_args)
                for _, name, impl in found
            )

    def order(self, hook: str) -> list[str]:
        return [i.plugin for i in self.impls.get(hook, ())]

    @staticmethod
    async def _call(impl: Impl, kwargs: dict[str, Any]) -> Any:
        res = impl.function(*[kwargs[a] for a in impl.argnames])
        if impl.is_async or (res is not None and inspect.isawaitable(res)):
            res = await res
        return res

    async def first(self, hook: str, only: str | None = None, **kwargs: Any) -> Any:
        for impl in self.impls.get(hook, ()):
            if only is not None and impl.plugin != only:
                continue
            res = await self._call(impl, kwargs)
            if res is not None:
                return res
        return None
