"""Daily call budgets per agent and per tool, persisted in the store.

The count that decides lives in memory (one event loop, no await between check
and reserve, so it is exact under any concurrency); every change is also queued
to the store through :meth:`Store.defer_call` (one job sums every change made
since the last one and commits within milliseconds), so a restart resumes from
the stored count. A call reserves one unit before it runs
and gives it back if it never ran (denied, rate limited, refused by a hook).

Several processes sharing one SQLite file each keep their own in-memory count.
On a store marked ``shared`` (PostgreSQL, used by several instances) the
database decides instead: a reservation is one ``INSERT ... ON CONFLICT DO
UPDATE ... WHERE used < limit`` per budget, all budgets of a call in one
transaction (rows locked in a fixed order), so instances never over-spend.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections import deque
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

if TYPE_CHECKING:
    from ..stores import Store

__all__ = ["BUDGET_MIGRATIONS", "DailyBudgets", "Exhausted"]

BUDGET_MIGRATIONS = [
    """
    CREATE TABLE reach_budget (
        scope TEXT NOT NULL,
        name TEXT NOT NULL,
        day TEXT NOT NULL,
        used INTEGER NOT NULL,
        PRIMARY KEY (scope, name, day)
    )
    """,
]

_RESERVE_SHARED = (
    "INSERT INTO reach_budget (scope, name, day, used) VALUES (?, ?, ?, 1) "
    "ON CONFLICT (scope, name, day) DO UPDATE SET used = reach_budget.used + 1 "
    "WHERE reach_budget.used < ? RETURNING used"
)
_RELEASE_SHARED = "UPDATE reach_budget SET used = used - 1 WHERE scope = ? AND name = ? AND day = ? AND used > 0"

_UPSERT = (
    "INSERT INTO reach_budget (scope, name, day, used) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (scope, name, day) DO UPDATE SET used = reach_budget.used + excluded.used"
)


class Exhausted(Exception):
    """A daily budget is used up; carries what the model should be told."""

    def __init__(self, message: str, retry_after: float, scope: str = "", limit: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        self.scope = scope  # "agent" or "tool": whose budget is used up
        self.limit = limit


class _Full(Exception):
    def __init__(self, scope: str, name: str, limit: int) -> None:
        self.scope, self.name, self.limit = scope, name, limit


class DailyBudgets:
    """Counts calls per (scope, name, day); scope is ``agent`` or ``tool``."""

    def __init__(self, store_getter, timezone: str = "UTC") -> None:  # type: ignore[no-untyped-def]
        self._store_getter = store_getter
        self.tz = ZoneInfo(timezone)
        self.tz_name = timezone
        self._used: dict[tuple[str, str, str], int] = {}
        self._loading: dict[tuple[str, str, str], asyncio.Future[None]] = {}
        self._ready = False
        self._day = ""
        self._reset_at = 0.0  # epoch seconds of the next 00:00 in the budget time zone
        # changes waiting for the store thread: appended on the loop, drained by one job
        self._changes: deque[tuple[tuple[str, str, str], int]] = deque()
        self._flush_queued = False
        self._shared: bool | None = None  # decided on first use: does the database count?

    @property
    def shared(self) -> bool:
        """True when other processes spend the same budgets (the store says ``shared``)."""
        if self._shared is None:
            self._shared = bool(getattr(self.store, "shared", False))
        return self._shared

    @property
    def store(self) -> Store:
        return self._store_getter()

    async def _ensure_schema(self) -> None:
        if not self._ready:
            await self.store.migrate("reach.budget", BUDGET_MIGRATIONS)
            self._ready = True

    def today(self) -> tuple[str, float]:
        """Today's key in the budget time zone and the seconds until it resets
        (the calendar is consulted once a day, not once a call)."""
        now = time.time()
        if now >= self._reset_at:
            local = dt.datetime.fromtimestamp(now, self.tz)
            tomorrow = (local + dt.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
            self._day = local.date().isoformat()
            self._reset_at = tomorrow.timestamp()
        return self._day, max(1.0, self._reset_at - now)

    def _record(self, key: tuple[str, str, str], delta: int) -> None:
        """Queue a change for the store; many calls share one store job."""
        self._changes.append((key, delta))
        if not self._flush_queued:
            self._flush_queued = True
            self.store.defer_call(self._flush)

    def _flush(self, conn) -> None:  # type: ignore[no-untyped-def]  # runs in the store thread
        self._flush_queued = False  # first: a change appended from now on queues a new job
        total: dict[tuple[str, str, str], int] = {}
        changes = self._changes
        while changes:
            key, delta = changes.popleft()
            total[key] = total.get(key, 0) + delta
        for key, delta in total.items():
            if delta:
                conn.execute(_UPSERT, (*key, delta))

    async def _load(self, key: tuple[str, str, str]) -> None:
        fut = self._loading.get(key)
        if fut is not None:
            await fut
            return
        fut = self._loading[key] = asyncio.get_running_loop().create_future()
        try:
            await self._ensure_schema()
            row = await self.store.fetchone(
                "SELECT used FROM reach_budget WHERE scope = ? AND name = ? AND day = ?", key
            )
            self._used.setdefault(key, int(row[0]) if row else 0)
            fut.set_result(None)
        except BaseException as exc:
            fut.set_exception(exc)
            del self._loading[key]
            raise

    def try_reserve(self, wanted: list[tuple[str, str, int]]) -> list[tuple[str, str, str]] | None:
        """Reserve one call against each ``(scope, name, limit)``, all or none, without
        awaiting; ``None`` when a count must first be loaded from the store (or
        the store is shared: then only the database may decide)."""
        if self._shared is not False and self.shared:
            return None
        day, resets_in = self.today()
        used = self._used
        keys = [(scope, name, day) for scope, name, _ in wanted]
        for (scope, name, limit), key in zip(wanted, keys, strict=True):
            n = used.get(key)
            if n is None:
                return None
            if n + 1 > limit:
                raise self._exhausted(scope, name, limit, resets_in)
        for key in keys:
            used[key] += 1
            self._record(key, 1)
        return keys

    async def reserve(self, wanted: list[tuple[str, str, int]]) -> list[tuple[str, str, str]]:
        """Reserve one call against each ``(scope, name, limit)``; all or none.

        Returns the keys reserved (hand them to :meth:`release` if the call never
        runs). Raises :class:`Exhausted` naming the first budget that is used up.
        """
        if self.shared:
            return await self._reserve_shared(wanted)
        keys = self.try_reserve(wanted)
        while keys is None:
            day = self.today()[0]
            for scope, name, _ in wanted:
                if (scope, name, day) not in self._used:
                    await self._load((scope, name, day))
            keys = self.try_reserve(wanted)  # no await between this check and the reservation
        return keys

    async def _reserve_shared(self, wanted: list[tuple[str, str, int]]) -> list[tuple[str, str, str]]:
        await self._ensure_schema()
        day, resets_in = self.today()
        ordered = sorted(wanted)  # one lock order for every process: no deadlock

        def tx(conn):  # type: ignore[no-untyped-def]  # runs in a store thread
            for scope, name, limit in ordered:
                if limit < 1 or conn.execute(_RESERVE_SHARED, (scope, name, day, limit)).fetchone() is None:
                    raise _Full(scope, name, limit)  # rolls back what this call reserved
            return [(scope, name, day) for scope, name, _ in wanted]

        try:
            if len(ordered) == 1:  # one budget: one autocommit statement, one round trip
                scope, name, limit = ordered[0]
                if limit < 1 or await self.store.fetchone(_RESERVE_SHARED, (scope, name, day, limit)) is None:
                    raise _Full(scope, name, limit)
                return [(scope, name, day)]
            return await self.store.transaction(tx, exclusive=False)  # type: ignore[no-any-return]
        except _Full as full:
            raise self._exhausted(full.scope, full.name, full.limit, resets_in) from None

    def _exhausted(self, scope: str, name: str, limit: int, resets_in: float) -> Exhausted:
        hours, rest = divmod(int(resets_in), 3600)
        who = f"agent `{name}`" if scope == "agent" else f"tool `{name}`"
        return Exhausted(
            f"the daily quota of {limit} call{'' if limit == 1 else 's'} for {who} is used up; it resets at 00:00 "
            f"{self.tz_name} (in {hours} h {rest // 60} min). Tell the user; do not call it again today.",
            resets_in, scope, limit,
        )

    def release(self, keys: list[tuple[str, str, str]]) -> None:
        """Give back reservations of a call that never ran."""
        if self._shared:
            for key in keys:
                self.store.defer(_RELEASE_SHARED, key)
            return
        for key in keys:
            if key in self._used:
                self._used[key] -= 1
                self._record(key, -1)

    def used(self, scope: str, name: str) -> int | None:
        """Today's count when loaded (for status commands and tests)."""
        return self._used.get((scope, name, self.today()[0]))
