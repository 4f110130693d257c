"""The core's conformance checks, run against this plugin and its demo service."""

from __future__ import annotations

import pytest
import reach_weather.plugin as plugin
from reach_weather.connectors import GetForecast, GetWeather

from reach_core.testing import ConnectorConformance

VOCABULARY = {"data_processing", "external_api", "file_system", "database", "computation", "communication"}


class TestWeatherConformance(ConnectorConformance):
    plugin = "reach-weather"

    @pytest.fixture(autouse=True)
    def _service(self, demo):
        self.server = demo

    def config(self, tmp_path):
        return {**super().config(tmp_path), "plugins": {"reach-weather": self.server.settings()}}

    def example_calls(self):
        return [("get_weather", {"city": "北京"}), ("get_forecast", {"city": "Tokyo", "days": 2})]


def test_declarations_say_when_to_call_in_english_and_chinese():
    for connector in (GetWeather(), GetForecast()):
        text = connector.description
        assert "umbrella" in text and "run" in text and "rain" in text
        assert "带伞" in text and "跑步" in text and "下雨" in text
        assert set(connector.tags) <= VOCABULARY
        assert connector.risk == "read"


def test_lint_finds_nothing(tmp_path, demo):
    from reach_core.lint import lint_tool
    from reach_core.testing import make_reach

    reach = make_reach(plugin, config={"plugins": {"reach-weather": demo.settings()}}, data_dir=tmp_path)
    problems = {t.name: [p.message for p in lint_tool(t)] for t in reach.all_tools()}
    assert problems == {"get_weather": [], "get_forecast": []}


def test_settings_reject_a_base_url_without_scheme(tmp_path):
    from reach_core import ConfigError
    from reach_core.testing import make_reach

    with pytest.raises(ConfigError, match="reach-weather"):
        make_reach(plugin, config={"plugins": {"reach-weather": {"forecast_url": "api.open-meteo.com"}}},
                   data_dir=tmp_path)


def test_cli_command_is_added_to_the_root_group():
    import click

    root = click.Group("reach")
    plugin.reach_register_commands(root)
    assert "serve-demo" in root.commands["weather"].commands
