"""The two tools: ``get_weather`` (now) and ``get_forecast`` (next days).

Answers are trimmed to what a model needs to reply to a person: readable
strings with units ("21 °C", "45 %"), the condition in words, the local time.
Raw Open-Meteo payloads would cost tokens and invite misreading.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

from reach_core import Connector, RetryableError

from .cityname import check_city
from .openmeteo import OpenMeteo, service_text
from .places import Place, normalise, query_language, resolve_city
from .settings import WeatherSettings
from .wmo import WET_CODES, describe

_PLACES_KEPT = 256

UNAVAILABLE = "weather is unavailable right now, try later"

# Failures after which "try later" is the honest answer.
_FALLBACK_FOR = frozenset({"upstream_unavailable", "timeout", "rate_limited"})

_UNITS = {"celsius": "°C", "fahrenheit": "°F"}

_CITY = {
    "type": "string",
    "minLength": 1,
    "maxLength": 100,
    "description": "City name in English or Chinese, e.g. 'Beijing', '北京', 'New York'.",
}
_UNIT = {
    "type": "string",
    "enum": ["celsius", "fahrenheit"],
    "default": "celsius",
    "description": "Temperature unit.",
}


class _WeatherConnector(Connector):
    """Shared plumbing: settings, one lazily created HTTP client per instance."""

    tags = ("external_api",)
    risk = "read"

    def __init__(self, settings: WeatherSettings | dict[str, Any] | None = None) -> None:
        if settings is None:
            settings = WeatherSettings.model_validate({})
        elif isinstance(settings, dict):
            settings = WeatherSettings.model_validate(settings)
        self.settings = settings
        self.api = OpenMeteo(settings)
        # Where a city is does not change: remembering it halves the requests
        # of every repeated city (the forecast call still goes out each time).
        self._places: OrderedDict[tuple[str, str], Place] = OrderedDict()

    def fallback(self, error: Any) -> str:
        """The answer once retries are spent: only for an unreachable or busy service.

        A deliberate refusal (an unknown city, a bad request) is re-raised so the
        model sees what to correct, rather than "try later".
        """
        if getattr(error, "code", None) in _FALLBACK_FOR:
            return UNAVAILABLE
        raise error

    async def aclose(self) -> None:
        """Release the HTTP client (called by the plugin's shutdown hook)."""
        await self.api.aclose()

    async def _place(self, city: str) -> tuple[Place, str]:
        language = query_language(city, self.settings.language)
        key = (normalise(city), language)
        place = self._places.get(key)
        if place is None:
            place = await resolve_city(self.api, city, language)
            self._places[key] = place
            if len(self._places) > _PLACES_KEPT:
                self._places.popitem(last=False)
        else:
            self._places.move_to_end(key)
        return place, language


class GetWeather(_WeatherConnector):
    name = "get_weather"
    description = (
        "Current weather in one city: temperature, humidity, conditions (clear, cloudy, rain ...), "
        "wind and local time. Call it whenever the user asks about the weather now or today, "
        "the temperature, whether it rains, whether to take an umbrella or a coat, or whether "
        "it is a good time to go out, run, cycle or exercise outdoors. "
        "查询某个城市的实时天气（气温、湿度、天气状况、风速、当地时间）。用户问天气、温度、"
        "会不会下雨、要不要带伞、适不适合出门、跑步或户外运动时调用。"
    )
    input_schema = {
        "type": "object",
        "properties": {"city": _CITY, "unit": _UNIT},
        "required": ["city"],
        "additionalProperties": False,
    }

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        unit = params.get("unit") or "celsius"
        place, language = await self._place(check_city(params.get("city")))
        data = await self.api.forecast(
            {
                "latitude": place.latitude,
                "longitude": place.longitude,
                "current": "temperature_2m,relative_humidity_2m,weather_code,wind_speed_10m",
                "temperature_unit": unit,
                "wind_speed_unit": "kmh",
            }
        )
        current = data.get("current")
        if not isinstance(current, dict):
            raise RetryableError("the weather forecast service sent no current conditions")
        code = _code(current.get("weather_code"))
        answer: dict[str, Any] = {
            "city": place.name,
            "country": place.country,
            "local_time": _local_time(current.get("time"), data.get("utc_offset_seconds")),
            "temperature": _with_unit(current.get("temperature_2m"), _UNITS[unit]),
            "humidity": _with_unit(current.get("relative_humidity_2m"), "%"),
            "condition": describe(code, language),
            "wind": _with_unit(current.get("wind_speed_10m"), "km/h"),
            "umbrella": code in WET_CODES if code is not None else None,
        }
        return {k: v for k, v in answer.items() if v is not None}


class GetForecast(_WeatherConnector):
    name = "get_forecast"
    description = (
        "Daily weather forecast for one city for the next 1-{max} days: conditions, high and low "
        "temperature, chance and amount of rain. Call it when the user asks about tomorrow, the "
        "weekend or the coming days: will it rain, is it worth planning a run, a trip or an "
        "outdoor event, should they pack an umbrella. "
        "查询某个城市未来几天的天气预报（天气状况、最高/最低气温、降水概率）。用户问明天、"
        "周末或未来几天会不会下雨、适不适合跑步、出游或安排户外活动、要不要带伞时调用。"
    )

    def __init__(self, settings: WeatherSettings | dict[str, Any] | None = None) -> None:
        super().__init__(settings)
        top = self.settings.max_forecast_days
        self.description = type(self).description.replace("{max}", str(top))
        self._schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "city": _CITY,
                "days": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": top,
                    "default": 3,
                    "description": f"Number of days from today, 1 to {top}.",
                },
                "unit": _UNIT,
            },
            "required": ["city"],
            "additionalProperties": False,
        }

    def get_input_schema(self) -> dict[str, Any]:
        """The schema depends on settings (``max_forecast_days``), so it is built per instance."""
        return self._schema

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        unit = params.get("unit") or "celsius"
        days = int(params.get("days") or 3)
        place, language = await self._place(check_city(params.get("city")))
        data = await self.api.forecast(
            {
                "latitude": place.latitude,
                "longitude": place.longitude,
                "daily": "weather_code,temperature_2m_max,temperature_2m_min,"
                "precipitation_probability_max,precipitation_sum",
                "forecast_days": days,
                "temperature_unit": unit,
            }
        )
        daily = data.get("daily")
        if not isinstance(daily, dict) or not isinstance(daily.get("time"), list):
            raise RetryableError("the weather forecast service sent no daily forecast")
        symbol = _UNITS[unit]

        def column(key: str) -> list[Any]:
            values = daily.get(key)
            return values if isinstance(values, list) else []

        codes, highs, lows = column("weather_code"), column("temperature_2m_max"), column("temperature_2m_min")
        chances, amounts = column("precipitation_probability_max"), column("precipitation_sum")
        forecast = []
        for i, date in enumerate(daily["time"][:days]):
            code = _code(_at(codes, i))
            day = {
                "date": service_text(date, 40),
                "condition": describe(code, language),
                "high": _with_unit(_at(highs, i), symbol),
                "low": _with_unit(_at(lows, i), symbol),
                "rain_chance": _with_unit(_at(chances, i), "%"),
                "rain": _with_unit(_at(amounts, i), "mm"),
            }
            forecast.append({k: v for k, v in day.items() if v is not None})
        answer = {"city": place.name, "country": place.country, "days": forecast}
        return {k: v for k, v in answer.items() if v is not None}


def _at(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else None


def _code(value: Any) -> int | None:
    """The WMO code the service sent, if it is one (a whole number): anything else is unknown."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value) if value == int(value) and abs(value) < 1000 else None


def _with_unit(value: Any, unit: str) -> str | None:
    """"21 °C" / "45 %": one decimal at most, no trailing ".0".

    Only finite numbers (or numeric text) count: the service's bytes are not trusted,
    and NaN, infinities or a million-digit string are no temperature."""
    if value is None or isinstance(value, bool) or (isinstance(value, str) and len(value) > 32):
        return None
    try:
        number = round(float(value), 1)
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(number) or abs(number) > 1e6:
        return None
    text = f"{number:g}" if number != int(number) else str(int(number))
    return f"{text} {unit}"


def _local_time(time: Any, offset_seconds: Any) -> str | None:
    """"2026-05-01 14:00 (UTC+08:00)": the place's own clock, with its offset."""
    if not isinstance(time, str):
        return None
    text = service_text(time.replace("T", " "), 40) or ""
    if isinstance(offset_seconds, bool) or not isinstance(offset_seconds, int | float) \
            or not math.isfinite(offset_seconds) or abs(offset_seconds) > 18 * 3600:
        return text
    total = int(offset_seconds) // 60
    sign = "+" if total >= 0 else "-"
    hours, minutes = divmod(abs(total), 60)
    return f"{text} (UTC{sign}{hours:02d}:{minutes:02d})"
