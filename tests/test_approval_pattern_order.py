"""An agent's ``approval`` patterns: the strictest that matches wins, in any order written.

The walk-around this closes: ``approval = { "get_*" = "never", "risk:dangerous" = "always" }``
let a dangerous ``get_*`` tool run with nobody asked, because the first pattern written
won, and a TOML table's order is not something a reader checks. Now, among patterns, the
mode that asks most wins (``once`` and ``run`` together ask as ``always``); the tool's own
name still wins over every pattern, since that is a deliberate choice about one tool.

Real pipeline, no confirmer installed: a call that needs a person is refused and the
tool never runs.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from reach_core import connector
from reach_core.testing import make_reach

RAN: list[str] = []


@connector(risk="dangerous", tags=("vault", "secrets"))
def get_secrets(name: str) -> str:
    """Read a secret from the vault."""
    RAN.append(name)
    return "s3cr3t"


@connector(risk="read", tags=("vault",))
def get_time(zone: str) -> str:
    """The time in a zone."""
    RAN.append(zone)
    return "12:00"


# patterns that match get_secrets and set it loose, and patterns that ask a person for it
LOOSE = ["get_*", "*", "*secret*", "get_?ecrets", "[g]et_secrets", "tag:vault", "tag:secrets", "get_s*"]
STRICT = ["risk:dangerous", "dangerous", "tag:secrets", "tag:vault", "*_secrets", "get_*"]
ASKING = ["once", "run", "always"]

CASES = [(loose, strict, mode) for loose, strict, mode in itertools.product(LOOSE, STRICT, ASKING) if loose != strict]


def _reach(tmp_path: Any, approval: dict[str, str]) -> Any:
    reach = make_reach(config={"agents": {"a": {"approval": approval}}}, data_dir=tmp_path)
    reach.register(get_secrets)
    reach.register(get_time)
    return reach


@pytest.mark.parametrize("loose,strict,mode", CASES)
@pytest.mark.parametrize("loose_first", [True, False], ids=["loose-first", "strict-first"])
async def test_a_loose_pattern_never_overrides_a_stricter_one(tmp_path, loose, strict, mode, loose_first) -> None:
    approval = {loose: "never", strict: mode} if loose_first else {strict: mode, loose: "never"}
    reach = _reach(tmp_path, approval)
    await reach.start()
    try:
        assert reach.policy("a").approval_mode(reach.tool("get_secrets")) == mode
        RAN.clear()
        res = await reach.invoke("get_secrets", {"name": "db"}, agent="a")
        assert not res.ok and res.error is not None
        assert res.error.code in ("needs_confirmation", "denied")
        assert RAN == []
    finally:
        await reach.aclose()


@pytest.mark.parametrize("first,second", [("once", "run"), ("run", "once")])
async def test_once_and_run_together_ask_every_time(tmp_path, first, second) -> None:
    reach = _reach(tmp_path, {"get_*": first, "tag:secrets": second})
    await reach.start()
    try:
        assert reach.policy("a").approval_mode(reach.tool("get_secrets")) == "always"
    finally:
        await reach.aclose()


@pytest.mark.parametrize("pattern", ["risk:dangerous", "dangerous", "tag:secrets", "get_*", "*"])
async def test_the_tools_own_name_wins_over_every_pattern(tmp_path, pattern) -> None:
    reach = _reach(tmp_path, {pattern: "always", "get_secrets": "never"})
    await reach.start()
    try:
        assert reach.policy("a").approval_mode(reach.tool("get_secrets")) == "never"
        RAN.clear()
        res = await reach.invoke("get_secrets", {"name": "db"}, agent="a")
        assert res.ok and RAN == ["db"]
    finally:
        await reach.aclose()


@pytest.mark.parametrize("loose", LOOSE)
async def test_a_loose_pattern_alone_still_runs_unattended(tmp_path, loose) -> None:
    reach = _reach(tmp_path, {loose: "never"})
    await reach.start()
    try:
        RAN.clear()
        res = await reach.invoke("get_secrets", {"name": "db"}, agent="a")
        assert res.ok and RAN == ["db"]
    finally:
        await reach.aclose()


async def test_a_strict_pattern_that_does_not_match_leaves_the_loose_one(tmp_path) -> None:
    reach = _reach(tmp_path, {"get_*": "never", "risk:dangerous": "always"})
    await reach.start()
    try:
        assert reach.policy("a").approval_mode(reach.tool("get_time")) == "never"
        RAN.clear()
        assert (await reach.invoke("get_time", {"zone": "UTC"}, agent="a")).ok and RAN == ["UTC"]
    finally:
        await reach.aclose()
