"""Per-agent usage as a bounded prior: tools an agent keeps calling when offered win ties.

What it counts is what reach-audit reports as "offered → called": each time the
selector offers tools to an agent, and each call that agent then makes. A tool's
*rate* is `called / (offered + 2)` (the +2 keeps one lucky call from counting as
certainty), in [0, 1).

How it may change a ranking, and how it may not:

* the bonus is `max_boost * rate`, added to the fused score (whose signals are
  z-scores), so a tool can only overtake tools whose score is within `max_boost` of
  its own: close candidates are reordered, a tool far down is never lifted into the
  top k, whatever its counts;
* only tools that already score above the candidates' mean get a bonus (an unrelated
  tool scores near or below it);
* nothing until the agent has `min_calls` calls recorded (off by default in the
  settings besides), and one agent's counts never touch another's ranking.

Counts live in memory, per selector (one per Reach); `seed` loads counts a caller
already has (for example from reach-audit's records).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

#: at most this many agents are tracked (oldest dropped), so a caller inventing agent
#: names cannot grow the table without bound.
MAX_AGENTS = 1024


class UsagePrior:
    """Offered / called counts per agent and tool, and the bonus they earn."""

    def __init__(self, *, max_boost: float = 2.0, min_calls: int = 20) -> None:
        self.max_boost = float(max_boost)
        self.min_calls = int(min_calls)
        self._offered: dict[str, dict[str, int]] = {}
        self._called: dict[str, dict[str, int]] = {}
        self._calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def _agent(self, agent: str) -> tuple[dict[str, int], dict[str, int]]:
        offered = self._offered.get(agent)
        if offered is None:
            if len(self._offered) >= MAX_AGENTS:
                oldest = next(iter(self._offered))
                for table in (self._offered, self._called, self._calls):
                    table.pop(oldest, None)
            offered = self._offered[agent] = {}
            self._called[agent] = {}
            self._calls[agent] = 0
        return offered, self._called[agent]

    def record_offer(self, agent: str, names: Iterable[str]) -> None:
        with self._lock:
            offered, _ = self._agent(agent)
            for name in names:
                offered[name] = offered.get(name, 0) + 1

    def record_call(self, agent: str, name: str) -> None:
        with self._lock:
            offered, called = self._agent(agent)
            called[name] = called.get(name, 0) + 1
            # a call of a tool never offered (found by name, or through find_tools)
            # counts as offered once too, so the rate stays below 1
            offered[name] = max(offered.get(name, 0), called[name])
            self._calls[agent] += 1

    def seed(self, agent: str, offered: Mapping[str, int], called: Mapping[str, int]) -> None:
        """Start from counts kept elsewhere (e.g. reach-audit's offered/chosen per tool)."""
        with self._lock:
            mine_offered, mine_called = self._agent(agent)
            for name, n in offered.items():
                mine_offered[name] = mine_offered.get(name, 0) + max(int(n), 0)
            for name, n in called.items():
                mine_called[name] = mine_called.get(name, 0) + max(int(n), 0)
                mine_offered[name] = max(mine_offered.get(name, 0), mine_called[name])
                self._calls[agent] += max(int(n), 0)

    def calls(self, agent: str) -> int:
        return self._calls.get(agent, 0)

    def active(self, agent: str) -> bool:
        return self.max_boost > 0 and self._calls.get(agent, 0) >= self.min_calls

    def bonuses(self, agent: str) -> dict[str, float]:
        """Tool name -> bonus in [0, max_boost) for this agent ({} until active)."""
        with self._lock:
            if not self.active(agent):
                return {}
            offered, called = self._offered[agent], self._called[agent]
            return {
                name: self.max_boost * n / (offered.get(name, n) + 2)
                for name, n in called.items()
                if n > 0
            }
