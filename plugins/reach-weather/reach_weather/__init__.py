"""reach-weather: current weather and short forecasts for an LLM agent.

Backed by Open-Meteo (no API key). ``demo_server`` holds a small local service
that speaks the same wire format, so demos and tests run with no network.
Names are loaded on first access, so importing the demo server alone stays
cheap (it needs only the standard library).
"""

from __future__ import annotations

from reach_core.lazy import exports

_EXPORTS = {
    "GetWeather": ".connectors",
    "GetForecast": ".connectors",
    "WeatherSettings": ".settings",
    "DemoServer": ".demo_server",
    "start_demo_server": ".demo_server",
}

__all__ = sorted(_EXPORTS)


__getattr__ = exports(__name__, _EXPORTS)
