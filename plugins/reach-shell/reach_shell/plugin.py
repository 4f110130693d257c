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
def reach_register_tools(register: Any, settings: ShellSettings | None, reach: Any) -> None:
    """Register `run_command` only when something is allow-listed: an empty tool is noise.

    The roots reach-files can write are passed on: private dirs are placed outside
    them, and an overlap with the shell root is warned about.
    """
    from .settings import ShellSettings

    settings = settings if settings is not None else ShellSettings()
    if settings.commands:
        from .connector import RunCommand
        from .exposure import writable_roots

        register(RunCommand(settings, writable_roots=writable_roots(reach), redactor=getattr(reach, "redactor", None)))
