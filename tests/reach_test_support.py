"""Connectors shared by reach-core's tests (a module, so tests can import them)."""

from __future__ import annotations

from reach_core import Connector, connector


@connector(risk="read", tags=["computation"])
def add(a: int, b: int) -> int:
    """Add two integers. Use when the user asks for a sum.

    Args:
        a: first addend, e.g. 2
        b: second addend, e.g. 3
    """
    return a + b


class GetWeather(Connector):
    """The seed article's connector, unchanged but for the base class name."""

    name = "get_weather"
    description = "Get the current weather of a city. Use when the user asks about weather."
    risk = "read"
    input_schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "city name, e.g. 北京"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius",
                     "description": "temperature unit"},
        },
        "required": ["city"],
    }

    async def execute(self, params):
        return {"city": params["city"], "temperature": 21, "unit": params["unit"]}
