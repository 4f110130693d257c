"""Pending confirmations in the state store, and the decisions on them.

Guarantees, each enforced by a single SQL statement so that concurrent
approvers (two terminals, two processes) cannot both win:

* approval binds the exact arguments: the stored call is what runs, and its
  fingerprint (tool + canonical JSON of the arguments) is checked again when it
  runs; a model that changes the arguments gets a new request;
* approving runs the call exactly once: ``pending -> approved`` is one UPDATE
  whose row count decides the winner, and the call carries the idempotency key
  ``confirm:<id>`` so the operation ledger returns a receipt on any repeat;
* an expired request cannot be approved; the agent that asked cannot approve
  its own request; an unknown (forged) id is refused.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import secrets
import time
import weakref
from dataclasses import asdict, dataclass
from typing import Any

from reach_core import ToolCall, ToolResult
from reach_core.reveal import clip, reveal_text

__all__ = ["APPROVING", "Confirmation", "ConfirmationError", "Confirmations", "fingerprint"]

#: Set while an approved confirmation's call runs, so the pre-invoke hook lets it through:
#: ``[confirmation id]``, emptied by the first call it lets through, so a call started inside
#: the approved one (same tool, arguments and agent: a tool invoking reach again, a
#: ``delegate`` to the same agent) is not approved with it.
APPROVING: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("reach_confirm_approving",
                                                                            default=None)

MIGRATIONS = [
    """
    CREATE TABLE IF NOT EXISTS confirmations (
        id TEXT PRIMARY KEY,
        tool TEXT NOT NULL,
        agent TEXT NOT NULL,
        run_id TEXT,
        fingerprint TEXT NOT NULL,
        arguments TEXT NOT NULL,
        summary TEXT NOT NULL,
        mode TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL,
        decided_by TEXT,
        decided_at REAL,
        reason TEXT,
        result TEXT
    );
    CREATE INDEX IF NOT EXISTS confirmations_lookup ON confirmations (agent, fingerprint, status);
    CREATE INDEX IF NOT EXISTS confirmations_status ON confirmations (status, created_at)
    """,
    # one pending request per (agent, exact call), even with several instances on one store
    """
    CREATE UNIQUE INDEX IF NOT EXISTS confirmations_one_pending
        ON confirmations (agent, fingerprint) WHERE status = 'pending'
    """,
    # what the person who asked said last (the run's last user message), for whoever decides
    "ALTER TABLE confirmations ADD COLUMN user_message TEXT",
    # the idempotency key of the call that asked (a repeat of that call gets the approved one's outcome)
    """
    ALTER TABLE confirmations ADD COLUMN call_key TEXT;
    CREATE INDEX IF NOT EXISTS confirmations_call ON confirmations (agent, call_key)
    """,
]

#: The longest user message kept with a request (the person deciding needs the gist, not a log).
USER_MESSAGE_CHARS = 1000

_COLUMNS = ("id", "tool", "agent", "run_id", "fingerprint", "arguments", "summary", "mode", "status",
            "created_at", "expires_at", "decided_by", "decided_at", "reason", "result", "user_message", "call_key")


class ConfirmationError(Exception):
    """A decision could not be taken: unknown id, expired, already decided, self-approval."""


@dataclass
class Confirmation:
    id: str
    tool: str
    agent: str
    run_id: str | None
    fingerprint: str
    arguments: dict[str, Any]
    summary: str
    mode: str
    status: str  # pending | approved | rejected | expired | executed
    created_at: float
    expires_at: float
    decided_by: str | None = None
    decided_at: float | None = None
    reason: str | None = None
    result: dict[str, Any] | None = None
    user_message: str | None = None  # the run's last user message, redacted, when the call came from a run
    call_key: str | None = None  # the asking call's idempotency key (its own, or derived: agent, run, call)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> Confirmation:
        data = dict(zip(_COLUMNS, row, strict=True))
        data["arguments"] = json.loads(data["arguments"])
        data["result"] = json.loads(data["result"]) if data["result"] else None
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _user_message(ctx: Any) -> str | None:
    """The run's last user message (the agent loop passes it to each call as ``ctx.query``),
    redacted by the Reach's redactor and cut to ``USER_MESSAGE_CHARS``; ``None`` outside a run."""
    text = getattr(ctx, "query", None)
    if not isinstance(text, str) or not text.strip():
        return None
    redactor = getattr(getattr(ctx, "reach", None), "redactor", None)
    if redactor is not None:
        text = redactor.text(text)
    text = text.strip()
    return text if len(text) <= USER_MESSAGE_CHARS else text[: USER_MESSAGE_CHARS - 1] + "…"


def _canonical(value: Any) -> Any:
    """``value`` with every whole float as an int: ``9000.0`` and ``9000`` are the same call."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def fingerprint(tool: str, arguments: dict[str, Any]) -> str:
    """The identity of a call (tool and arguments, key order and ``9000.0``/``9000`` aside)."""
    canon = json.dumps([tool, _canonical(arguments)], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def summarize(tool: Any, arguments: dict[str, Any], limit: int) -> str:
    """One line a person can decide on: the connector's own ``summarize``, else the tool's
    name and its arguments (:func:`default_summary`)."""
    custom = getattr(tool.connector, "summarize", None)
    if callable(custom):
        text = reveal_text(" ".join(str(custom(arguments)).split()))
        return text if len(text) <= limit else clip(text, limit - 1) + "…"
    schema = getattr(tool, "schema", None) or {}
    order = list(schema.get("properties") or {}) if isinstance(schema, dict) else []
    return default_summary(tool.name, arguments, order, limit)


#: the fewest characters of a value shown when values are cut to fit (quotes and "…" included)
_MIN_SHARE = 12


def default_summary(name: str, arguments: dict[str, Any], order: list[str], limit: int) -> str:
    """``name: a="x", b=2, … and N more``: what a person approves must show what runs.

    * arguments in the schema's order (then any others in the order sent), so a model
      cannot put a long harmless one first to push the one that matters out of sight;
    * every value as JSON (strings quoted, quotes and line breaks escaped), so a value
      cannot spell another argument (``to="alice, amount=1"``);
    * hidden characters spelled ``⟨U+202E⟩`` (:func:`reach_core.reveal.reveal_text`, the console's
      rule too, so a person sees the same marking in the CLI and the browser);
    * when it is too long, each value is cut (``"…"`` marks the cut) so every argument
      keeps its name in view; when even that does not fit, ``… and N more`` says how
      many are not shown.
    """
    keys = [k for k in order if k in arguments] + [k for k in arguments if k not in order]
    if not keys:
        return name if len(name) <= limit else name[: limit - 1] + "…"
    head = f"{name}: "
    items = [(reveal_text(str(k), one_line=True),
              reveal_text(json.dumps(arguments[k], ensure_ascii=False, default=str), one_line=True))
             for k in keys]
    full = head + ", ".join(f"{k}={v}" for k, v in items)
    if len(full) <= limit:
        return full
    for shown in range(len(items), 0, -1):
        more = len(items) - shown
        tail = f", … and {more} more" if more else ""
        fixed = len(head) + len(tail) + sum(len(k) + 1 for k, _ in items[:shown]) + 2 * (shown - 1)
        share = (limit - fixed) // shown
        if share >= _MIN_SHARE or (shown == 1 and share >= 3):
            text = head + ", ".join(f"{k}={_cut(v, share)}" for k, v in items[:shown]) + tail
            if len(text) <= limit:
                return text
    text = f"{head}… {len(items)} arguments"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut(value: str, room: int) -> str:
    """``value`` (JSON) in at most ``room`` characters; a cut string keeps its closing quote."""
    if len(value) <= room:
        return value
    if value.startswith('"'):
        return clip(value, max(1, room - 2)) + '…"'
    return clip(value, max(0, room - 1)) + "…"


class Confirmations:
    """The confirmation queue of one ``Reach`` (registered as confirmer ``queue``)."""

    name = "queue"

    def __init__(self, reach: Any, settings: Any) -> None:
        self._reach = weakref.ref(reach)  # the Reach owns its queue, not the other way round
        self.settings = settings
        self._ready = False

    @property
    def reach(self) -> Any:
        """The Reach this queue belongs to."""
        reach = self._reach()
        if reach is None:
            raise RuntimeError("the Reach this confirmation queue belonged to was garbage-collected")
        return reach

    async def _store(self) -> Any:
        store = self.reach.store
        if not self._ready:
            await store.migrate("reach-confirm", MIGRATIONS)
            self._ready = True
        return store

    async def _notify(self, kind: str, c: Confirmation, ctx: Any = None, **extra: Any) -> None:
        event = {"kind": kind, "confirmation_id": c.id, "tool": c.tool, "agent": c.agent, "run_id": c.run_id,
                 "summary": c.summary, **extra}
        await self.reach.notify("reach_confirmation", event=event, ctx=ctx, reach=self.reach)

    # ------------------------------------------------------------ requests
    async def request(self, tool: Any, arguments: dict[str, Any], ctx: Any, mode: str) -> Confirmation:
        """A pending request for this exact call (reused if the same one is already pending)."""
        store = await self._store()
        fp = fingerprint(tool.name, arguments)
        await self._expire()  # an expired request must not hold the one pending slot
        now = time.time()
        c = Confirmation(
            id="cf_" + secrets.token_urlsafe(12), tool=tool.name, agent=ctx.agent, run_id=ctx.run_id,
            fingerprint=fp, arguments=arguments, summary=summarize(tool, arguments, self.settings.summary_chars),
            mode=mode, status="pending", created_at=now, expires_at=now + self.settings.ttl_seconds,
            user_message=_user_message(ctx), call_key=getattr(ctx, "idempotency_key", None),
        )
        # single statement: of two instances asking at once, one inserts and both read that row
        # (a pending row can vanish in between, decided or expired: then try again)
        for _ in range(5):
            inserted = await store.execute(
                f"INSERT INTO confirmations ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
                "ON CONFLICT (agent, fingerprint) WHERE status = 'pending' DO NOTHING",
                (c.id, c.tool, c.agent, c.run_id, c.fingerprint, json.dumps(arguments, ensure_ascii=False),
                 c.summary, c.mode, c.status, c.created_at, c.expires_at, None, None, None, None,
                 c.user_message, c.call_key),
            )
            if inserted == 1:
                break
            row = await store.fetchone(
                f"SELECT {', '.join(_COLUMNS)} FROM confirmations WHERE agent = ? AND fingerprint = ? "
                "AND status = 'pending'",
                (ctx.agent, fp),
            )
            if row is not None:
                return Confirmation.from_row(row)
        else:
            raise RuntimeError(f"could not record a confirmation request for {tool.name}")
        await self._notify("requested", c, ctx)
        return c

    async def rejected_recently(self, tool: Any, arguments: dict[str, Any], ctx: Any) -> Confirmation | None:
        """The latest rejection of this exact call (same agent, tool and arguments) within
        ``ttl_seconds``: asked again under a new call id, it is denied, not put to a person
        again (a model must not wear a person down by asking until they click approve)."""
        store = await self._store()
        row = await store.fetchone(
            f"SELECT {', '.join(_COLUMNS)} FROM confirmations WHERE agent = ? AND fingerprint = ? "
            "AND status = 'rejected' AND decided_at > ? ORDER BY decided_at DESC LIMIT 1",
            (ctx.agent, fingerprint(tool.name, arguments), time.time() - self.settings.ttl_seconds),
        )
        return Confirmation.from_row(row) if row is not None else None

    async def approved_call(self, tool: Any, arguments: dict[str, Any], ctx: Any) -> str | None:
        """The request a person approved for *this* call (same agent, idempotency key and
        arguments), asked before: the call is being repeated (a client retrying after a lost
        answer, a durable run replaying the tool turn a crash cut off). Its approved execution
        ran under ``confirm:<id>``, so the repeat must go through that key (the ledger gives
        its receipt), not become a new request a second approval would run again."""
        key = getattr(ctx, "idempotency_key", None)
        if not key:
            return None  # an idempotent tool, or a call without a key: nothing names "the same call"
        store = await self._store()
        row = await store.fetchone(
            "SELECT id FROM confirmations WHERE agent = ? AND call_key = ? AND fingerprint = ? "
            "AND status IN ('approved', 'executed') ORDER BY created_at DESC LIMIT 1",
            (ctx.agent, key, fingerprint(tool.name, arguments)),
        )
        return row[0] if row else None

    async def already_approved(self, tool: Any, arguments: dict[str, Any], ctx: Any, mode: str) -> str | None:
        """For modes ``once`` (same arguments) and ``run`` (same run): an earlier approval that covers this call."""
        store = await self._store()
        if mode == "once":
            row = await store.fetchone(
                "SELECT id FROM confirmations WHERE agent = ? AND fingerprint = ? AND status = 'executed' LIMIT 1",
                (ctx.agent, fingerprint(tool.name, arguments)),
            )
        elif mode == "run" and ctx.run_id:
            row = await store.fetchone(
                "SELECT id FROM confirmations WHERE agent = ? AND tool = ? AND run_id = ? AND status = 'executed' "
                "LIMIT 1",
                (ctx.agent, tool.name, ctx.run_id),
            )
        else:
            row = None
        return row[0] if row else None

    # ------------------------------------------------------------ reading
    async def get(self, cid: str) -> Confirmation:
        store = await self._store()
        row = await store.fetchone(f"SELECT {', '.join(_COLUMNS)} FROM confirmations WHERE id = ?", (cid,))
        if row is None:
            raise ConfirmationError(f"no confirmation request {cid!r}")
        return Confirmation.from_row(row)

    async def list(self, status: str | None = "pending") -> list[Confirmation]:
        store = await self._store()
        await self._expire()
        if status is None:
            rows = await store.fetchall(f"SELECT {', '.join(_COLUMNS)} FROM confirmations ORDER BY created_at")
        else:
            rows = await store.fetchall(
                f"SELECT {', '.join(_COLUMNS)} FROM confirmations WHERE status = ? ORDER BY created_at", (status,))
        return [Confirmation.from_row(r) for r in rows]

    async def _expire(self) -> None:
        store = await self._store()
        now = time.time()
        rows = await store.fetchall(
            f"SELECT {', '.join(_COLUMNS)} FROM confirmations WHERE status = 'pending' AND expires_at <= ?", (now,))
        if rows:
            await store.execute("UPDATE confirmations SET status = 'expired' WHERE status = 'pending' "
                                "AND expires_at <= ?", (now,))
            for r in rows:
                await self._notify("expired", Confirmation.from_row(r))

    # ------------------------------------------------------------ decisions
    async def approve(self, cid: str, *, by: str, reason: str | None = None) -> ToolResult:
        """Approve and run the stored call exactly once; returns its result.

        Raises ``ConfirmationError`` for an unknown, expired, decided or self-approved request.
        """
        c = await self.get(cid)
        if by == c.agent:
            raise ConfirmationError(f"{by!r} asked for this action and cannot approve its own request")
        store = await self._store()
        now = time.time()
        won = await store.execute(
            "UPDATE confirmations SET status = 'approved', decided_by = ?, decided_at = ?, reason = ? "
            "WHERE id = ? AND status = 'pending' AND expires_at > ? AND agent <> ?",
            (by, now, reason, cid, now, by),
        )
        if won != 1:
            c = await self.get(cid)
            if c.status == "pending" and c.expires_at <= now:
                await self._expire()
                raise ConfirmationError(f"request {cid} expired at "
                                        f"{time.strftime('%H:%M:%S', time.gmtime(c.expires_at))} UTC; "
                                        "the model must ask again")
            raise ConfirmationError(f"request {cid} is already {c.status}" +
                                    (f" by {c.decided_by}" if c.decided_by else "") + "; it runs only once")
        c.status, c.decided_by = "approved", by
        await self._notify("approved", c, by=by, reason=reason)
        token = APPROVING.set([cid])
        try:
            result = await self.reach.invoke(
                ToolCall(name=c.tool, arguments=c.arguments, id=f"confirm-{cid}", idempotency_key=f"confirm:{cid}"),
                agent=c.agent, run_id=c.run_id,
            )
        finally:
            APPROVING.reset(token)
        await store.execute(
            "UPDATE confirmations SET status = 'executed', result = ? WHERE id = ?",
            (json.dumps(result.to_dict(), ensure_ascii=False, default=str), cid),
        )
        await self._notify("executed", c, by=by, ok=result.ok)
        return result

    async def reject(self, cid: str, *, by: str, reason: str | None = None) -> Confirmation:
        c = await self.get(cid)
        if by == c.agent:
            raise ConfirmationError(f"{by!r} asked for this action and cannot decide on its own request")
        store = await self._store()
        won = await store.execute(
            "UPDATE confirmations SET status = 'rejected', decided_by = ?, decided_at = ?, reason = ? "
            "WHERE id = ? AND status = 'pending'",
            (by, time.time(), reason, cid),
        )
        if won != 1:
            raise ConfirmationError(f"request {cid} is already {(await self.get(cid)).status}")
        c = await self.get(cid)
        await self._notify("rejected", c, by=by, reason=reason)
        return c

    async def wait(self, cid: str, *, timeout: float, poll: float = 0.2) -> Confirmation:  # noqa: ASYNC109
        """Wait for a decision (any process may take it); returns the request as it stands then."""
        import asyncio

        deadline = time.monotonic() + timeout
        while True:
            c = await self.get(cid)
            if c.status not in ("pending", "approved") or time.monotonic() >= deadline:
                return c
            await asyncio.sleep(poll)
