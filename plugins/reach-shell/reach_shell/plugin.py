"""Hook implementations of reach-shell (entry point `reach-shell`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from .settings import ShellSettings


# Only reach_core.hookimpl is imported with this module (``reach plugins`` imports it);
# connectors and the pydantic settings model load when a Reach starts the plugin.


@hookimpl
def reach_plugin_settings() -> type[ShellSettings]:
    from .settings import ShellSettings

    return ShellSettings


@hookimpl
def reach_register_tools(register: Any, settings: ShellSettings | None) -> None:
    """Register `run_command` only when something is allow-listed: an empty tool is noise."""
    from .settings import ShellSettings

    settings = settings if settings is not None else ShellSettings()
    if settings.commands:
        from .connector import RunCommand

        register(RunCommand(settings))
