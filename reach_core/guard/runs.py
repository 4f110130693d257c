"""What the guard rails remember about one run (in memory; a run lives in one process).

Per run: how many calls were made, and how often each tool (for tools with a
per-run cap) and each exact call (tool + arguments) was made; then, only for the
calls that need it, the last good result (kept once a call is repeated, for the
identical-call guard and the read cache) and failures in a row. Runs are kept in
a bounded LRU so a long-lived server does not grow without limit.

A run's state belongs to one agent: it is keyed by ``(agent, run id)``. Run ids come
from callers (a framework's thread id, a client of ``reach serve``), so two agents may
send the same one; sharing the state handed one agent the other's results (a repeated
call's earlier result, a cached read) and let one use up or fail the other's run
limits. A delegated run shares its parent's state on purpose (:meth:`Runs.alias`).

An exact call is keyed by :func:`call_key`: the 64-bit hash of its canonical JSON
(:func:`canonical`). Two different calls of one run would have to collide in 64
bits to be counted as one (about 1 in 10^19 per pair). A run keeps only that int
per call: ``orjson`` allocates the JSON bytes outside Python's small-object
allocator, and keeping one such block per call scattered them around the heap,
which made most of the memory misses of a call in a run (measured with cachegrind).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from orjson import OPT_SORT_KEYS
from orjson import dumps as _dumps

__all__ = ["RunState", "Runs", "call_key", "canonical"]


def canonical(name: str, args: dict[str, Any]) -> bytes:
    """``[name, args]`` as canonical JSON (object keys sorted, compact).

    Calls equal as JSON get equal bytes whatever their key order (``1`` and ``1.0``
    or ``true`` differ, as they do in JSON).
    """
    try:
        return _dumps((name, args), option=OPT_SORT_KEYS)
    except TypeError:  # what orjson refuses (ints over 64 bits, odd types): the stdlib decides
        return json.dumps([name, args], sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                          default=repr).encode()


def call_key(name: str, args: dict[str, Any]) -> int:
    """The exact-call key of a run: the hash of :func:`canonical` (see the module doc)."""
    return hash(canonical(name, args))


@dataclass(slots=True)
class RunState:
    """One run's counters. The dicts other than ``counts`` stay ``None`` until a run needs
    them (most runs never repeat or fail a call). ``epoch`` grows with every write that
    ran: a kept result serves the read cache only while its epoch is current."""

    calls: int = 0
    #: exact call (int key) -> times made; tool name (str) -> times called, for capped tools
    counts: dict[int | str, int] = field(default_factory=dict)
    kept: dict[int, tuple[Any, int]] | None = None  # key -> (last good ToolResult, epoch)
    failures: dict[int, tuple[int, str]] | None = None  # key -> (failures in a row, last error)
    epoch: int = 0


class Runs:
    """Bounded map ``(agent, run id)`` -> :class:`RunState` (least recently used dropped first)."""

    def __init__(self, max_runs: int = 4096) -> None:
        self._runs: OrderedDict[tuple[str, str], RunState] = OrderedDict()
        self._max = max_runs
        self._last_id: str | None = None
        self._last_agent: str | None = None
        self._last = RunState()

    def get(self, run_id: str, agent: str = "default") -> RunState:
        if run_id == self._last_id and agent == self._last_agent:  # the previous call's run: the most recent
            return self._last
        key = (agent, run_id)
        state = self._runs.get(key)
        if state is None:
            state = self._runs[key] = RunState()
            if len(self._runs) > self._max:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(key)
        self._last_id, self._last_agent, self._last = run_id, agent, state
        return state

    def peek(self, run_id: str, agent: str = "default") -> RunState | None:
        return self._runs.get((agent, run_id))

    def alias(self, child: str, parent: str, *, child_agent: str, parent_agent: str) -> None:
        """Let run ``child`` of ``child_agent`` share ``parent``'s state (of ``parent_agent``):
        a delegated run's calls count against the parent run's limits (max_calls_per_run,
        identical-call guard ...)."""
        self._runs[(child_agent, child)] = self.get(parent, parent_agent)
        self._last_id = None

    def end(self, run_id: str, agent: str = "default") -> None:
        """Forget a finished run (the agent loop may call this)."""
        self._runs.pop((agent, run_id), None)
        self._last_id = None
