"""Red team: a pin holds whether a reviewed tool runs at most once.

A pin recorded the words and the tier of a tool, not ``idempotent``. That flag decides
whether a failed call is retried and whether a call is answered again from a replay,
so a plugin update (or an MCP server sending ``idempotentHint``) that kept the words
and the tier and only declared a reviewed ``charge_card`` idempotent kept its pin and
would be retried after a timeout: charged twice. Now that change blocks the tool until
a person pins it again; the other way round (now at most once) is believed, and
``[connectors.NAME] idempotent = false`` restores the reviewed behaviour.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from reach_core import Connector, connector
from reach_core.testing import make_reach

RAN: list[str] = []
SCHEMA = {"type": "object", "properties": {"cents": {"type": "integer", "description": "amount to charge"}}}


def _class_tool(risk: str, idempotent: bool | None) -> Connector:
    class Charge(Connector):
        name = "charge_card"
        description = "Charge the customer's card."
        input_schema = SCHEMA

        async def execute(self, params: Any) -> str:
            RAN.append("charge_card")
            return "charged"

    tool = Charge()
    tool.risk = risk  # type: ignore[assignment]
    tool.idempotent = idempotent  # as an MCP connector sets it from the server's idempotentHint
    return tool


def _function_tool(risk: str, idempotent: bool | None) -> Connector:
    @connector(risk=risk, name="charge_card", idempotent=idempotent)
    async def charge(cents: int = 0) -> str:
        """Charge the customer's card."""
        RAN.append("charge_card")
        return "charged"

    return charge  # type: ignore[no-any-return]


FORMS = {"class": _class_tool, "function": _function_tool}
# (tier, idempotent as pinned) -> idempotent now; None is the default for the tier (False above read)
WIDENED = [("write", None, True), ("write", False, True), ("dangerous", None, True), ("dangerous", False, True)]


def _reach(tmp_path: Any, form: str, risk: str, idempotent: bool | None, config: dict[str, Any] | None = None):
    reach = make_reach(config=config, data_dir=tmp_path)
    reach.register(FORMS[form](risk, idempotent))
    return reach


@pytest.mark.parametrize(("risk", "pinned", "now"), WIDENED)
@pytest.mark.parametrize("form", FORMS)
async def test_a_pinned_run_once_tool_now_idempotent_is_blocked(tmp_path, form, risk, pinned, now):
    _reach(tmp_path, form, risk, pinned).pin_tools()
    later = _reach(tmp_path, form, risk, now, {"agents": {"default": {"auto_tier": "dangerous"}}})
    RAN.clear()
    assert later.tools() == []
    result = await later.invoke("charge_card", {"cents": 100})
    assert not result.ok and result.error.code == "denied", result
    assert "not idempotent" in result.error.message
    assert "reach tools pin charge_card" in result.meta["fix"]
    assert RAN == []


@pytest.mark.parametrize(("risk", "pinned", "now"), WIDENED)
async def test_the_operator_can_keep_the_reviewed_behaviour(tmp_path, risk, pinned, now):
    _reach(tmp_path, "class", risk, pinned).pin_tools()
    later = _reach(tmp_path, "class", risk, now, {"connectors": {"charge_card": {"idempotent": False}},
                                                   "agents": {"default": {"auto_tier": "dangerous"}}})
    assert later.tool("charge_card").blocked is None
    assert later.tool("charge_card").idempotent is False
    RAN.clear()
    assert (await later.invoke("charge_card", {"cents": 100})).ok and RAN == ["charge_card"]


@pytest.mark.parametrize(("risk", "pinned", "now"), WIDENED)
async def test_pinning_again_accepts_the_change(tmp_path, risk, pinned, now):
    _reach(tmp_path, "function", risk, pinned).pin_tools()
    later = _reach(tmp_path, "function", risk, now, {"agents": {"default": {"auto_tier": "dangerous"}}})
    later.pin_tools(["charge_card"])
    assert later.tool("charge_card").blocked is None
    assert json.loads((tmp_path / "pins.json").read_text())["idempotent"] == {"charge_card": True}


@pytest.mark.parametrize(("risk", "pinned", "now"), [("write", True, None), ("write", True, False),
                                                     ("read", None, False), ("write", None, False),
                                                     ("write", True, True), ("read", None, None)])
@pytest.mark.parametrize("form", FORMS)
def test_positive_control_same_or_now_run_once_keeps_its_pin(tmp_path, form, risk, pinned, now):
    _reach(tmp_path, form, risk, pinned).pin_tools()
    assert _reach(tmp_path, form, risk, now).tool("charge_card").blocked is None


def test_positive_control_pins_written_before_this_check_the_rest_only(tmp_path):
    _reach(tmp_path, "class", "write", False).pin_tools()
    path = tmp_path / "pins.json"
    data = json.loads(path.read_text())
    assert data["idempotent"] == {"charge_card": False}
    path.write_text(json.dumps({"tools": data["tools"], "tiers": data["tiers"]}))  # an older pin file
    assert _reach(tmp_path, "class", "write", True).tool("charge_card").blocked is None


def test_pinning_never_writes_through_a_link_planted_beside_the_pins(tmp_path):
    """The pins used to be written to a fixed ``pins.tmp`` first, following a link planted there."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    for name in ("pins.tmp", ".pins.json.tmp"):
        (tmp_path / name).symlink_to(victim)
    _reach(tmp_path, "class", "write", False).pin_tools()
    assert victim.read_text() == "keep me"
    assert json.loads((tmp_path / "pins.json").read_text())["tools"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".pins.json.tmp", "pins.json", "pins.tmp", "victim.txt"]
