"""Registration refuses what would break a model or the pipeline, at once and clearly."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from reach_core import Connector, ConnectorError, ReachError, connector
from reach_core.testing import make_reach


class Named(Connector):
    risk = "read"
    description = "A tool used for registration tests. Use when testing."

    def __init__(self, name, schema=None):
        self.name = name
        if schema is not None:
            self.input_schema = schema

    async def execute(self, params):
        return params


def test_duplicate_name_refused(tmp_path):
    reach = make_reach(data_dir=tmp_path)
    reach.register(Named("lookup_item"))
    with pytest.raises(ConnectorError, match="already registered"):
        reach.register(Named("lookup_item"))


@pytest.mark.parametrize("name", ["", "has space", "dots.are.bad", "x" * 65, "天气", None])
def test_illegal_names_refused(tmp_path, name):
    reach = make_reach(data_dir=tmp_path)
    with pytest.raises(ConnectorError, match="not allowed"):
        reach.register(Named(name))


def test_name_limits_accepted(tmp_path):
    reach = make_reach(data_dir=tmp_path)
    reach.register(Named("a" * 64))
    reach.register(Named("get-item_2"))
    assert {t["function"]["name"] for t in reach.tools()} == {"a" * 64, "get-item_2"}


def test_invalid_json_schema_refused(tmp_path):
    reach = make_reach(data_dir=tmp_path)
    with pytest.raises(ConnectorError, match="not valid JSON Schema"):
        reach.register(Named("bad_schema", {"type": "object", "properties": {"a": {"type": "strng"}}}))


def test_non_object_top_level_refused(tmp_path):
    reach = make_reach(data_dir=tmp_path)
    with pytest.raises(ConnectorError, match="type 'object'"):
        reach.register(Named("bad_top", {"type": "array", "items": {"type": "string"}}))


def test_errors_are_reach_errors():
    assert issubclass(ConnectorError, ReachError)


@pytest.mark.parametrize("schema", [None, {}])
def test_no_parameters_normalised_to_empty_object(tmp_path, schema):
    reach = make_reach(data_dir=tmp_path)
    reach.register(Named("ping_server", schema))
    params = reach.tools()[0]["function"]["parameters"]
    assert params == {"type": "object", "properties": {}}


def test_class_and_instance_errors(tmp_path):
    reach = make_reach(data_dir=tmp_path)
    with pytest.raises(ConnectorError):
        reach.register(object())  # type: ignore[arg-type]


def test_connector_from_typed_function_docstring_and_annotated(tmp_path):
    @connector(risk="read")
    def search_flights(
        origin: Annotated[str, Field(description="IATA code of the departure airport, e.g. PEK")],
        date: str,
        cabin: Literal["economy", "business"] = "economy",
        max_results: int = 5,
    ) -> list[str]:
        """Search flights. Use when the user wants to fly somewhere.

        Args:
            origin: ignored because Annotated wins
            date: departure day, e.g. 2024-05-01
            max_results: how many flights to return
        """
        return []

    reach = make_reach(data_dir=tmp_path)
    reach.register(search_flights)
    fn = reach.tools()[0]["function"]
    assert fn["description"] == "Search flights. Use when the user wants to fly somewhere."
    props = fn["parameters"]["properties"]
    assert props["origin"]["description"].startswith("IATA code")
    assert props["date"]["description"] == "departure day, e.g. 2024-05-01"
    assert props["cabin"]["enum"] == ["economy", "business"]
    assert props["max_results"]["default"] == 5
    assert fn["parameters"]["required"] == ["origin", "date"]
    assert reach.tool("search_flights").output_schema == {"type": "array", "items": {"type": "string"}}
    # the decorated object still calls the plain function
    assert search_flights("PEK", "2024-05-01") == []


def test_args_model_connector(tmp_path):
    class Booking(Connector):
        name = "book_room"
        description = "Book a meeting room. Use when the user asks to reserve a room."
        risk = "write"

        class Args(BaseModel):
            room: str = Field(description="room name")
            hours: int = Field(ge=1, le=8, description="duration in hours")

        async def execute(self, params, ctx):
            assert isinstance(params, Booking.Args)
            return {"room": params.room, "hours": params.hours}

    reach = make_reach(data_dir=tmp_path)
    reach.register(Booking())
    params = reach.tools()[0]["function"]["parameters"]
    assert params["properties"]["hours"]["maximum"] == 8
    assert "title" not in params


def test_defaults_safe(tmp_path):
    class Plain(Connector):
        name = "do_thing"
        description = "x"

        async def execute(self, params):
            return 1

    reach = make_reach(data_dir=tmp_path)
    reach.register(Plain())
    tool = reach.tool("do_thing")
    assert tool.risk == "write" and tool.idempotent is False and tool.timeout == 15


def test_strict_declarations(reach):
    fn = reach.tools(strict=True, names=["get_weather"])[0]["function"]
    assert fn["strict"] is True
    params = fn["parameters"]
    assert params["additionalProperties"] is False
    assert sorted(params["required"]) == ["city", "unit"]
    assert params["properties"]["unit"]["type"] == ["string", "null"]


def test_get_and_connectors(reach):
    assert reach.get("add").name == "add"
    assert {c.name for c in reach.connectors()} == {"add", "get_weather"}
    with pytest.raises(KeyError):
        reach.get("nope")


def _undocumented_function():
    from reach_core import connector

    @connector(risk="read")
    def mystery(a: int) -> int:
        return a

    return mystery


def _undocumented_class(description):
    from reach_core import Connector

    class Mystery(Connector):
        name = "mystery"
        risk = "read"
        input_schema = {"type": "object", "properties": {}}

        async def execute(self, params, ctx):
            return 1

    Mystery.description = description
    return Mystery()


@pytest.mark.parametrize("make", [
    _undocumented_function,
    lambda: _undocumented_class(""),
    lambda: _undocumented_class("   \n\t "),
    lambda: _undocumented_class(None),
])
def test_a_tool_without_a_description_is_refused_unless_config_allows_it(make):
    from reach_core import ConnectorError, Reach

    with pytest.raises(ConnectorError, match="no description.*allow_undocumented"):
        Reach(plugins=[]).register(make())
    reach = Reach({"reach": {"allow_undocumented": True}}, plugins=[])
    reach.register(make())
    assert [t["function"]["name"] for t in reach.tools()] == ["mystery"]


def test_a_description_from_config_documents_a_tool():
    from reach_core import Reach

    reach = Reach({"connectors": {"mystery": {"description": "A documented mystery. Use for tests."}}}, plugins=[])
    reach.register(_undocumented_class(""))
    assert reach.tools()[0]["function"]["description"] == "A documented mystery. Use for tests."
