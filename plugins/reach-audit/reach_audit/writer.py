"""The background writer: records leave the hot path as a list append and reach
disk in batches.

Durability contract: a record is *acknowledged* when an ``await flush()`` that
started after it was enqueued has returned (in ``durability = "sync"`` mode the
hook does that before the invoke returns). Acknowledged records are committed
with SQLite ``synchronous=FULL``, so ``kill -9`` cannot take them. Unacknowledged
records are written at the latest ``flush_interval_ms`` (<= 50 ms) after they
were enqueued, plus the time of one commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
from collections.abc import Callable
from typing import Any

from reach_core.logs import plugin_logger

from .record import FLAT_CALL, Captured, Row, build_rows, captures
from .redact import Redactor
from .storage import COMPONENT, MIGRATIONS, Store, append_rows, chain

#: A commit refused with "database is locked" (another process kept SQLite's write lock
#: past busy_timeout, or SQLite gave up without waiting, as it does while a crashed
#: writer's log is recovered) is retried this many times, 0.1 s to 3.2 s apart, before
#: ``flush()`` reports the failure: a flush waits out contention, it fails on a broken disk.
BUSY_RETRIES = 5


def _contended(exc: BaseException) -> bool:
    """Is this the database saying "someone else has the lock", not "I cannot write"?"""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc)
    return "locked" in text or "busy" in text


BUILD_SLICE = 64  # records built per loop slice (~0.5 ms), so calls interleave with the writer


class AuditWriter:
    """Owns the pending list, the flush task and the waiters of ``flush()``."""

    def __init__(
        self,
        store: Store,
        redactor: Redactor,
        *,
        summary_chars: int = 512,
        interval: float = 0.05,
        batch_size: int = 1000,
        on_written: Callable[[list[Captured], list[Row]], None] | None = None,
        wants_written: Callable[[], bool] | None = None,
    ) -> None:
        self.store = store
        self.redactor = redactor
        #: ``reach.audit``, masked by the Reach's redactor (a failure can quote a path or a DSN)
        self.log = plugin_logger("audit", redactor)
        self.summary_chars = summary_chars
        self.interval = interval
        self.batch_size = batch_size
        self.on_written = on_written
        #: asked (on the loop) before each committed batch: will ``on_written`` do anything?
        #: The worker-thread hop costs ~0.1 ms of CPU, more than a small batch's records.
        self.wants_written = wants_written
        #: what is not yet committed, oldest first: a record is one item (a :class:`Captured`,
        #: or a call capture as a tuple) or, from the call hook, the ``FLAT_CALL`` values of
        #: its capture in a row, the first a ``float`` (``ts``). Values laid out in one
        #: long-lived list, not a tuple each: a tuple holding a dict (the arguments) is
        #: tracked by the garbage collector until it dies, and pending captures made the
        #: calls trigger collections that walked every one of them (``build_rows`` reads them in place).
        self._pending: list[Any] = []
        self._enqueued = 0  # records ever enqueued
        self._written = 0  # records ever committed (a prefix of the enqueued ones)
        #: the value of ``_enqueued`` whose record wakes the writer (see ``_kick_point``):
        #: the call hook compares one number instead of working the rule out per call
        self._kick_at = 1
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._now: asyncio.Event | None = None
        self._schema_ready = False
        self._closed = False
        # The batch being committed, kept across a failure or a cancelled loop, so the
        # retry sends the same rows and append_rows can tell if they already landed.
        self._inflight: tuple[Any, ...] | None = None  # (items, rows, params, expected head)
        self._head: str | None = None  # hash of the last row this writer saw committed
        self._head_seq = 0  # ... and its seq
        self.last_error: BaseException | None = None

    # -- hot path -----------------------------------------------------------
    def enqueue(self, item: Captured | tuple[Any, ...]) -> None:
        """Cheap: an append; only the first item of a quiet period (or each full batch) wakes the writer.

        Not every item past a full batch: the writer, once woken, writes until nothing is
        pending, so while the loop has not let it run yet a wake-up per item is wasted."""
        self._pending.append(item)
        self._enqueued += 1
        if self._enqueued >= self._kick_at:
            self._kicked()

    def _kick_point(self) -> int:
        """The next value of ``_enqueued`` that wakes the writer: the first record not yet
        committed (nothing pending before it), or each full batch of them
        (``batch_size``, twice that, ...). Recomputed after a wake-up and after a commit."""
        n = self._enqueued - self._written  # records not yet committed
        return self._written + (1 if n <= 0 else (n // self.batch_size + 1) * self.batch_size)

    def _kicked(self) -> None:
        """The record just enqueued is at ``_kick_at``: wake the writer (at once for a full batch)."""
        self._kick(full=self._enqueued - self._written >= self.batch_size)
        self._kick_at = self._kick_point()

    def _kick(self, *, full: bool) -> None:
        if self._task is None or self._task.done() or self._loop is not _running_loop():
            if _running_loop() is None:
                return  # no loop yet: the next flush() (or enqueue inside a loop) writes it
            self._start()
        assert self._wake is not None and self._now is not None
        self._wake.set()
        if full:
            self._now.set()

    async def flush(self) -> None:
        """Return once every record enqueued before this call is durable on disk."""
        target = self._enqueued
        if self._written >= target:
            return
        if self._task is None or self._task.done() or self._loop is not _running_loop():
            self._start()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, fut))
        assert self._wake is not None and self._now is not None
        self._now.set()
        self._wake.set()
        await fut

    # -- background ---------------------------------------------------------
    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._wake = asyncio.Event()
        self._now = asyncio.Event()
        if self._pending:
            self._wake.set()
        self._task = loop.create_task(self._run(), name="reach-audit-writer")

    async def _run(self) -> None:
        assert self._wake is not None and self._now is not None
        busy = 0  # consecutive commits refused because the database was locked
        while True:
            await self._wake.wait()
            self._wake.clear()  # cleared before writing, so a wake-up during a write is kept
            if not self._pending:
                if self._closed:
                    return
                continue
            if not self._now.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._now.wait(), self.interval)
            self._now.clear()
            try:
                await self._write_pending()
                self.last_error = None
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # keep the records; try again after a pause
                self.last_error = exc
                contended = _contended(exc) and busy < BUSY_RETRIES
                busy = busy + 1 if contended else 0
                if contended:  # another process holds the database past busy_timeout: wait, do not fail flush()
                    self.log.warning("reach-audit: the audit log is busy (%r); retry %d of %d", exc, busy, BUSY_RETRIES)
                    await asyncio.sleep(0.05 * 2 ** busy)
                else:
                    self.log.error("reach-audit: writing the audit log failed: %r; will retry", exc)
                    self._fail_waiters(exc)
                    await asyncio.sleep(min(1.0, self.interval * 10))
            else:
                busy = 0
            if self._pending or self._closed:
                self._wake.set()

    async def _write_pending(self) -> None:
        while self._pending:
            if self._inflight is None:
                batch, cuts = self._take(self.batch_size)
                expected = self._head
                rows, params = await self._build(batch, cuts, expected, self._head_seq)
                self._inflight = (batch, rows, params, expected, len(batch))
            items, rows, params, expected, slots = self._inflight
            if not self._schema_ready:
                await self.store.migrate(COMPONENT, MIGRATIONS)
                self._schema_ready = True
            _, self._head = await self.store.transaction(
                functools.partial(append_rows, rows=rows, expected_prev=expected, params=params)
            )
            self._committed(rows, slots)
            if self.on_written is not None and (self.wants_written is None or self.wants_written()):
                try:
                    await asyncio.to_thread(self.on_written, captures(items), rows)
                except Exception as exc:  # logging must never lose a record
                    self.log.warning("reach-audit: emitting audit events failed: %r", exc)

    def _take(self, limit: int) -> tuple[list[Any], list[int]]:
        """The oldest ``limit`` records pending (at most), laid out as in the pending list
        (``build_rows`` reads a call hook's flat values where they lie), and where each
        ``BUILD_SLICE`` of them begins: ``[0, ..., len(batch)]``."""
        pending = self._pending
        cuts = [0]
        i, end, n = 0, len(pending), 0
        while i < end and n < limit:
            i += FLAT_CALL if type(pending[i]) is float else 1  # a flat capture's ts
            n += 1
            if n % BUILD_SLICE == 0:
                cuts.append(i)
        if cuts[-1] != i:
            cuts.append(i)
        return pending[:i], cuts

    def _committed(self, rows: list[Row], slots: int) -> None:
        """Only now drop the records from pending: a failed commit keeps them."""
        self._inflight = None
        if rows and rows[-1].seq is not None:
            self._head_seq = rows[-1].seq
        del self._pending[:slots]
        self._written += len(rows)
        self._kick_at = self._kick_point()
        self._resolve_waiters()

    def flush_sync(self) -> int:
        """Write what is pending without an event loop (at interpreter exit, after the
        loop that ran the calls is gone). Returns the number of records written."""
        if _running_loop() is not None:
            raise RuntimeError("flush_sync() is for code without a running loop; use await flush()")
        written = 0
        while self._pending:
            if self._inflight is None:
                items, _ = self._take(self.batch_size)
                self._inflight = (items, build_rows(items, self.redactor, self.summary_chars), None, None, len(items))
            items, rows, params, expected, slots = self._inflight
            self.store.migrate_sync(COMPONENT, MIGRATIONS)
            _, self._head = self.store.transaction_sync(
                functools.partial(append_rows, rows=rows, expected_prev=expected, params=params)
            )
            self._committed(rows, slots)
            written += len(rows)
            if self.on_written is not None:
                with contextlib.suppress(Exception):
                    self.on_written(captures(items), rows)
        return written

    async def _build(
        self, batch: list[Any], cuts: list[int], prev: str | None, prev_seq: int = 0
    ) -> tuple[list[Row], list[tuple[Any, ...]] | None]:
        """Build (and, when the head of the chain is known, hash) the rows of ``batch``
        on the loop, a slice of it (``cuts``) at a time, yielding between them.

        A worker thread looks cheaper but is not: it competes for the GIL, and the
        event loop then waits up to the switch interval (5 ms) for it. For the same
        reason the store thread gets only SQLite work (which releases the GIL).
        Only ``on_written`` needs :class:`Captured` (``record.captures``).
        """
        rows: list[Row] = []
        params: list[tuple[Any, ...]] | None = [] if prev is not None else None
        for k in range(len(cuts) - 1):
            if k:
                await asyncio.sleep(0)
            part = build_rows(batch, self.redactor, self.summary_chars, cuts[k], cuts[k + 1])
            rows.extend(part)
            if params is not None and prev is not None:
                params.extend(chain(part, prev, prev_seq))
                prev, prev_seq = part[-1].hash, prev_seq + len(part)
        return rows, params

    def _resolve_waiters(self) -> None:
        still = []
        for target, fut in self._waiters:
            if self._written >= target:
                if not fut.done():
                    fut.set_result(None)
            else:
                still.append((target, fut))
        self._waiters = still

    def _fail_waiters(self, exc: BaseException) -> None:
        waiters, self._waiters = self._waiters, []
        for _, fut in waiters:
            if not fut.done():
                fut.set_exception(RuntimeError(f"audit log not written: {exc!r}"))

    @property
    def pending(self) -> int:
        """Records enqueued and not yet durable."""
        return self._enqueued - self._written

    async def aclose(self) -> None:
        """Write what is pending, then stop the task."""
        if self._pending and self._loop is _running_loop():
            await self.flush()
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            if self._loop is _running_loop():
                assert self._wake is not None
                self._wake.set()
                try:
                    await asyncio.wait_for(asyncio.shield(task), 1.0)
                except (TimeoutError, asyncio.CancelledError):
                    task.cancel()
            else:
                task.cancel()
        self._task = None


_running_loop = asyncio._get_running_loop  # the running loop or None, without raising
