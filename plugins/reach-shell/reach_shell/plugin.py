"""Hook implementations of reach-shell (entry point `reach-shell`)."""

from __future__ import annotations

from typing import Any

from reach_core import hookimpl

from .connector import RunCommand
from .settings import ShellSettings


@hookimpl
def reach_plugin_settings() -> type[ShellSettings]:
    return ShellSettings


@hookimpl
def reach_register_tools(register: Any, settings: ShellSettings | None) -> None:
    """Register `run_command` only when something is allow-listed: an empty tool is noise."""
    settings = settings if settings is not None else ShellSettings()
    if settings.commands:
        register(RunCommand(settings))
