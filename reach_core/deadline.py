"""Deadlines for calls that wait: one timer per event loop, not one per call.

``asyncio.timeout`` costs a ``Timeout`` object, two coroutines (``__aenter__``/
``__aexit__``) and a ``TimerHandle`` in the loop's heap for every call; that was
a quarter of the cost of a call that waits once, and every call of a fan-out
pays it. Here a call registers its deadline in a per-loop heap (one tuple) and a
single timer handle is kept at the earliest deadline. When a deadline passes,
its task is cancelled and the ``with`` block turns that cancellation into
``TimeoutError``; a cancellation from anywhere else goes through untouched
(the same ``cancelling()``/``uncancel()`` bookkeeping as ``asyncio.timeout``).

A call that ends takes its entry out of the heap when it is the earliest (calls one
after another, or a fan-out ending in the order it started, leave nothing behind:
an entry kept alive is a tuple, a watch and its task the garbage collector walks);
one behind an earlier deadline drops its task and stays until it reaches the top,
or all such entries go at once when they make up half of the heap. The timer is
left set: when it goes off it finds the next deadline (armed calls are the ones that
wait, and each would otherwise move the timer twice).

    with until(loop, loop.time() + 5.0):
        await something()
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from types import TracebackType
from typing import Any

__all__ = ["until"]


class _Watch:
    """One call's deadline; a plain (not async) context manager."""

    __slots__ = ("when", "task", "cancelling", "fired", "done", "dog")

    task: asyncio.Task[Any] | None  # None once the block ended unfired: a dead entry keeps no task alive

    def __init__(self, when: float, task: asyncio.Task[Any], dog: _Watchdog) -> None:
        self.when = when
        self.task = task
        self.cancelling = task.cancelling()
        self.fired = False
        self.done = False
        self.dog = dog

    def __enter__(self) -> _Watch:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.done = True
        if not self.fired:  # still in the heap (only _fire takes an entry out before its exit)
            self.task = None
            dog = self.dog
            heap = dog.heap
            if heap[0][2] is not self:
                dog.dead += 1  # behind an earlier deadline: dead weight until it reaches the top
                return
            heapq.heappop(heap)
            while heap and heap[0][2].done:  # the dead entries this one kept from the top
                heapq.heappop(heap)
                dog.dead -= 1
            return
        # fired: take our cancellation request back whatever the block ended with (as
        # asyncio.timeout does), and report it as a timeout if it is what ended the block
        task = self.task
        assert task is not None  # (only an unfired exit drops it)
        if task.uncancel() <= self.cancelling and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc


class _Watchdog:
    """The deadlines of one event loop and the one timer handle at the earliest."""

    __slots__ = ("loop", "heap", "handle", "next_when", "dead", "seq")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.heap: list[tuple[float, int, _Watch]] = []
        self.handle: asyncio.TimerHandle | None = None
        self.next_when = math.inf
        self.dead = 0
        self.seq = itertools.count()

    def watch(self, when: float) -> _Watch:
        task = asyncio.current_task(self.loop)
        if task is None:
            raise RuntimeError("a reach deadline must be used inside an asyncio task")
        w = _Watch(when, task, self)
        heap = self.heap
        if self.dead > 64 and self.dead * 2 > len(heap):
            heap[:] = [e for e in heap if not e[2].done]
            heapq.heapify(heap)
            self.dead = 0
        heapq.heappush(heap, (when, next(self.seq), w))
        if when < self.next_when:
            if self.handle is not None:
                self.handle.cancel()
            self.handle = self.loop.call_at(when, self._fire)
            self.next_when = when
        return w

    def _fire(self) -> None:
        self.handle, self.next_when = None, math.inf
        heap = self.heap
        now = self.loop.time()
        while heap:
            when, _, w = heap[0]
            if w.done:
                heapq.heappop(heap)
                self.dead -= 1
            elif when <= now:
                heapq.heappop(heap)
                w.fired = True
                assert w.task is not None  # (not done: its block has not ended)
                w.task.cancel()
            else:
                self.handle = self.loop.call_at(when, self._fire)
                self.next_when = when
                break


_dogs: dict[asyncio.AbstractEventLoop, _Watchdog] = {}
_last: tuple[asyncio.AbstractEventLoop | None, _Watchdog | None] = (None, None)


def until(loop: asyncio.AbstractEventLoop, when: float) -> _Watch:
    """A context manager that raises ``TimeoutError`` in the current task if the
    block has not finished by ``when`` (``loop.time()`` clock)."""
    global _last
    last_loop, dog = _last
    if loop is not last_loop or dog is None:
        dog = _dogs.get(loop)
        if dog is None:
            for old in list(_dogs):  # forget loops that are gone (list(): other threads' loops)
                if old.is_closed():
                    _dogs.pop(old, None)
            dog = _dogs[loop] = _Watchdog(loop)
        _last = (loop, dog)
    return dog.watch(when)
