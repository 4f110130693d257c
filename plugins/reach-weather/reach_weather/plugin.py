"""Hook implementations of reach-weather (entry point ``reach-weather``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from .settings import WeatherSettings


# Only reach_core.hookimpl is imported with this module (``reach plugins`` imports it);
# connectors and the pydantic settings model load when a Reach starts the plugin.

# The name config and logs use when this module is registered directly
# (tests, embedding) rather than found through its entry point.
REACH_PLUGIN_NAME = "reach-weather"


@hookimpl
def reach_plugin_settings() -> type[WeatherSettings]:
    from .settings import WeatherSettings

    return WeatherSettings


@hookimpl
def reach_register_tools(register: Any, settings: WeatherSettings | None) -> None:
    from .connectors import GetForecast, GetWeather

    register(GetWeather(settings))
    register(GetForecast(settings))


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .cli import weather

    cli.add_command(weather)


@hookimpl
async def reach_shutdown(reach: Any) -> None:
    """Close the HTTP clients this plugin's connectors opened."""
    from .connectors import _WeatherConnector

    for conn in reach.connectors():
        if isinstance(conn, _WeatherConnector):
            await conn.aclose()
