"""What the guard rails remember about one run (in memory; a run lives in one process).

Per run: how many calls were made (all tools; per tool only for tools with a
per-run cap), and one *record* per exact call (tool + arguments): how often it
was made, the last good result (replayed by the identical-call guard and the
read cache), and how often it failed in a row. Runs are kept in a bounded LRU
so a long-lived server does not grow without limit.

A record is a plain list indexed by the constants below, not an object: one is
made for every new exact call in a run, and a list literal is the cheapest
mutable thing Python can allocate (this bookkeeping sits on every call's path).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunState", "Runs", "call_key", "COUNT", "LAST_OK", "FAILED", "LAST_ERROR", "EPOCH"]

#: record fields: times called; last good result (``ToolResult`` or ``None``); failures
#: in a row; the last failure's message; the run's write epoch when LAST_OK was stored
COUNT, LAST_OK, FAILED, LAST_ERROR, EPOCH = range(5)


def call_key(args: dict[str, Any]) -> Any:
    """A hashable, order-independent key of the arguments; cheap for flat dicts.

    A frozenset of the items: no sorting, and its hash is computed once and kept,
    so the several dict lookups a run makes with one key do not hash it again.
    """
    try:
        return frozenset(args.items())
    except TypeError:  # nested lists/dicts: fall back to canonical JSON
        return json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(slots=True)
class RunState:
    """One run's counters and records. ``epoch`` grows with every write that ran, so
    the read cache keeps only results stored in the current epoch."""

    calls: int = 0
    records: dict[tuple[str, Any], list[Any]] = field(default_factory=dict)
    per_tool: dict[str, int] = field(default_factory=dict)
    epoch: int = 0


class Runs:
    """Bounded map run id -> :class:`RunState` (least recently used dropped first)."""

    def __init__(self, max_runs: int = 4096) -> None:
        self._runs: OrderedDict[str, RunState] = OrderedDict()
        self._max = max_runs
        self._last_id: str | None = None
        self._last = RunState()

    def get(self, run_id: str) -> RunState:
        if run_id == self._last_id:  # the run of the previous call: already the most recent
            return self._last
        state = self._runs.get(run_id)
        if state is None:
            state = self._runs[run_id] = RunState()
            if len(self._runs) > self._max:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(run_id)
        self._last_id, self._last = run_id, state
        return state

    def peek(self, run_id: str) -> RunState | None:
        return self._runs.get(run_id)

    def alias(self, child: str, parent: str) -> None:
        """Let run ``child`` share ``parent``'s state: a delegated run's calls count
        against the parent run's limits (max_calls_per_run, identical-call guard ...)."""
        self._runs[child] = self.get(parent)
        self._last_id = None

    def end(self, run_id: str) -> None:
        """Forget a finished run (the agent loop may call this)."""
        self._runs.pop(run_id, None)
        self._last_id = None
