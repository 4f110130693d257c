"""The state store: one SQLite database (WAL) that budgets, the operation ledger,
audit and pending confirmations share.

Why it looks like this:

* **Nothing acknowledged is lost on kill -9.** WAL journal with
  ``synchronous=FULL``: when ``await store.execute(...)`` returns, the row is on disk.
* **The event loop never blocks.** One dedicated thread owns the connection and
  runs every statement in submission order (so a read sees every earlier write);
  coroutines await a future. The ``*_sync`` twins are for CLI commands.
* **Hot counters stay cheap.** :meth:`Store.defer` queues a write without waiting;
  the thread commits all queued deferred writes in one transaction as soon as it
  is free (budgets use it: the in-memory counter is authoritative, the store
  keeps it across restarts).
* **Portable SQL.** ``?`` placeholders, ``INSERT ... ON CONFLICT``, no SQLite-only
  types, so a PostgreSQL store can follow with the same statements.
* **Versioned schema.** :meth:`Store.migrate` applies a component's numbered
  migrations once, recorded in ``reach_schema``; plugins (audit, confirmation)
  use it for their own tables.
"""


from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .base import (
    _SCHEMA_TABLE,
    _STOP,
    StoreAPI,
    StoreClosed,
    T,
    _Job,
    apply_migrations,
    fail_batch,
    settle_batch,
)


class Store(StoreAPI):
    """SQLite state store with one writer thread; opened lazily on first use.

    ``path`` is the database file (its directory is created). ``busy_timeout``
    (ms) lets several processes (a CLI next to a server) share one file.
    """

    #: other processes do not spend this store's budgets (see ``stores.postgres.PgStore``)
    shared = False

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 10_000) -> None:
        self.path = Path(path)
        self._busy_timeout_ms = busy_timeout_ms
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._open_error: BaseException | None = None
        self._opened = threading.Event()

    # ------------------------------------------------------------------ lifecycle
    def _ensure_started(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._closed:
                raise StoreClosed(f"the store {self.path} is closed")
            if self._thread is None:
                t = threading.Thread(target=self._run, name=f"reach-store:{self.path.name}", daemon=True)
                t.start()
                self._opened.wait()
                if self._open_error is not None:
                    err, self._open_error = self._open_error, None
                    raise err
                self._thread = t

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(_SCHEMA_TABLE)
        return conn

    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:  # reported to the opener
            self._open_error = exc
            self._opened.set()
            return
        self._opened.set()
        try:
            while True:
                job = self._queue.get()
                if job is _STOP:
                    break
                if job.deferred:
                    batch = [job]
                    stop = False
                    while True:  # drain every deferred write already queued into one commit
                        try:
                            nxt = self._queue.get_nowait()
                        except queue.Empty:
                            break
                        if nxt is _STOP:
                            stop = True
                            break
                        if not nxt.deferred:
                            self._run_batch(conn, batch)
                            batch = []
                            self._run_one(conn, nxt)
                            continue
                        batch.append(nxt)
                    if batch:
                        self._run_batch(conn, batch)
                    if stop:
                        break
                else:
                    self._run_one(conn, job)
        finally:
            # fail anything still queued so no awaiter hangs forever
            while True:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is not _STOP and job.future.set_running_or_notify_cancel():
                    job.future.set_exception(StoreClosed(f"the store {self.path} is closed"))
            conn.close()

    @staticmethod
    def _run_one(conn: sqlite3.Connection, job: _Job) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        try:
            job.future.set_result(job.fn(conn))
        except BaseException as exc:
            if conn.in_transaction:
                conn.rollback()
            job.future.set_exception(exc)

    @staticmethod
    def _run_batch(conn: sqlite3.Connection, batch: list[_Job]) -> None:
        live = [j for j in batch if j.future.set_running_or_notify_cancel()]
        if not live:
            return
        results: list[tuple[_Job, Any, BaseException | None]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for j in live:
                conn.execute("SAVEPOINT reach_deferred")
                try:
                    results.append((j, j.fn(conn), None))
                    conn.execute("RELEASE reach_deferred")
                except Exception as exc:  # one bad statement must not sink the batch
                    conn.execute("ROLLBACK TO reach_deferred")
                    conn.execute("RELEASE reach_deferred")
                    results.append((j, None, exc))
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.rollback()
            fail_batch(live, exc)
            return
        settle_batch(results)

    def _submit(self, fn: Callable[[sqlite3.Connection], T], deferred: bool = False) -> concurrent.futures.Future[T]:
        if self._closed:
            raise StoreClosed(f"the store {self.path} is closed")
        self._ensure_started()
        job = _Job(fn, deferred)
        self._queue.put(job)
        return job.future

    async def _await(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.wrap_future(self._submit(fn))

    async def aclose(self) -> None:
        """Finish queued work, then close the connection. Idempotent."""
        thread = self._close_begin()
        if thread is not None:
            await asyncio.to_thread(thread.join)

    def close_sync(self) -> None:
        """Blocking twin of :meth:`aclose`, for CLI commands and atexit."""
        thread = self._close_begin()
        if thread is not None:
            thread.join()

    def _close_begin(self) -> threading.Thread | None:
        with self._lock:
            if self._closed:
                return None
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._queue.put(_STOP)
        return thread

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------------ statements
    @staticmethod
    def _exec(sql: str, params: Sequence[Any]) -> Callable[[sqlite3.Connection], int]:
        def run(conn: sqlite3.Connection) -> int:
            return conn.execute(sql, params).rowcount

        return run

    @staticmethod
    def _execmany(sql: str, seq: Iterable[Sequence[Any]]) -> Callable[[sqlite3.Connection], int]:
        rows = list(seq)

        def run(conn: sqlite3.Connection) -> int:
            conn.execute("BEGIN IMMEDIATE")
            try:
                n = conn.executemany(sql, rows).rowcount
            except BaseException:
                conn.rollback()
                raise
            conn.execute("COMMIT")
            return n

        return run

    @staticmethod
    def _all(sql: str, params: Sequence[Any]) -> Callable[[sqlite3.Connection], list[tuple[Any, ...]]]:
        return lambda conn: conn.execute(sql, params).fetchall()

    @staticmethod
    def _one(sql: str, params: Sequence[Any]) -> Callable[[sqlite3.Connection], tuple[Any, ...] | None]:
        return lambda conn: conn.execute(sql, params).fetchone()

    @staticmethod
    def _tx(fn: Callable[[sqlite3.Connection], T], exclusive: bool = True) -> Callable[[sqlite3.Connection], T]:
        # SQLite transactions here always take the write lock at BEGIN: `exclusive` changes nothing
        def run(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                value = fn(conn)
            except BaseException:
                conn.rollback()
                raise
            conn.execute("COMMIT")
            return value

        return run

    def defer(self, sql: str, params: Sequence[Any] = ()) -> concurrent.futures.Future[int]:
        """Queue a write without waiting; committed with other deferred writes in one
        transaction as soon as the store thread is free. Use for counters whose
        authoritative value lives in memory."""
        return self._submit(self._exec(sql, params), deferred=True)

    def defer_call(self, fn: Callable[[sqlite3.Connection], Any]) -> concurrent.futures.Future[Any]:
        """Like :meth:`defer` for a function of the connection (run in the store thread,
        inside the deferred batch's transaction)."""
        return self._submit(fn, deferred=True)

    async def flush(self) -> None:
        """Wait until every write queued so far is committed."""
        await self._await(lambda conn: None)

    # ------------------------------------------------------------------ schema
    @staticmethod
    def _migrate(component: str, migrations: Sequence[Any]) -> Callable[[sqlite3.Connection], int]:
        def run(conn: sqlite3.Connection) -> int:
            conn.execute("BEGIN IMMEDIATE")
            try:
                n = apply_migrations(conn, component, migrations, "sqlite")
            except BaseException:
                conn.rollback()
                raise
            conn.execute("COMMIT")
            return n

        return run

    async def migrate(self, component: str, migrations: Sequence[Any]) -> int:
        """Apply ``component``'s migrations not yet applied, in order, atomically.

        ``migrations[i]`` is version ``i + 1``: SQL (statements separated by ``;``),
        a callable taking the connection, or a dict of those per database (see
        :func:`apply_migrations`). Append new versions; never edit old ones. Returns
        the schema version now in place.
        """
        return await self._await(self._migrate(component, migrations))

    def migrate_sync(self, component: str, migrations: Sequence[Any]) -> int:
        return self._submit(self._migrate(component, migrations)).result()


    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

