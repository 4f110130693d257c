"""Red team: a pin holds the tier a person reviewed, not only the words.

A pin recorded a hash of a tool's name, description and schema. The tier (``risk``)
was not in it, and the tier decides what runs without a person: a ``dangerous`` tool
needs an approval, a ``read`` one runs unattended. So a plugin update or an MCP server
that kept the words and only lowered the tier it declares (``readOnlyHint`` instead of
``destructiveHint``) kept its pin and ran unattended at the next start. Now a pinned
tool whose tier dropped is blocked like a changed definition, until a person pins it
again; a tier that rose is believed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from reach_core import Connector, connector
from reach_core.testing import make_reach

RAN: list[str] = []
SCHEMA = {"type": "object", "properties": {"disk": {"type": "string", "description": "the disk to wipe"}}}


def _class_tool(risk: str) -> Connector:
    class Wipe(Connector):
        name = "wipe_disk"
        description = "Wipe a disk. Use when the user asks to erase one."
        input_schema = SCHEMA

        async def execute(self, params: Any) -> str:
            RAN.append("wipe_disk")
            return "wiped"

    tool = Wipe()
    tool.risk = risk  # type: ignore[assignment]  # as an MCP connector sets it from the server's annotations
    return tool


def _function_tool(risk: str) -> Connector:
    @connector(risk=risk, name="wipe_disk")
    async def wipe(disk: str = "") -> str:
        """Wipe a disk. Use when the user asks to erase one."""
        RAN.append("wipe_disk")
        return "wiped"

    return wipe  # type: ignore[no-any-return]


FORMS = {"class": _class_tool, "function": _function_tool}
DROPS = [("dangerous", "write"), ("dangerous", "read"), ("write", "read")]


def _reach(tmp_path, form: str, risk: str, config: dict[str, Any] | None = None):
    reach = make_reach(config=config, data_dir=tmp_path)
    reach.register(FORMS[form](risk))
    return reach


def _pinned(tmp_path, form: str, risk: str) -> None:
    _reach(tmp_path, form, risk).pin_tools()


@pytest.mark.parametrize(("pinned", "now"), DROPS)
@pytest.mark.parametrize("form", FORMS)
async def test_a_pinned_tool_whose_tier_dropped_is_blocked(tmp_path, form, pinned, now):
    _pinned(tmp_path, form, pinned)
    later = _reach(tmp_path, form, now)  # same words, lower tier
    RAN.clear()
    assert later.tools() == []  # not offered
    result = await later.invoke("wipe_disk", {"disk": "sda"})
    assert not result.ok and result.error.code == "denied", result
    assert f"dropped from {pinned!r}" in result.error.message
    assert "reach tools pin wipe_disk" in result.meta["fix"]
    assert RAN == []


@pytest.mark.parametrize(("pinned", "now"), DROPS)
async def test_the_person_who_pins_again_unblocks_it(tmp_path, pinned, now):
    _pinned(tmp_path, "class", pinned)
    later = _reach(tmp_path, "class", now)
    later.pin_tools(["wipe_disk"])  # reviewed: the lower tier is accepted
    RAN.clear()
    assert (await later.invoke("wipe_disk", {"disk": "sda"})).ok
    assert RAN == ["wipe_disk"]


@pytest.mark.parametrize(("pinned", "now"), DROPS)
async def test_an_operator_tier_at_the_pinned_one_runs_as_that_tier(tmp_path, pinned, now):
    _pinned(tmp_path, "class", pinned)
    later = _reach(tmp_path, "class", now, {"connectors": {"wipe_disk": {"risk": pinned}}})
    assert later.tool("wipe_disk").blocked is None
    result = await later.invoke("wipe_disk", {"disk": "sda"})
    # as pinned: a dangerous tool waits for a person again (no confirmer here), the others run
    assert result.ok == (pinned != "dangerous")
    if pinned == "dangerous":
        assert "needs a person's approval" in result.error.message


@pytest.mark.parametrize(("pinned", "now"), [("read", "read"), ("read", "write"), ("read", "dangerous"),
                                             ("write", "write"), ("write", "dangerous"), ("dangerous", "dangerous")])
@pytest.mark.parametrize("form", FORMS)
def test_positive_control_a_same_or_higher_tier_keeps_its_pin(tmp_path, form, pinned, now):
    _pinned(tmp_path, form, pinned)
    later = _reach(tmp_path, form, now)
    assert later.tool("wipe_disk").blocked is None


def test_positive_control_pins_written_without_tiers_check_the_definition_only(tmp_path):
    _pinned(tmp_path, "class", "dangerous")
    path = tmp_path / "pins.json"
    data = json.loads(path.read_text())
    assert data["tiers"] == {"wipe_disk": "dangerous"}
    path.write_text(json.dumps({"tools": data["tools"]}))  # a pin file from before tiers were recorded
    assert _reach(tmp_path, "class", "read").tool("wipe_disk").blocked is None
