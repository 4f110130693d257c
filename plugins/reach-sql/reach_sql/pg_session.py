"""Connection hygiene: stop a statement at its deadline, leave nothing behind.

``statement_timeout`` alone is no guard: it is an ordinary setting, and a query
can switch it off for itself (``set_config('statement_timeout', '0', true)``
inside a ``UNION``). reach therefore also cancels from the client: a
:class:`Watchdog` sends the protocol's CancelRequest (psycopg's
``cancel_safe``) when the deadline passes. A cancel request needs no SQL
privilege and does not depend on anything the query set. If the statement has
not ended shortly after (the cancel could not be delivered, or the server is
inside a function that does not check for interrupts), the connection's socket
is shut down, so the worker thread returns and the server drops the session
(the roles' ``client_connection_check_interval`` makes it notice promptly).
Either way a connection that needed a cancel is discarded rather than pooled:
a late cancel must not hit the next caller's statement.

Pooled connections are shared between calls and agents, so after every call
:func:`reset_session` rolls back and runs ``DISCARD ALL`` (advisory locks,
temporary tables, prepared statements, ``SET`` values, ``LISTEN``, cursors).
A connection that cannot be reset is discarded.
"""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

# How long after a cancel the socket is shut down if the statement still runs.
HARD_STOP_AFTER = 1.5


class _Clock:
    """One daemon thread keeps every watchdog's deadline (a timer thread per call costs
    milliseconds on a busy host). Due callbacks run on a thread of their own, so a slow
    cancel never delays another deadline."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._heap: list[list[Any]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def call_later(self, delay: float, fn: Callable[[], None]) -> list[Any]:
        entry = [time.monotonic() + max(0.0, delay), next(self._seq), fn]
        with self._cv:
            heapq.heappush(self._heap, entry)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="reach-sql-deadlines", daemon=True)
                self._thread.start()
            elif self._heap[0] is entry:
                self._cv.notify()
        return entry

    @staticmethod
    def cancel(entry: list[Any]) -> None:
        entry[2] = None  # dropped when it comes up

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._heap and self._heap[0][2] is None:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cv.wait(30.0)
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cv.wait(wait)
                    continue
                fn = heapq.heappop(self._heap)[2]
            if fn is not None:
                threading.Thread(target=fn, name="reach-sql-cancel", daemon=True).start()


_CLOCK = _Clock()


class Watchdog:
    """Calls ``cancel`` once when ``timeout`` seconds pass, unless stopped first.

    ``fired`` tells the caller the connection saw a cancel (discard it);
    ``failed`` that the cancel could not be delivered.
    """

    def __init__(self, cancel: Callable[[], None], timeout: float, hard_stop: Callable[[], None] | None = None) -> None:
        self._cancel = cancel
        self._hard_stop = hard_stop
        self._lock = threading.Lock()
        self._stopped = False
        self.fired = False
        self.failed = False
        self._timeout = timeout
        self._entry: list[Any] | None = None

    def start(self) -> Watchdog:
        self._entry = _CLOCK.call_later(self._timeout, self.fire)
        return self

    def fire(self) -> None:
        """Cancel now (the deadline passed, or the awaiting call was abandoned)."""
        with self._lock:  # held while cancelling: stop() waits, so no cancel lands after it
            if self._stopped or self.fired:
                return
            self.fired = True
            try:
                self._cancel()
            except Exception:  # noqa: BLE001 - whatever the driver raised, the fallback is the same
                self.failed = True
        if self._hard_stop is not None:
            _CLOCK.call_later(HARD_STOP_AFTER, self._stop_hard)

    def _stop_hard(self) -> None:
        with self._lock:
            if self._stopped or self._hard_stop is None:
                return
            try:
                self._hard_stop()
            except Exception:  # noqa: BLE001 - best effort; the connection is discarded anyway
                pass

    def stop(self) -> None:
        """The statement ended: no cancel may be sent from now on."""
        if self._entry is not None:
            _CLOCK.cancel(self._entry)
        with self._lock:
            self._stopped = True


class Abort:
    """Lets the async side cancel the statement a worker thread is running.

    The connector creates one per call and fires it when the awaiting task is
    cancelled (the core's deadline); the database operation attaches its
    watchdog while a statement runs.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watchdog: Watchdog | None = None
        self.requested = False

    def attach(self, watchdog: Watchdog | None) -> None:
        with self._lock:
            self._watchdog = watchdog
            fire_now = self.requested and watchdog is not None
        if fire_now and watchdog is not None:
            watchdog.fire()

    def fire(self) -> None:
        with self._lock:
            self.requested = True
            watchdog = self._watchdog
        if watchdog is not None:
            watchdog.fire()


def pg_cancel(raw: Any) -> Callable[[], None]:
    """The driver's out-of-band cancel for a psycopg 3 connection."""
    cancel_safe = getattr(raw, "cancel_safe", None)
    if cancel_safe is not None:
        return lambda: cancel_safe(timeout=2.0)
    return raw.cancel  # type: ignore[no-any-return]


def pg_hard_stop(raw: Any) -> Callable[[], None]:
    """Shut the connection's socket down so a blocked read returns (the pool then drops it)."""

    def stop() -> None:
        fd = raw.pgconn.socket
        sock = socket.socket(fileno=os.dup(fd))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()

    return stop


def reset_session(raw: Any) -> bool:
    """Roll back and ``DISCARD ALL``; False when the connection must not be pooled again."""
    try:
        if raw.closed or raw.broken:
            return False
        raw.rollback()
        autocommit = raw.autocommit
        raw.autocommit = True
        try:
            raw.execute("DISCARD ALL", prepare=False)
        finally:
            raw.autocommit = autocommit
        _forget_prepared(raw)
        return True
    except Exception:  # noqa: BLE001 - any failure here means the session state is unknown
        return False


def _forget_prepared(raw: Any) -> None:
    """Make psycopg forget the statements ``DISCARD ALL`` just dropped on the server.

    psycopg notices a ``DISCARD ALL`` only the first time its text runs while it holds
    prepared names: after a failed call (its rollback empties the cache) the next reset
    left the names of the following call in the cache, and the call after that failed
    with "prepared statement "_pg3_4" does not exist" -- any failed write broke the
    second-next write on that pooled connection, whoever sent it."""
    prepared = getattr(raw, "_prepared", None)
    names, counts = getattr(prepared, "_names", None), getattr(prepared, "_counts", None)
    if names is not None and counts is not None:
        names.clear()
        counts.clear()
