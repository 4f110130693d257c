"""``reach tools lint`` rules."""

from __future__ import annotations

from reach_core import Connector, connector
from reach_core.lint import lint_tool
from reach_core.testing import make_reach


def _rules(tmp_path, obj):
    reach = make_reach(data_dir=tmp_path)
    reach.register(obj)
    return {p.rule for p in lint_tool(reach.all_tools()[0])}


def test_good_tool_passes(tmp_path):
    from reach_test_support import GetWeather

    assert _rules(tmp_path, GetWeather()) == set()


def test_bad_tool_flags_everything(tmp_path):
    class Bad(Connector):
        name = "weather"
        description = "weather"
        input_schema = {
            "type": "object",
            "properties": {
                "day": {"type": "string", "format": "date"},
                "unit": {"type": "string", "description": "one of celsius or fahrenheit"},
                **{f"f{i}": {"type": "string", "description": "x"} for i in range(6)},
            },
            "required": [f"f{i}" for i in range(6)],
        }

        async def execute(self, params):
            return None

    rules = _rules(tmp_path, Bad())
    assert {"verb_noun", "description", "param_description", "format_example", "enum", "required", "risk"} <= rules


def test_when_to_use_rule(tmp_path):
    @connector(risk="read")
    def get_stock_price(symbol: str) -> float:
        """Returns the latest traded price of a stock symbol on an exchange.

        Args:
            symbol: ticker, e.g. AAPL
        """
        return 1.0

    assert _rules(tmp_path, get_stock_price) == {"when_to_use"}


def test_lint_ignore_names_rules_a_tool_knowingly_breaks(tmp_path):
    class Schema(Connector):
        name = "sql_schema"
        description = "List the tables. Use when you need to know which tables exist."
        risk = "read"
        lint_ignore = ("verb_noun",)

        async def execute(self, params):
            return []

    assert _rules(tmp_path, Schema()) == set()
