"""The operation ledger: a non-idempotent call runs at most once per idempotency key.

Life of a row (table ``reach_ledger``)::

    claim ──▶ running ──▶ done      (ok result recorded: a repeat gets it back as a receipt)
                     ├──▶ failed    (known failure recorded: a repeat gets the same failure)
                     └──▶ unknown   (timeout mid-call, or the process died: never re-run
                                     automatically; a connector's reconcile(key) may settle it)

The claim is a durable INSERT committed *before* the connector runs, so a
process killed at any instant leaves either no row (never ran) or a ``running``
row that start-up turns into ``unknown``. A claim released (the call was refused
before it ran: denial, confirmation, rate limit) deletes the row.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..stores import Store

__all__ = ["LEDGER_MIGRATIONS", "MAX_KEY", "Claim", "Ledger", "checked_key", "derived_key", "legacy_key"]

#: the longest idempotency key, in characters
MAX_KEY = 512

LEDGER_MIGRATIONS = [
    """
    CREATE TABLE reach_ledger (
        tool TEXT NOT NULL,
        idem_key TEXT NOT NULL,
        args_hash TEXT NOT NULL,
        state TEXT NOT NULL,
        result TEXT,
        agent TEXT,
        run_id TEXT,
        call_id TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (tool, idem_key)
    );
    CREATE INDEX reach_ledger_state ON reach_ledger (state)
    """,
]


def checked_key(key: object) -> str:
    """``key`` if it is 1-``MAX_KEY`` printable characters, else ``invalid_arguments``.

    Why: a key is written to the ledger, the logs and error messages; a control
    character, a line break or an invisible one would forge or hide a log line, an
    empty key would silently mean "no key", and a huge one would fill a log line.
    """
    from ..errors import ToolFailure

    if not isinstance(key, str):
        raise ToolFailure(f"the idempotency key must be a string, got {type(key).__name__}; send the call "
                          "again with a key of 1-512 printable characters.", code="invalid_arguments")
    if not 1 <= len(key) <= MAX_KEY or not key.isprintable():
        shown = repr(key[:40]) + ("…" if len(key) > 40 else "")
        raise ToolFailure(f"the idempotency key {shown} is not valid: it must be 1-{MAX_KEY} printable "
                          "characters (no control, line-break or invisible characters); send the call again "
                          "with such a key.", code="invalid_arguments")
    return key


def derived_key(agent: str, run_id: str, call_id: str) -> str:
    """The key reach makes for a call in a run that brought none: the agent, the run id and
    the call id, each but the last after its length (``5:alice:5:run-1:call_1``).

    Why the agent: two agents in one run (a graph of agents sharing a thread id) number
    their calls alike; with ``run:call`` alone the second one's ``call_1`` was refused as
    another agent's key, or, upstream (an ``Idempotency-Key`` header), answered with the
    first one's response. Why the lengths: with separators alone, ``a:b`` + ``c`` and
    ``a`` + ``b:c`` spell the same key and one call is the other's receipt; a length says
    where each part ends, whatever characters the parts hold. (The pipeline writes this
    out inline; tests/test_redteam_derived_keys.py holds the two equal.)
    """
    run = str(run_id)
    return f"{len(agent)}:{agent}:{len(run)}:{run}:{call_id}"


def legacy_key(run_id: str, call_id: str) -> str:
    """The key reach derived before it named the agent: ``run_id:call_id``. A ledger row
    stored under it still answers the same agent's same run id and call id (see
    :meth:`Ledger.claim`), so a run resumed across the upgrade (a durable workflow
    replayed) gets its receipts instead of running its writes again."""
    return f"{run_id}:{call_id}"


@dataclass(slots=True)
class Claim:
    """What a claim found: ``claimed`` (go ahead) or the existing row's state."""

    claimed: bool
    state: str | None = None
    args_hash: str | None = None
    result: dict[str, Any] | None = None
    #: the agent that claimed the key first (a key is that agent's alone)
    agent: str | None = None


class Ledger:
    """Claims, completes and recovers ledger rows in the state store."""

    def __init__(self, store_getter) -> None:  # type: ignore[no-untyped-def]
        self._store_getter = store_getter
        self._ready = False

    @property
    def store(self) -> Store:
        return self._store_getter()

    async def ensure_schema(self) -> None:
        if not self._ready:
            await self.store.migrate("reach.ledger", LEDGER_MIGRATIONS)
            self._ready = True

    async def claim(
        self, tool: str, key: str, args_hash: str, *, agent: str | None, run_id: str | None, call_id: str | None,
        legacy: str | None = None,
    ) -> Claim:
        """Insert a ``running`` row, durably, or report the row already there.

        ``legacy`` (the old form of a derived key, :func:`legacy_key`): a row stored under
        it counts as this key's only if it was claimed by the same agent for the same run id
        and call id (the row's own columns, so ``a:b`` + ``c`` never reads ``a`` + ``b:c``'s).
        """
        await self.ensure_schema()
        now = time.time()

        def tx(conn):  # type: ignore[no-untyped-def]
            if legacy is not None:
                old = conn.execute(
                    "SELECT state, args_hash, result, agent FROM reach_ledger WHERE tool = ? AND idem_key = ? "
                    "AND agent = ? AND run_id = ? AND call_id = ?",
                    (tool, legacy, agent, run_id, call_id),
                ).fetchone()
                if old is not None:
                    return Claim(False, old[0], old[1], json.loads(old[2]) if old[2] else None, old[3])
            cur = conn.execute(
                "INSERT INTO reach_ledger (tool, idem_key, args_hash, state, agent, run_id, call_id, "
                "created_at, updated_at) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?) "
                "ON CONFLICT (tool, idem_key) DO NOTHING",
                (tool, key, args_hash, agent, run_id, call_id, now, now),
            )
            if cur.rowcount == 1:
                return Claim(True)
            row = conn.execute(
                "SELECT state, args_hash, result, agent FROM reach_ledger WHERE tool = ? AND idem_key = ?",
                (tool, key),
            ).fetchone()
            return Claim(False, row[0], row[1], json.loads(row[2]) if row[2] else None, row[3])

        if getattr(self.store, "shared", False):
            # the INSERT ... ON CONFLICT decides alone; no need to queue behind every writer
            return await self.store.transaction(tx, exclusive=False)  # type: ignore[no-any-return]
        return await self.store.transaction(tx)

    async def complete(self, tool: str, key: str, state: str, result: dict[str, Any], *, wait: bool = True) -> None:
        """Record the outcome of a claimed call (``done``, ``failed`` or ``unknown``).

        ``wait=False`` queues the update (committed within milliseconds, before any
        later statement, so a repeat of the key sees it) instead of waiting for the
        disk: if the process dies in between, the row stays ``running`` and becomes
        ``unknown`` — the safe direction: never re-run, only the receipt is lost.
        """
        params = (state, json.dumps(result, ensure_ascii=False, default=str), time.time(), tool, key)
        sql = "UPDATE reach_ledger SET state = ?, result = ?, updated_at = ? WHERE tool = ? AND idem_key = ?"
        if wait or getattr(self.store, "shared", False):
            # on a store other instances share, a repeat may reach another process at once:
            # the outcome must be committed before the caller hears it
            await self.store.execute(sql, params)
        else:
            self.store.defer(sql, params)

    async def release(self, tool: str, key: str) -> None:
        """Forget a claim whose call never ran."""
        await self.store.execute(
            "DELETE FROM reach_ledger WHERE tool = ? AND idem_key = ? AND state = 'running'", (tool, key)
        )

    async def recover(self, older_than: float | None = None) -> int:
        """At start-up: every ``running`` row belongs to a dead process; mark it ``unknown``.

        On a store other instances share, only rows claimed before ``older_than``
        (epoch s: now minus the longest call deadline) can be a dead process's;
        younger ones may still be running elsewhere. Marking one too early is
        safe anyway: ``unknown`` is never re-run, and the live call's outcome
        overwrites it.
        """
        await self.ensure_schema()
        if older_than is None:
            return await self.store.execute(
                "UPDATE reach_ledger SET state = 'unknown', updated_at = ? WHERE state = 'running'", (time.time(),)
            )
        return await self.store.execute(
            "UPDATE reach_ledger SET state = 'unknown', updated_at = ? WHERE state = 'running' AND created_at < ?",
            (time.time(), older_than),
        )

    async def unknown_rows(self) -> list[tuple[str, str]]:
        await self.ensure_schema()
        return [(r[0], r[1]) for r in await self.store.fetchall(
            "SELECT tool, idem_key FROM reach_ledger WHERE state = 'unknown' ORDER BY created_at"
        )]

    async def get(self, tool: str, key: str) -> tuple[str, dict[str, Any] | None] | None:
        await self.ensure_schema()
        row = await self.store.fetchone(
            "SELECT state, result FROM reach_ledger WHERE tool = ? AND idem_key = ?", (tool, key)
        )
        if row is None:
            return None
        return row[0], json.loads(row[1]) if row[1] else None
