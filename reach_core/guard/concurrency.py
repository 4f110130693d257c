"""Concurrency caps: process-wide slots per connector and per plugin, and the
weighted semaphore they are built on.

Slots are held per attempt, not during backoff sleeps, so a tool waiting to
retry does not starve others. A sync connector's slot is released only when its
thread really ends, so a hung sync tool keeps counting against the cap (and the
cap protects the service behind it) until it returns.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["Slots", "WeightedLimit", "free_now", "give_back", "take_now", "take_running"]

class WeightedLimit:
    """A FIFO-fair semaphore where one holder may take several units.

    A request for more units than the capacity takes the whole capacity (a tool
    heavier than the limit runs alone rather than never).
    """

    __slots__ = ("capacity", "free", "_waiters")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.free = capacity
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    def _clamp(self, weight: int) -> int:
        return min(max(1, weight), self.capacity)

    def try_acquire(self, weight: int = 1) -> bool:
        """Take ``weight`` units (already clamped by the caller) if free now, without waiting."""
        if self.free >= weight and not self._waiters:
            self.free -= weight
            return True
        return False

    async def acquire(self, weight: int = 1) -> None:
        weight = self._clamp(weight)
        if self.try_acquire(weight):
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (weight, fut)
        self._waiters.append(entry)
        try:
            await fut
        except BaseException:
            if fut.done() and not fut.cancelled():
                self.release(weight)  # granted and cancelled at once: give the units back
            else:
                try:
                    self._waiters.remove(entry)
                except ValueError:
                    pass
                self._wake()
            raise

    def release(self, weight: int = 1) -> None:
        self.free += weight if 1 <= weight <= self.capacity else self._clamp(weight)
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        while self._waiters:
            weight, fut = self._waiters[0]
            if fut.done():
                self._waiters.popleft()
                continue
            if self.free < weight:
                break
            self._waiters.popleft()
            self.free -= weight
            fut.set_result(None)


class Slots:
    """Process-wide caps keyed by name (``tool:NAME``, ``plugin:NAME``)."""

    def __init__(self) -> None:
        self._limits: dict[str, WeightedLimit] = {}

    def limit(self, key: str, capacity: int) -> WeightedLimit:
        lim = self._limits.get(key)
        if lim is None or lim.capacity != capacity:
            lim = self._limits[key] = WeightedLimit(capacity)
        return lim

    def get(self, key: str) -> WeightedLimit | None:
        return self._limits.get(key)


def take_now(caps: tuple[WeightedLimit, ...]) -> bool:
    """Take one unit of every cap in ``caps`` now, or none of them (no waiting).

    The executor calls this around every attempt of a capped tool, so the usual
    case (one free cap) is written out rather than going through ``try_acquire``.
    """
    if len(caps) == 1:
        lim = caps[0]
        if lim.free > 0 and not lim._waiters:
            lim.free -= 1
            return True
        return False
    for i, lim in enumerate(caps):
        if not lim.try_acquire(1):
            give_back(caps[:i])
            return False
    return True


def free_now(caps: tuple[WeightedLimit, ...]) -> bool:
    """True when every cap in ``caps`` has a unit free now and nobody waits for one."""
    return all(lim.free > 0 and not lim._waiters for lim in caps)


def take_running(caps: tuple[WeightedLimit, ...]) -> None:
    """Take one unit of every cap for a call that is already running (see
    ``reach_core.execute.run_connector``): checked free before it started, so normally
    still free; a call nested in its own first step may have taken one meanwhile, and
    then the cap is over by one until a unit comes back, rather than the call left
    uncounted."""
    for lim in caps:
        lim.free -= 1


def give_back(caps: tuple[WeightedLimit, ...]) -> None:
    """Return the unit of every cap in ``caps`` (taken by :func:`take_now` or ``acquire``)."""
    for lim in caps:
        lim.free += 1
        if lim._waiters:
            lim._wake()
