"""Hook implementations of reach-serve."""

from __future__ import annotations

from typing import Any

from reach_core import hookimpl

from .settings import ServeHttpSettings


@hookimpl
def reach_plugin_settings() -> type[ServeHttpSettings]:
    return ServeHttpSettings


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .commands import add_commands

    add_commands(cli)
