"""The bounded pool sync connectors run in.

Why not ``concurrent.futures.ThreadPoolExecutor``: its workers are joined at
interpreter exit, so one hung sync tool would keep the process from exiting.
These workers are daemon threads; the bound and the semantics are the same:
a queued job whose caller gave up (its future cancelled) never starts, and a
running job keeps its worker until it returns.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["DaemonPool"]

_STOP = None


class DaemonPool:
    """At most ``max_workers`` daemon threads, started on demand."""

    def __init__(self, max_workers: int, name: str = "reach-sync") -> None:
        self.max_workers = max_workers
        self._name = name
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._pending = 0  # queued + running; a new worker starts while pending > threads
        self._closed = False

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        if self._closed:
            raise RuntimeError("the thread pool is closed")
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            self._pending += 1
            if self._pending > self._threads and self._threads < self.max_workers:
                self._threads += 1
                threading.Thread(target=self._work, name=f"{self._name}-{self._threads}", daemon=True).start()
        self._jobs.put((fn, fut))
        return fut

    @property
    def pending(self) -> int:
        """Jobs queued or running (hung ones included)."""
        return self._pending

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            fn, fut = job
            if fut.set_running_or_notify_cancel():  # False: the caller gave up before it started
                try:
                    fut.set_result(fn())
                except BaseException as exc:
                    fut.set_exception(exc)
            with self._lock:
                self._pending -= 1

    def shutdown(self) -> None:
        """Stop idle workers; running jobs finish on their own (daemon threads)."""
        self._closed = True
        with self._lock:
            n = self._threads
        for _ in range(n):
            self._jobs.put(_STOP)
