"""Hook implementations of reach-serve."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from .settings import ServeHttpSettings

# Only reach_core.hookimpl is imported with this module (``reach plugins`` imports it).


@hookimpl
def reach_plugin_settings() -> type[ServeHttpSettings]:
    from .settings import ServeHttpSettings

    return ServeHttpSettings


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .commands import add_commands

    add_commands(cli)
