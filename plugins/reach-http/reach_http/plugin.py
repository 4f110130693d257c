"""reach-http's hook implementations (entry point ``reach-http``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from .settings import HttpSettings

# Only reach_core.hookimpl is imported with this module (``reach plugins`` imports it).


@hookimpl
def reach_plugin_settings() -> type[HttpSettings]:
    from .settings import HttpSettings

    return HttpSettings


@hookimpl
def reach_register_tools(register: Any, settings: Any) -> None:
    if settings is None or not settings.services:
        return  # nothing configured: do not import the HTTP stack at start-up
    from .build import build_connectors

    for tool in build_connectors(settings):
        register(tool)


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .cli import http_group

    cli.add_command(http_group)
