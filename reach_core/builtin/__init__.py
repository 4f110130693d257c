"""The core's own plugins, registered by name before the installed ones.

Like datasette's default plugins and llm's ``default_plugins``: each is an
ordinary plugin object with ``@hookimpl`` methods, one instance per ``Reach``,
and ``[plugins] disable`` (or ``Reach(disable=[...])``) switches it off by name.

========================  ==========================================================
``reach.tagged``          the ``tagged`` parser (``reach_core.builtin.tagged``)
``reach.delegation``      ``delegate`` between agents (``reach_core.builtin.delegation``)
========================  ==========================================================

Set-up order: ``reach.tagged`` before the installed plugins, ``reach.delegation``
after them (its policy needs every tool registered).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["BEFORE", "AFTER", "BUILTIN_NAMES"]


def _tagged() -> Any:
    from .tagged import TaggedPlugin

    return TaggedPlugin()


def _delegation() -> Any:
    from .delegation import DelegationPlugin

    return DelegationPlugin()


#: (name, factory) of the built-ins set up before, and after, the installed plugins
BEFORE: tuple[tuple[str, Callable[[], Any]], ...] = (("reach.tagged", _tagged),)
AFTER: tuple[tuple[str, Callable[[], Any]], ...] = (("reach.delegation", _delegation),)
BUILTIN_NAMES = frozenset(name for name, _ in (*BEFORE, *AFTER))
