"""get_weather and get_forecast through a real Reach against the local weather service."""

from __future__ import annotations

import json

import pytest


async def test_get_weather_in_chinese_quotes_the_article_values(weather_reach):
    result = await weather_reach.invoke("get_weather", {"city": "北京"})
    assert result.ok, result.error
    content = result.content
    assert content["city"] == "北京"
    assert content["temperature"] == "21 °C"
    assert content["humidity"] == "45 %"
    assert content["condition"] == "晴"
    assert content["umbrella"] is False
    assert content["local_time"].endswith("(UTC+08:00)")
    # The model receives compact JSON with the Chinese text as is, not \\u escapes.
    message = result.to_message()
    assert "北京" in message["content"] and "\\u" not in message["content"]
    assert json.loads(message["content"])["temperature"] == "21 °C"


@pytest.mark.parametrize(
    ("city", "temperature", "humidity", "condition"),
    [("上海", "24 °C", "68 %", "多云"), ("广州", "28 °C", "80 %", "小雨"),
     ("Shanghai", "24 °C", "68 %", "partly cloudy")],
)
async def test_get_weather_for_the_article_cities(weather_reach, city, temperature, humidity, condition):
    result = await weather_reach.invoke("get_weather", {"city": city})
    assert result.ok, result.error
    assert (result.content["temperature"], result.content["humidity"], result.content["condition"]) == (
        temperature,
        humidity,
        condition,
    )


async def test_english_query_gets_english_words_and_fahrenheit(weather_reach):
    result = await weather_reach.invoke("get_weather", {"city": "Beijing", "unit": "fahrenheit"})
    assert result.ok, result.error
    assert result.content["city"] == "Beijing"
    assert result.content["country"] == "China"
    assert result.content["temperature"] == "69.8 °F"
    assert result.content["condition"] == "clear sky"
    assert result.content["wind"] == "9.4 km/h"


async def test_rain_means_umbrella(weather_reach):
    result = await weather_reach.invoke("get_weather", {"city": "London"})
    assert result.content["condition"] == "rain"
    assert result.content["umbrella"] is True


async def test_aliases_the_geocoder_knows_are_accepted(weather_reach):
    for alias, name in [("Peking", "Beijing"), ("NYC", "New York"), ("东京", "东京")]:
        result = await weather_reach.invoke("get_weather", {"city": alias})
        assert result.ok, (alias, result.error)
        assert result.content["city"] == name


async def test_misspelled_city_is_a_business_error_with_a_suggestion(weather_reach, demo):
    result = await weather_reach.invoke("get_weather", {"city": "Bejing"})
    assert not result.ok
    assert result.error.code == "execution_failed"
    assert "no city called 'Bejing'; did you mean Beijing?" in result.error.message
    # A business error is not retried and does not fall back to "try later".
    assert len([p for p in demo.requests if p.startswith("/v1/search")]) == 1
    assert not result.meta.get("fallback")


async def test_suggestion_from_a_second_looser_query(weather_reach, demo):
    demo.fuzzy = False  # a geocoder that offers nothing for a misspelling
    result = await weather_reach.invoke("get_weather", {"city": "Shanghia"})
    assert not result.ok
    assert "did you mean Shanghai?" in result.error.message
    assert demo.requests[-1].startswith("/v1/search?name=Sha&")


async def test_unknown_city_without_a_suggestion(weather_reach):
    result = await weather_reach.invoke("get_weather", {"city": "Atlantis"})
    assert not result.ok
    assert result.error.message.startswith("no city called 'Atlantis'; check the spelling")


async def test_forecast_has_one_entry_per_day(weather_reach):
    result = await weather_reach.invoke("get_forecast", {"city": "广州", "days": 3})
    assert result.ok, result.error
    days = result.content["days"]
    assert len(days) == 3
    assert days[0]["condition"] == "小雨"
    assert days[0]["rain_chance"] == "85 %"
    assert set(days[0]) == {"date", "condition", "high", "low", "rain_chance", "rain"}
    assert days[0]["date"] < days[1]["date"] < days[2]["date"]


async def test_forecast_days_outside_the_range_is_invalid_arguments(weather_reach, demo):
    result = await weather_reach.invoke("get_forecast", {"city": "Tokyo", "days": 30})
    assert not result.ok
    assert result.error.code == "invalid_arguments"
    assert "days" in result.error.message
    assert demo.requests == []  # refused before any request went out


async def test_chinese_city_in_an_openai_style_call(weather_reach):
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "上海"}'}}
    result = await weather_reach.invoke(call)
    assert result.ok and result.call_id == "call_1"
    assert result.content["condition"] == "多云"


async def test_parallel_calls_share_one_client(weather_reach):
    calls = [
        {"id": f"c{i}", "name": "get_weather", "arguments": json.dumps({"city": city})}
        for i, city in enumerate(["北京", "上海", "广州", "Tokyo", "London"])
    ]
    results = await weather_reach.invoke_many(calls)
    assert [r.ok for r in results] == [True] * 5
    assert [r.content["temperature"] for r in results[:3]] == ["21 °C", "24 °C", "28 °C"]
    connector = weather_reach.get("get_weather")
    assert connector.api._client is not None  # created lazily, kept for the next call


async def test_a_city_is_geocoded_once_per_connector(weather_reach, demo):
    for _ in range(3):
        result = await weather_reach.invoke("get_weather", {"city": "北京"})
        assert result.content["temperature"] == "21 °C"
    searches = [p for p in demo.requests if p.startswith("/v1/search")]
    forecasts = [p for p in demo.requests if p.startswith("/v1/forecast")]
    assert (len(searches), len(forecasts)) == (1, 3)  # the weather itself is always fresh


async def test_unknown_unit_is_invalid_arguments(weather_reach):
    result = await weather_reach.invoke("get_weather", {"city": "北京", "unit": "kelvin"})
    assert not result.ok
    assert result.error.code == "invalid_arguments"
    assert "unit" in result.error.message


async def test_aclose_releases_the_http_clients(weather_reach):
    await weather_reach.invoke("get_weather", {"city": "上海"})
    connector = weather_reach.get("get_weather")
    client = connector.api._client
    assert client is not None and not client.is_closed
    await weather_reach.aclose()
    assert client.is_closed


def test_a_connector_survives_a_new_event_loop_per_call(demo):
    """Sync wrappers run each call in a fresh loop; the client must follow."""
    import asyncio

    from reach_weather import GetWeather

    connector = GetWeather(demo.settings())
    first = asyncio.run(connector.execute({"city": "广州"}))
    second = asyncio.run(connector.execute({"city": "广州"}))
    assert first["condition"] == second["condition"] == "小雨"
