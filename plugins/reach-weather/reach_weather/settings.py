"""Settings of the reach-weather plugin (``[plugins.reach-weather]`` in reach.toml)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class WeatherSettings(BaseModel):
    """Where to ask for weather and how patiently.

    The base URLs are configurable so that the local demo service (or a
    self-hosted Open-Meteo) can stand in for the public API.
    """

    model_config = ConfigDict(extra="forbid")

    geocoding_url: str = Field(
        "https://geocoding-api.open-meteo.com",
        description="Base URL of the Open-Meteo geocoding API (GET {url}/v1/search).",
    )
    forecast_url: str = Field(
        "https://api.open-meteo.com",
        description="Base URL of the Open-Meteo forecast API (GET {url}/v1/forecast).",
    )
    language: Literal["en", "zh"] = Field(
        "en",
        description="Language of place names and conditions for Latin-script queries; "
        "a query in Chinese characters always gets Chinese answers.",
    )
    request_timeout: float = Field(
        5.0,
        gt=0,
        le=60,
        description="Seconds per HTTP request. Small enough that a retry fits in the call deadline.",
    )
    max_forecast_days: int = Field(7, ge=1, le=16, description="Largest `days` a forecast may ask for.")

    @field_validator("geocoding_url", "forecast_url")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")
