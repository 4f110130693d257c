"""The one hook caller: every combination rule of reach's hooks, written once.

pluggy calls synchronously and its wrappers cannot await, so reach calls its hooks
here instead. The implementations of each runtime hook are ordered once at
set-up (``REACH_HOOK_PRIORITY``, then the plugin name, or ``[hooks]`` in config)
into :class:`Impl` records; each may be a plain or an ``async`` function.

The rules (each hookspec in ``hookspecs.py`` names its rule and its exception rule):

``chain``
    Each implementation sees the value so far; a non-``None`` return replaces it.
    With ``errors_to`` given, an implementation that raises is logged and skipped (the
    value stays); without it, the exception ends the chain and reaches the caller.
``each``
    Every implementation runs, in order; return values are ignored; the first
    exception ends the hook and reaches the caller (``reach_pre_invoke``: a refusal).
``first``
    In order, the first non-``None`` return wins; an exception reaches the caller.
``notify``
    Observers: every implementation runs; one that raises is logged and the
    others still run; nothing reaches the caller.
``setup``
    Lifecycle hooks (``reach_startup``/``reach_shutdown``) with keyword arguments,
    each awaited in turn; an exception reaches the caller (start-up fails).

The sync fast path: ``chain`` and ``each`` return the result directly when no
implementation returned an awaitable, and only otherwise a coroutine (checked with
``pending``), so a call whose hooks are plain functions creates no coroutine for them.
The pipeline inlines that sync part for its two per-call hooks (``reach_pre_invoke``,
``reach_post_invoke``: a function frame each would be ~4% of a cheap call) and hands
over to ``each_rest``/``chain_rest``/``log_failure`` here for the rest of the rule.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    import pluggy

__all__ = ["PENDING", "HookCaller", "Impl", "call", "call_by_name", "chain", "chain_attr", "chain_rest", "each",
           "each_rest", "for_route", "log_failure", "pending"]


@dataclass(frozen=True, slots=True)
class Impl:
    """One implementation of a runtime hook, ready to call with the spec's arguments."""

    plugin: str
    function: Any
    argnames: tuple[str, ...]
    is_async: bool = False
    #: the positions, in the spec's argument tuple, of the arguments this implementation takes
    positions: tuple[int, ...] = ()
    #: it takes every argument of the spec, in the spec's order (called without re-packing)
    full: bool = False
    #: the plugin's ``REACH_HOOK_WHEN`` for this hook: on which tool routes it can act (see
    #: :func:`for_route`); ``None``: on every call
    when: Any = None


def call(impl: Impl, args: Sequence[Any]) -> Any:
    """Call one implementation with the spec's positional arguments; the caller awaits
    an awaitable result (a plain function may return one when it sometimes waits)."""
    return impl.function(*args) if impl.full else impl.function(*[args[i] for i in impl.positions])


def call_by_name(impl: Any, kwargs: dict[str, Any]) -> Any:
    """Call an implementation (pluggy's ``HookImpl`` or an :class:`Impl`) with the arguments
    it declares, taken by name from ``kwargs``: a plugin implements a hook with only the
    arguments it needs. Used where a hook is called once (set-up) rather than per call."""
    return impl.function(*[kwargs[a] for a in impl.argnames])


#: the type ``chain`` returns when it must be awaited (``type(out) is PENDING`` on the hot path)
PENDING = CoroutineType


def pending(value: Any) -> bool:
    """Did ``chain``/``each`` return a coroutine to await (an implementation was async)?"""
    return type(value) is CoroutineType


def _awaits(impl: Impl, res: Any) -> bool:
    """Must ``res``, returned by ``impl``, be awaited?"""
    return res is not None and (impl.is_async or inspect.isawaitable(res))


def chain(impls: Sequence[Impl], args: tuple[Any, ...], slot: int, errors_to: Any = None,
          hook: str = "") -> Any:
    """The ``chain`` rule: the value is ``args[slot]``; each implementation is called with
    ``args`` holding the value so far and a non-``None`` return replaces it. Returns the
    final value, or a coroutine of it when an implementation waits (see ``pending``).

    With ``errors_to`` (an object with a ``log``: a call's context, a runtime; read only
    on a failure), an implementation's exception is logged there and that implementation
    skipped; without, it propagates. Positional arguments and a tuple on the hot path:
    keyword parsing and list unpacking would cost a cheap call's worth."""
    for impl in impls:
        try:
            new = impl.function(*args) if impl.full else impl.function(*[args[p] for p in impl.positions])
        except Exception as exc:
            if errors_to is None:
                raise
            log_failure(errors_to, hook, impl, exc)
            continue
        if new is not None:
            if impl.is_async or inspect.isawaitable(new):
                return chain_rest(impls, impls.index(impl), new, args, slot, errors_to, hook)
            args = (*args[:slot], new, *args[slot + 1:])
    return args[slot]


async def chain_rest(impls: Sequence[Impl], i: int, res: Any, args: tuple[Any, ...], slot: int,
                     errors_to: Any, hook: str) -> Any:
    """``chain`` from implementation ``i`` on, whose result ``res`` must be awaited."""
    try:
        new = await res
    except Exception as exc:
        if errors_to is None:
            raise
        log_failure(errors_to, hook, impls[i], exc)
        new = None
    if new is not None:
        args = (*args[:slot], new, *args[slot + 1:])
    out = chain(impls[i + 1:], args, slot, errors_to, hook)
    return await out if type(out) is CoroutineType else out


def chain_attr(impls: Sequence[Impl], args: tuple[Any, ...], obj: Any, attr: str) -> Any:
    """The ``chain`` rule with the value held in ``obj.<attr>`` (``reach_pre_validate``:
    ``call.arguments``), so each implementation reads the value so far there. Exceptions
    propagate. Returns the final value, or a coroutine of it (see ``pending``)."""
    for impl in impls:
        new = call(impl, args)
        if new is not None:
            if impl.is_async or inspect.isawaitable(new):
                return _chain_attr_rest(impls, impls.index(impl), new, args, obj, attr)
            setattr(obj, attr, new)
    return getattr(obj, attr)


async def _chain_attr_rest(impls: Sequence[Impl], i: int, res: Any, args: tuple[Any, ...], obj: Any,
                           attr: str) -> Any:
    new = await res
    if new is not None:
        setattr(obj, attr, new)
    out = chain_attr(impls[i + 1:], args, obj, attr)
    return await out if type(out) is CoroutineType else out


def each(impls: Sequence[Impl], args: tuple[Any, ...]) -> Any:
    """The ``each`` rule: all run in order, returns ignored, an exception propagates.
    Returns ``None``, or a coroutine to await when an implementation was async."""
    for impl in impls:
        res = impl.function(*args) if impl.full else impl.function(*[args[p] for p in impl.positions])
        if res is not None and (impl.is_async or inspect.isawaitable(res)):
            return each_rest(impls, impls.index(impl), res, args)
    return None


async def each_rest(impls: Sequence[Impl], i: int, res: Any, args: tuple[Any, ...]) -> None:
    """``each`` from implementation ``i`` on, whose result ``res`` must be awaited."""
    await res
    rest = each(impls[i + 1:], args)
    if rest is not None:
        await rest


#: ``REACH_HOOK_WHEN`` condition: the implementation acts only on a call that needs a
#: person's approval (``ctx.needs_confirmation``), as a confirmer does
CONFIRMATION = "confirmation"


def for_route(impls: tuple[Impl, ...], pre: tuple[Impl, ...], tool: str, confirm: bool) -> tuple[Impl, ...]:
    """The implementations of a per-call hook that can act on the calls of one tool route,
    in order: the others are left out of the route, so a hook that would return at once
    costs its calls nothing. ``pre`` is every ``reach_pre_invoke`` implementation, in
    order; ``confirm``: the agent's policy asks a person before each call of ``tool``.

    A plugin declares it with ``REACH_HOOK_WHEN = {hook: condition}``; the conditions:

    ``("tools", names)``
        Acts only on calls of the tools named (reach-preselect: ``find_tools``).
    ``"confirmation"``
        Acts only on a call that needs a person's approval. Kept where the policy asks
        (the core sets ``ctx.needs_confirmation`` before the pre-invoke hooks), and
        wherever a ``reach_pre_invoke`` implementation without a condition runs before
        the plugin's own (or, for a plugin without one, anywhere such an implementation
        exists): that one may set ``ctx.needs_confirmation`` mid-call (delegation does,
        for an ancestor's policy). A hook that runs after the one that asked is kept by
        the same rule, so a confirmer's post-invoke stays wherever its pre-invoke does.

    An unknown condition keeps the implementation everywhere (a plugin written for a
    newer core loses the saving, not its calls). Routes are recomputed when tools or
    policies change (``Runtime.invalidate``), and the hook caller is built once per Reach.
    """
    if all(impl.when is None for impl in impls):
        return impls
    return tuple(impl for impl in impls if _may_act(impl, pre, tool, confirm))


def _may_act(impl: Impl, pre: tuple[Impl, ...], tool: str, confirm: bool) -> bool:
    when = impl.when
    if when is None:
        return True
    if when == CONFIRMATION:
        if confirm:
            return True
        for other in pre:
            if other.plugin == impl.plugin:
                return False  # its own pre-invoke: nothing before it can have asked
            if other.when is None:
                return True  # may set ctx.needs_confirmation
        return False
    if isinstance(when, tuple) and len(when) == 2 and when[0] == "tools":
        return tool in when[1]
    return True


def log_failure(errors_to: Any, hook: str, impl: Impl, exc: BaseException) -> None:
    """Log an isolated implementation's exception (``chain`` with ``errors_to``, ``notify``)."""
    event = "reach.post_invoke_error" if hook == "reach_post_invoke" else "reach.observer_error"
    # errors_to.log is the Reach's RedactingLogger: its configured secrets are masked there
    errors_to.log.error(event, hook=hook, plugin=impl.plugin, error=repr(exc))


class HookCaller:
    """Ordered implementations of every hook for one ``Reach``, and the rules to call them."""

    def __init__(self, pm: pluggy.PluginManager, *, order: dict[str, list[str]],
                 disabled: dict[str, set[str]]) -> None:
        from .hookspecs import LIFECYCLE_HOOKS, RUNTIME_HOOKS

        self.impls: dict[str, tuple[Impl, ...]] = {}
        for hook in (*RUNTIME_HOOKS, *LIFECYCLE_HOOKS):
            caller = getattr(pm.hook, hook)
            found = []
            when: dict[str, Any] = {}
            lifecycle = hook in LIFECYCLE_HOOKS
            for impl in caller.get_hookimpls():
                if not lifecycle and hook in disabled.get(impl.plugin_name, set()):
                    continue
                prio = getattr(impl.plugin, "REACH_HOOK_PRIORITY", {}) or {}
                found.append((int(prio.get(hook, 100)), impl.plugin_name, impl))
                if not lifecycle:
                    when[impl.plugin_name] = (getattr(impl.plugin, "REACH_HOOK_WHEN", None) or {}).get(hook)
            if not lifecycle:  # lifecycle hooks run in registration order
                found.sort(key=lambda t: (t[0], t[1]))
                explicit = order.get(hook)
                if explicit:
                    names = [f[1] for f in found]
                    unknown = [n for n in explicit if n not in names]
                    if unknown:
                        raise ConfigError(f"[hooks] {hook} names {unknown}, which implement no {hook}")
                    rank = {n: i for i, n in enumerate(explicit)}
                    found.sort(key=lambda t: (rank.get(t[1], len(rank)), t[0], t[1]))
            spec_args = tuple(caller.spec.argnames)
            self.impls[hook] = tuple(
                Impl(plugin=name, function=impl.function, argnames=tuple(impl.argnames),
                     is_async=inspect.iscoroutinefunction(impl.function),
                     positions=tuple(spec_args.index(a) for a in impl.argnames),
                     full=tuple(impl.argnames) == spec_args, when=when.get(name))
                for _, name, impl in found
            )

    def order(self, hook: str) -> list[str]:
        return [i.plugin for i in self.impls.get(hook, ())]

    @staticmethod
    async def _call(impl: Impl, kwargs: dict[str, Any]) -> Any:
        res = call_by_name(impl, kwargs)
        if _awaits(impl, res):
            res = await res
        return res

    async def first(self, hook: str, only: str | None = None, **kwargs: Any) -> Any:
        """The ``first`` rule (``only``: just that plugin's implementation)."""
        for impl in self.impls.get(hook, ()):
            if only is not None and impl.plugin != only:
                continue
            res = await self._call(impl, kwargs)
            if res is not None:
                return res
        return None

    async def notify(self, hook: str, errors_to: Any, **kwargs: Any) -> None:
        """The ``notify`` rule: every observer runs; failures are logged (on ``errors_to.log``),
        never raised."""
        for impl in self.impls.get(hook, ()):
            try:
                await self._call(impl, kwargs)
            except Exception as exc:  # noqa: BLE001
                log_failure(errors_to, hook, impl, exc)

    async def setup(self, hook: str, **kwargs: Any) -> None:
        """The ``setup`` rule: each implementation in turn, awaited; an exception propagates."""
        for impl in self.impls.get(hook, ()):
            await self._call(impl, kwargs)
