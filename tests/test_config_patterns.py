"""An allow/deny/approval pattern that can match no tool is a config error, not a silent no-op.

``risk:TIER`` compares the tier exactly and tool names hold no ``:``, so
``deny = ["risk:danger"]``, ``["risk:Dangerous"]``, ``["Risk:dangerous"]``,
``["tags:internal"]`` or ``["plugins:reach-shell"]`` denied nothing: the agent kept
every tool the pattern was written to take away (a typo that widened rights). Such
patterns are refused when the config is read, with the pattern meant; ``plugin:``
with an unknown plugin already was.
"""

from __future__ import annotations

import pytest

from reach_core import ConfigError, connector
from reach_core.testing import make_reach

NEVER = [
    ("risk:danger", "risk:dangerous"), ("risk:Dangerous", "risk:dangerous"), ("risk:DANGEROUS", "risk:dangerous"),
    ("risk:dangerous ", "risk:dangerous"), ("risk: dangerous", "risk:dangerous"), ("risk:writ", "risk:write"),
    ("risk:reads", "risk:read"), ("risk:", None), ("risk:*", None), ("risk:dangerou?", None),
    ("risk:dаngerous", "risk:dangerous"),  # Cyrillic а: quoted as 'risk:d\u0430ngerous'
    ("Risk:dangerous", "risk:dangerous"), ("RISK:write", "risk:write"), ("risks:write", "risk:write"),
    ("tags:internal", "tag:internal"), ("Tag:internal", "tag:internal"), ("plugins:reach-shell", "plugin:reach-shell"),
    ("Plugin:reach-shell", "plugin:reach-shell"), ("plugin :reach-shell", "plugin:reach-shell"),
    (" risk:write", "risk:write"), ("sql_admin:x", None), ("tier:dangerous", None), (":wipe", None),
]


@pytest.mark.parametrize("key", ["allow", "deny", "approval"])
@pytest.mark.parametrize(("pattern", "meant"), NEVER)
def test_a_pattern_that_can_match_no_tool_is_refused(tmp_path, key: str, pattern: str, meant: str | None) -> None:
    value = {pattern: "always"} if key == "approval" else [pattern]
    with pytest.raises(ConfigError) as err:
        make_reach(config={"agents": {"support": {key: value}}}, data_dir=tmp_path)
    text = str(err.value)
    assert f"[agents.support] {key}" in text and ascii(pattern)[1:-1] in text
    if meant is not None:
        assert f"did you mean `{meant}`" in text


@pytest.mark.parametrize("pattern", ["risk:read", "risk:write", "risk:dangerous", "tag:internal", "tag:mcp:files",
                                     "tag:two words", "tag:跑步", "wipe", "sql_*", "*", "get_[wx]eather"])
def test_patterns_that_can_match_are_accepted(tmp_path, pattern: str) -> None:
    make_reach(config={"agents": {"support": {"deny": [pattern], "allow": [pattern],
                                              "approval": {pattern: "always"}}}}, data_dir=tmp_path)


def test_control_a_misspelt_risk_pattern_denied_nothing(tmp_path) -> None:
    """What the refused config did: the agent could still run the dangerous tool."""
    from reach_core.policy import Policy

    @connector(risk="dangerous")
    def wipe(target: str) -> str:
        """Wipe."""
        return target

    reach = make_reach(config={"agents": {"support": {"deny": ["risk:dangerous"]}}}, data_dir=tmp_path)
    reach.register(wipe)
    tool = reach.tool("wipe")
    assert not reach.policy("support").allows(tool)
    from reach_core.config import AgentConfig

    typo = Policy("support", AgentConfig(deny=["risk:danger"]))
    assert typo.allows(tool)  # the pattern matched nothing: why it must not get past config


async def test_a_misspelt_deny_never_reaches_a_call(tmp_path) -> None:
    @connector(risk="dangerous")
    def wipe(target: str) -> str:
        """Wipe."""
        return target

    for pattern in ("risk:danger", "Risk:dangerous"):
        with pytest.raises(ConfigError):
            reach = make_reach(config={"agents": {"support": {"deny": [pattern], "auto_tier": "dangerous"}}},
                               data_dir=tmp_path)
            reach.register(wipe)
            await reach.invoke({"name": "wipe", "arguments": {"target": "all"}}, agent="support")
