"""The demo weather service: the article's route and the Open-Meteo shapes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest
from reach_weather.demo_server import start_demo_server

ARTICLE = {
    "北京": {"city": "北京", "temperature": 21, "humidity": 45, "condition": "晴"},
    "上海": {"city": "上海", "temperature": 24, "humidity": 68, "condition": "多云"},
    "广州": {"city": "广州", "temperature": 28, "humidity": 80, "condition": "小雨"},
}


@pytest.mark.parametrize("city", list(ARTICLE))
def test_article_route_returns_the_article_values(http, demo, city):
    response = http.get(f"{demo.url}/weather/{city}")
    assert response.status_code == 200
    assert response.json() == ARTICLE[city]
    assert "charset=utf-8" in response.headers["content-type"]


def test_article_route_other_city_is_404_city_not_found(http, demo):
    response = http.get(f"{demo.url}/weather/东京")
    assert response.status_code == 404
    assert response.json() == {"error": "city not found"}


def test_geocoding_finds_chinese_and_english_names(http, demo):
    zh = http.get(f"{demo.url}/v1/search", params={"name": "北京", "language": "zh"}).json()
    en = http.get(f"{demo.url}/v1/search", params={"name": "beijing", "count": 1}).json()
    assert zh["results"][0]["name"] == "北京" and zh["results"][0]["country"] == "中国"
    assert en["results"][0]["name"] == "Beijing"
    assert en["results"][0]["latitude"] == zh["results"][0]["latitude"]


def test_geocoding_without_a_match_has_no_results_key(http, demo):
    body = http.get(f"{demo.url}/v1/search", params={"name": "Atlantis"}).json()
    assert "results" not in body


@pytest.mark.parametrize(
    ("name", "temperature", "humidity", "code"),
    [("Beijing", 21, 45, 0), ("Shanghai", 24, 68, 2), ("Guangzhou", 28, 80, 61)],
)
def test_forecast_current_matches_the_article(http, demo, name, temperature, humidity, code):
    place = http.get(f"{demo.url}/v1/search", params={"name": name}).json()["results"][0]
    body = http.get(
        f"{demo.url}/v1/forecast",
        params={
            "latitude": place["latitude"],
            "longitude": place["longitude"],
            "current": "temperature_2m,relative_humidity_2m,weather_code,wind_speed_10m",
            "timezone": "auto",
        },
    ).json()
    current = body["current"]
    assert (current["temperature_2m"], current["relative_humidity_2m"], current["weather_code"]) == (
        temperature,
        humidity,
        code,
    )
    assert body["current_units"]["temperature_2m"] == "°C"
    assert body["utc_offset_seconds"] == 8 * 3600


def test_forecast_daily_columns_and_fahrenheit(http, demo):
    body = http.get(
        f"{demo.url}/v1/forecast",
        params={
            "latitude": 39.9075,
            "longitude": 116.39723,
            "daily": "weather_code,temperature_2m_max,temperature_2m_min",
            "forecast_days": 4,
            "temperature_unit": "fahrenheit",
        },
    ).json()
    assert len(body["daily"]["time"]) == 4
    assert len(body["daily"]["temperature_2m_max"]) == 4
    assert body["daily_units"]["temperature_2m_max"] == "°F"
    assert body["daily"]["weather_code"][0] == 0


def test_forecast_refuses_bad_parameters_like_open_meteo(http, demo):
    response = http.get(f"{demo.url}/v1/forecast", params={"latitude": "north", "longitude": 1})
    assert response.status_code == 400
    assert response.json()["error"] is True and "latitude" in response.json()["reason"]
    too_many = http.get(
        f"{demo.url}/v1/forecast", params={"latitude": 1, "longitude": 1, "forecast_days": 30}
    )
    assert too_many.status_code == 400


def test_starts_fast_and_releases_its_port(http):
    started = time.perf_counter()
    server = start_demo_server()
    elapsed = time.perf_counter() - started
    url = server.url
    assert http.get(f"{url}/weather/北京").status_code == 200
    server.close()
    assert elapsed < 0.5
    with pytest.raises(httpx.ConnectError):
        http.get(f"{url}/weather/北京", timeout=1)


def test_fail_next_injects_busy_answers(http, demo):
    demo.fail_next(2, status=503)
    assert http.get(f"{demo.url}/weather/北京").status_code == 503
    assert http.get(f"{demo.url}/weather/北京").status_code == 503
    assert http.get(f"{demo.url}/weather/北京").status_code == 200


def test_reach_weather_serve_demo_command(http, dead_url, tmp_path):
    """`reach weather serve-demo --port N` through the root CLI and the plugin hook."""
    port = int(dead_url.rsplit(":", 1)[1])
    code = (
        "import sys; from reach_core.cli import main; "
        "sys.argv = ['reach', 'weather', 'serve-demo', '--port', sys.argv[1]]; main()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "REACH_PLUGINS": "reach-weather"},  # other installed plugins stay unimported
    )
    try:
        banner = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}" in banner
        deadline = time.monotonic() + 10
        while True:
            try:
                response = http.get(f"http://127.0.0.1:{port}/weather/上海", timeout=1)
                break
            except httpx.ConnectError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert response.json()["condition"] == "多云"
        proc.terminate()  # SIGTERM stops it as cleanly as Ctrl-C
        rest, _ = proc.communicate(timeout=10)
        assert proc.returncode == 0
        assert "stopped" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
