"""A small, realistic tool set (the kind an assistant ships with) and Reach builders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import reach_preselect.plugin as preselect_plugin

from reach_core import Connector
from reach_core.testing import make_reach

# name, description, parameters {name: description}, tags
TOOLS: list[tuple[str, str, dict[str, str], tuple[str, ...]]] = [
    ("get_weather", "Current weather (temperature, wind, humidity) for a city.",
     {"city": "City name, e.g. Paris"}, ("weather",)),
    ("get_forecast", "Weather forecast for the next days for a city.",
     {"city": "City name", "days": "Number of days ahead, 1-14"}, ("weather",)),
    ("convert_currency", "Convert an amount of money from one currency to another at today's exchange rate.",
     {"amount": "Amount to convert", "from_currency": "ISO code, e.g. USD",
      "to_currency": "ISO code, e.g. EUR"}, ("finance",)),
    ("get_stock_price", "Latest stock price of a listed company by ticker symbol.",
     {"ticker": "Ticker symbol, e.g. AAPL"}, ("finance",)),
    ("send_email", "Send an email message to a recipient.",
     {"to": "Recipient email address", "subject": "Subject line", "body": "Message text"}, ("communication",)),
    ("create_calendar_event", "Create a calendar event (meeting, appointment) at a date and time.",
     {"title": "Event title", "start": "Start time, ISO 8601",
      "duration_minutes": "Length of the event"}, ("calendar",)),
    ("search_flights", "Search flights between two airports on a date.",
     {"origin": "Departure airport or city", "destination": "Arrival airport or city",
      "date": "Travel date"}, ("travel",)),
    ("book_hotel", "Book a hotel room in a city for given check-in and check-out dates.",
     {"city": "City", "check_in": "Arrival date", "check_out": "Departure date",
      "guests": "Number of guests"}, ("travel",)),
    ("translate_text", "Translate text from one language into another.",
     {"text": "Text to translate", "target_language": "Language to translate into"}, ("language",)),
    ("calculate", "Evaluate an arithmetic expression and return the number.",
     {"expression": "Expression such as (3+4)*2"}, ("math",)),
    ("read_file", "Read a text file from the workspace and return its content.",
     {"path": "Path of the file"}, ("files",)),
    ("run_sql_query", "Run a read-only SQL query on the sales database and return rows.",
     {"query": "SQL SELECT statement"}, ("database",)),
    ("create_note", "Save a short note to the user's notebook.",
     {"title": "Note title", "text": "Note body"}, ("notes",)),
    ("set_reminder", "Remind the user of something at a given time.",
     {"message": "What to remind", "at": "When, ISO 8601"}, ("calendar",)),
    ("search_news", "Search recent news articles about a topic.",
     {"topic": "Topic or keywords"}, ("news",)),
    ("convert_units", "Convert a measurement between units (km to miles, kg to pounds, Celsius to Fahrenheit).",
     {"value": "Number to convert", "from_unit": "Unit of the value", "to_unit": "Unit wanted"}, ("math",)),
]


class DeclaredTool(Connector):
    """A read-only connector built from a declaration; selection never runs it."""

    risk = "read"

    def __init__(self, name: str, description: str, params: dict[str, str], tags: tuple[str, ...] = ()) -> None:
        self.name = name
        self.description = description
        self.tags = tags
        self.input_schema = {
            "type": "object",
            "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
            "required": list(params)[:1],
        }

    async def execute(self, params: dict[str, Any]) -> Any:
        return {"ok": True, "tool": self.name}


def tool_connectors() -> list[DeclaredTool]:
    return [DeclaredTool(*spec) for spec in TOOLS]


def build(data_dir: Path, settings: dict[str, Any] | None = None, **config: Any) -> Any:
    """A Reach with only reach-preselect loaded and the realistic tools registered."""
    cfg: dict[str, Any] = {"plugins": {"reach-preselect": settings or {}}, **config}
    reach = make_reach(preselect_plugin, config=cfg, data_dir=data_dir)
    for c in tool_connectors():
        reach.register(c)
    return reach


def names(entries: list[dict[str, Any]]) -> list[str]:
    return [e["function"]["name"] for e in entries]


@pytest.fixture
def reach(tmp_path: Path) -> Any:
    return build(tmp_path)
