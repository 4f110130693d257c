"""The core's rule for imported tools (``Connector.imported``: a name from a document someone
else serves): they step aside for a tool registered otherwise, never both unavailable; two
imported tools of one name from two plugins, or two plugins' own tools, still conflict."""

from __future__ import annotations

from typing import Any

import pytest

from reach_core import Connector, Reach, hookimpl


def _tool(name: str, *, imported: bool) -> Connector:
    class T(Connector):
        description = "A tool for the test. Use when the test asks."
        risk = "read"
        input_schema = {"type": "object", "properties": {}}

        async def execute(self, params: Any) -> str:
            return self.name

    T.imported = imported
    t = T()
    t.name = name
    return t


class _Plugin:
    def __init__(self, *tools: Connector) -> None:
        self.tools = tools

    @hookimpl
    def reach_register_tools(self, register: Any) -> None:
        for t in self.tools:
            register(t)


def _reach(tmp_path, *plugins: tuple[str, Connector], connectors: dict[str, Any] | None = None) -> Reach:
    return Reach({"reach": {"data_dir": str(tmp_path)}, "connectors": connectors or {}},
                 plugins=[(name, _Plugin(tool)) for name, tool in plugins])


@pytest.mark.parametrize("order", [1, -1], ids=["own-first", "imported-first"])
@pytest.mark.parametrize("name", ["lookup", "LOOKUP", "Lookup", "look-up", "look_up", "LOOK-UP"])
def test_an_imported_tool_steps_aside_for_a_plugins_own(tmp_path, name, order):
    own = "look_up" if "-" in name or "_" in name else "lookup"
    reach = _reach(tmp_path, *[("own", _tool(own, imported=False)), ("remote", _tool(name, imported=True))][::order])
    assert reach.conflicts == {}
    assert [(t.name, t.plugin) for t in reach.all_tools()] == [(own, "own")]


def test_two_imported_tools_of_one_name_still_conflict(tmp_path):
    reach = _reach(tmp_path, ("a", _tool("lookup", imported=True)), ("b", _tool("lookup", imported=True)))
    assert reach.conflicts == {"lookup": ["a", "b"]} and reach.all_tools() == []


def test_two_plugins_own_tools_still_conflict(tmp_path):
    reach = _reach(tmp_path, ("a", _tool("lookup", imported=False)), ("b", _tool("lookup", imported=False)),
                   ("c", _tool("lookup_2", imported=True)))
    assert reach.conflicts == {"lookup": ["a", "b"]} and [t.name for t in reach.all_tools()] == ["lookup_2"]


def test_the_operator_may_choose_the_imported_one(tmp_path):
    reach = _reach(tmp_path, ("own", _tool("lookup", imported=False)), ("remote", _tool("lookup", imported=True)),
                   connectors={"lookup": {"provider": "remote"}})
    assert [(t.name, t.plugin) for t in reach.all_tools()] == [("lookup", "remote")]
