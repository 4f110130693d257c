"""Hook implementations of reach-dbos (entry point ``reach-dbos``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from .settings import DbosSettings

# Only reach_core.hookimpl is imported with this module (``reach plugins`` imports it);
# dbos loads when a run is durable or reach starts with a database configured.

REACH_PLUGIN_NAME = "reach-dbos"


@hookimpl
def reach_plugin_settings() -> type[DbosSettings]:
    from .settings import DbosSettings

    return DbosSettings


@hookimpl
def reach_register_runners(register: Any) -> None:
    from .runner import DurableRunner

    register("reach-dbos", DurableRunner())


@hookimpl
async def reach_startup(reach: Any) -> None:
    """With a database configured, start DBOS: this instance's unfinished runs resume now."""
    from .settings import DbosSettings

    settings = reach.plugin_settings(REACH_PLUGIN_NAME)
    if not isinstance(settings, DbosSettings) or not settings.url() or not settings.recover_on_start:
        return
    import asyncio  # here, not with the module: `reach plugins` would pay ~40 ms for it

    from .runner import launch

    await asyncio.to_thread(launch, reach)


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .commands import add_commands

    add_commands(cli)
