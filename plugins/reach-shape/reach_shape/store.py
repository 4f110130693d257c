"""Full results behind handles, in memory, scoped to (agent, run) and short-lived.

A handle is an unguessable id, and even so a lookup only succeeds for the agent
(and run) that produced the result: another agent asking gets "not found", the
same answer as for an expired handle, so nothing leaks about what exists.
Results of calls without a run id are scoped to the agent with a short TTL.
Memory is bounded by an entry count and a byte total; the oldest go first.

One store per ``Reach`` instance; all operations are synchronous and never
await, so they are atomic on the event loop.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Entry", "ResultStore"]


@dataclass(slots=True)
class Entry:
    """One kept result. ``content`` is what read_result reads (HTML already as text)."""

    handle: str
    agent: str
    run_id: str | None
    tool: str
    content: Any
    size: int
    expires: float
    note: str = ""


class ResultStore:
    """Handles -> full results, with TTLs, an entry cap and a byte cap."""

    def __init__(self, *, run_ttl: float, bare_ttl: float, max_entries: int, max_bytes: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.run_ttl = run_ttl
        self.bare_ttl = bare_ttl
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.clock = clock
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def new_handle() -> str:
        """An unguessable handle (72 random bits), short enough to cost few tokens."""
        return "res_" + secrets.token_urlsafe(9)

    def fits(self, size: int) -> bool:
        return size <= self.max_bytes

    def put(self, content: Any, *, agent: str, run_id: str | None, tool: str, size: int, note: str = "",
            handle: str | None = None) -> str | None:
        """Keep ``content``; returns its handle, or ``None`` when it is larger than the whole store."""
        if size > self.max_bytes:
            return None
        now = self.clock()
        self._expire(now)
        handle = handle or self.new_handle()
        ttl = self.run_ttl if run_id else self.bare_ttl
        self._entries[handle] = Entry(handle, agent, run_id, tool, content, size, now + ttl, note)
        self._bytes += size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))
        return handle

    def get(self, handle: str, *, agent: str, run_id: str | None) -> Entry | None:
        """The entry, if it exists, has not expired and belongs to this agent (and run)."""
        entry = self._entries.get(handle)
        if entry is None:
            return None
        if entry.expires <= self.clock():
            self._drop(handle)
            return None
        if entry.agent != agent or (entry.run_id is not None and entry.run_id != run_id):
            return None
        return entry

    def end_run(self, run_id: str) -> int:
        """Drop every result of a finished run; returns how many."""
        doomed = [h for h, e in self._entries.items() if e.run_id == run_id]
        for h in doomed:
            self._drop(h)
        return len(doomed)

    def _expire(self, now: float) -> None:
        doomed = [h for h, e in self._entries.items() if e.expires <= now]
        for h in doomed:
            self._drop(h)

    def _drop(self, handle: str) -> None:
        entry = self._entries.pop(handle, None)
        if entry is not None:
            self._bytes -= entry.size
