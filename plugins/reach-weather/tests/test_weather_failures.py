"""An unreliable upstream: retried when busy, fallback when gone, never hangs past the deadline."""

from __future__ import annotations

import time

from reach_weather.connectors import UNAVAILABLE


async def test_503_then_200_is_retried_and_succeeds(weather_reach, demo):
    demo.fail_next(1, status=503)
    result = await weather_reach.invoke("get_weather", {"city": "北京"})
    assert result.ok, result.error
    assert result.content["temperature"] == "21 °C"
    assert result.meta["attempts"] == 2
    assert not result.meta.get("fallback")


async def test_429_is_retried_too(weather_reach, demo):
    demo.fail_next(1, status=429)
    result = await weather_reach.invoke("get_forecast", {"city": "上海", "days": 2})
    assert result.ok, result.error
    assert result.meta["attempts"] == 2


async def test_server_down_gives_the_fallback(make_weather_reach, dead_url):
    reach = make_weather_reach({"geocoding_url": dead_url, "forecast_url": dead_url})
    result = await reach.invoke("get_weather", {"city": "北京"})
    assert result.ok  # the fallback is an answer the model can relay
    assert result.content == UNAVAILABLE
    assert result.meta["fallback"] is True
    assert result.meta["error_code"] == "upstream_unavailable"
    assert result.meta["attempts"] > 1  # retried before giving up


async def test_always_busy_gives_the_fallback_after_retries(weather_reach, demo):
    demo.fail_next(50, status=503)
    result = await weather_reach.invoke("get_weather", {"city": "Tokyo"})
    assert result.content == UNAVAILABLE
    assert result.meta["fallback"] is True
    assert 2 <= len(demo.requests) <= 4  # 1 + max_retries attempts, each stopped at geocoding


async def test_slow_server_times_out_per_request_and_falls_back(make_weather_reach, demo):
    demo.delay = 1.0
    reach = make_weather_reach({**demo.settings(), "request_timeout": 0.2})
    started = time.perf_counter()
    result = await reach.invoke("get_weather", {"city": "Paris"})
    elapsed = time.perf_counter() - started
    assert result.content == UNAVAILABLE
    assert result.meta["fallback"] is True
    assert elapsed < 3.0  # per-request timeouts, not the 15 s call deadline


async def test_bad_request_is_not_retried(weather_reach, demo):
    demo.fail_next(1, status=400)
    result = await weather_reach.invoke("get_weather", {"city": "北京"})
    assert not result.ok
    assert result.error.code == "execution_failed"
    assert "HTTP 400" in result.error.message
    assert len(demo.requests) == 1
