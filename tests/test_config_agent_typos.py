"""An agent name one slip away from a configured agent is logged, not silently defaulted.

``[agents.support]`` denies ``send_email``; code that says ``agent="Support"`` or
``agent="suport"`` runs under ``[agents.default]``, which allows it. That is the
documented rule (an agent without a table gets default's), so the call is not refused,
but nothing said so: now ``reach.config_unknown_agent`` names the table meant, once per
name. Unrelated names (``guest``) stay quiet, as do the configured ones.
"""

from __future__ import annotations

from typing import Any

import pytest

from reach_core import connector
from reach_core.testing import make_reach


@connector(risk="write")
def send_email(to: str) -> str:
    """Send an email."""
    return to


CONFIG = {"agents": {"support": {"deny": ["send_email"]}, "data-team": {"max_tier": "read"}}}
SLIPS = [("Support", "support"), ("SUPPORT", "support"), ("support ", "support"), (" support", "support"),
         ("suport", "support"), ("supprot", "support"), ("supportt", "support"), ("data_team", "data-team"),
         ("Data-Team", "data-team"), ("data-tem", "data-team"), ("datateam", "data-team")]
UNRELATED = ["guest", "billing", "default", "support", "data-team", "s", "researcher"]


def _events(caplog: Any) -> list[dict[str, Any]]:
    return [r.reach_event for r in caplog.records
            if getattr(r, "reach_event", {}).get("event") == "reach.config_unknown_agent"]


@pytest.mark.parametrize(("agent", "meant"), SLIPS)
async def test_a_slip_of_an_agent_name_is_logged_with_the_table_meant(tmp_path, caplog, agent, meant):
    reach = make_reach(config=CONFIG, data_dir=tmp_path)
    reach.register(send_email)
    with caplog.at_level("WARNING", logger="reach"):
        await reach.invoke("send_email", {"to": "x"}, agent=agent)
        await reach.invoke("send_email", {"to": "y"}, agent=agent)
    events = _events(caplog)
    assert len(events) == 1, events  # once per name
    assert events[0]["agent"] == agent and events[0]["meant"] == meant
    assert f"[agents.{meant}]" in events[0]["problem"]


@pytest.mark.parametrize("agent", UNRELATED)
async def test_positive_control_configured_and_unrelated_names_stay_quiet(tmp_path, caplog, agent):
    reach = make_reach(config=CONFIG, data_dir=tmp_path)
    reach.register(send_email)
    with caplog.at_level("WARNING", logger="reach"):
        await reach.invoke("send_email", {"to": "x"}, agent=agent)
    assert _events(caplog) == []


async def test_positive_control_the_configured_agent_is_still_denied(tmp_path):
    reach = make_reach(config=CONFIG, data_dir=tmp_path)
    reach.register(send_email)
    res = await reach.invoke("send_email", {"to": "x"}, agent="support")
    assert not res.ok and res.error.code == "denied"
