"""Checkpointing a run's steps in one PostgreSQL round trip each (DBOS's tables, DBOS's format).

Why not ``DBOS.run_step_async``: it costs two transactions per step (one to
look for a recorded result and the workflow's status, one to lock the
workflow's row, check its owner and insert the result), each sent through
SQLAlchemy from a worker thread: 6.6 round trips and ~7 ms of CPU per step on
the development machine. A reach run knows more than DBOS does:

* its recorded steps can be read once, when the workflow starts (a replay after
  a crash reads them all in one query, a new run finds none);
* the check "is the run cancelled?" can ride on the previous step's write (the
  status comes back with it), so it costs nothing before a step;
* the owner check and the insert fit in one statement (a CTE that locks the
  workflow's row, checks the owner and inserts only if it still owns it),
  sent in autocommit on a connection of this event loop, prepared by psycopg
  after a few uses.

What stays DBOS's: the workflow itself (start, status, recovery, queues,
cancel, resume), the step numbers (drawn from DBOS's context, so DBOS's own
steps, such as the approval wait, interleave), the rows (``operation_outputs``
with DBOS's serializer: ``reach runs show``, ``DBOS.list_workflow_steps``
and a replay by plain DBOS read them alike) and the meaning of a conflict: a
step already recorded by another execution of the run is adopted, and an
execution that no longer owns the run stops (``DBOSWorkflowConflictIDError``).

This leans on DBOS internals (context, serializer, table layout) of the 3.x
line pinned in pyproject.toml; the tests read the steps back through DBOS's
own API (``list_workflow_steps``, ``reach runs show``) and replay them after
kill -9 (``tests/test_crash.py``).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

__all__ = ["STATS", "Checkpoints", "begin", "end", "step"]


@dataclass
class _Stats:
    """Statements this module sent (the benchmark adds them to SQLAlchemy's count)."""

    statements: int = 0


STATS = _Stats()

_PRELOAD = (
    "SELECT ws.status, o.function_id, o.function_name, o.output, o.error, o.serialization "
    "FROM {s}.workflow_status ws LEFT JOIN {s}.operation_outputs o ON o.workflow_uuid = ws.workflow_uuid "
    "WHERE ws.workflow_uuid = %(wf)s"
)

# Lock the run's row (as DBOS does: a cancel, resume or recovery cannot land between the
# check and the write), insert the step's row only while this execution owns the run (or a
# cancel released it: the step finished and is kept), and say what happened.
_RECORD = (
    "WITH ws AS (SELECT status, owner_xid FROM {s}.workflow_status WHERE workflow_uuid = %(wf)s "
    "FOR NO KEY UPDATE), "
    "ins AS (INSERT INTO {s}.operation_outputs (workflow_uuid, function_id, function_name, output, error, "
    "started_at_epoch_ms, completed_at_epoch_ms, serialization, application_name) "
    "SELECT %(wf)s, %(fid)s, %(name)s, %(output)s, %(error)s, %(started)s, %(completed)s, %(ser)s, %(app)s "
    "FROM ws WHERE ws.owner_xid IS NOT DISTINCT FROM %(owner)s "
    "OR (ws.status = 'CANCELLED' AND ws.owner_xid IS NULL) "
    "ON CONFLICT (workflow_uuid, function_id) DO NOTHING RETURNING 1) "
    "SELECT ws.status, ws.owner_xid IS NOT DISTINCT FROM %(owner)s, (SELECT count(*) FROM ins) FROM ws"
)

_ONE = (
    "SELECT function_name, output, error, serialization FROM {s}.operation_outputs "
    "WHERE workflow_uuid = %(wf)s AND function_id = %(fid)s"
)


@dataclass
class Checkpoints:
    """One execution of one run: the steps recorded before it started, and the last status seen."""

    workflow_id: str
    recorded: dict[int, tuple[str, str | None, str | None, str | None]] = field(default_factory=dict)
    cancelled: bool = False


#: Most checkpoint connections open at once per event loop (many concurrent runs queue for them).
POOL_SIZE = 8


class _Pool:
    """Autocommit connections of one event loop (a connection belongs to the loop it was opened on)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.idle: list[psycopg.AsyncConnection[Any]] = []
        self.slots = asyncio.Semaphore(POOL_SIZE)

    async def get(self) -> psycopg.AsyncConnection[Any]:
        await self.slots.acquire()
        try:
            return await self._open()
        except BaseException:
            self.slots.release()
            raise

    async def _open(self) -> psycopg.AsyncConnection[Any]:
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed and not conn.broken:
                return conn
        return await psycopg.AsyncConnection.connect(self.url, autocommit=True, prepare_threshold=2,
                                                     options=_CONFIG.options)

    async def put(self, conn: psycopg.AsyncConnection[Any]) -> None:
        try:
            if not conn.broken and not conn.closed:
                self.idle.append(conn)
            else:
                await conn.close()
        finally:
            self.slots.release()


@dataclass
class _Config:
    url: str = ""
    schema: str = ""
    options: str = ""
    sql: dict[str, str] = field(default_factory=dict)
    pools: weakref.WeakKeyDictionary[Any, _Pool] = field(default_factory=weakref.WeakKeyDictionary)


_CONFIG = _Config()
_RUNS: dict[str, Checkpoints] = {}


def plain_url(url: str) -> str:
    """The libpq form of a SQLAlchemy-style URL (``postgresql+psycopg://`` -> ``postgresql://``)."""
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix):]
    return url


def configure(url: str, schema: str, *, synchronous_commit: bool = True) -> None:
    """Where the steps go (``schema`` is a validated identifier: see ``DbosSettings``), and whether
    each checkpoint waits for PostgreSQL's disk flush (``synchronous_commit``)."""
    url = plain_url(url)
    if (url, schema) != (_CONFIG.url, _CONFIG.schema):
        _CONFIG.pools = weakref.WeakKeyDictionary()
    _CONFIG.url, _CONFIG.schema = url, schema
    _CONFIG.options = "" if synchronous_commit else "-c synchronous_commit=off"
    quoted = f'"{schema}"'
    _CONFIG.sql = {"preload": _PRELOAD.format(s=quoted), "record": _RECORD.format(s=quoted),
                   "one": _ONE.format(s=quoted)}


def close_all() -> None:
    """Close every idle checkpoint connection (DBOS stops; its event loop may be gone already)."""
    for pool in list(_CONFIG.pools.values()):
        while pool.idle:
            conn = pool.idle.pop()
            try:
                conn.pgconn.finish()  # synchronous: callable from any thread, without the connection's loop
            except Exception:  # noqa: S110 - closing a dead connection may fail; it is being dropped anyway
                pass
    _CONFIG.pools = weakref.WeakKeyDictionary()


async def _execute(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    loop = asyncio.get_running_loop()
    pool = _CONFIG.pools.get(loop)
    if pool is None:
        pool = _CONFIG.pools[loop] = _Pool(_CONFIG.url)
    conn = await pool.get()
    try:
        STATS.statements += 1
        cur = await conn.execute(sql, params)
        rows = await cur.fetchall()
    except BaseException:
        await conn.close()  # a half-read connection is not handed to the next step
        await pool.put(conn)
        raise
    await pool.put(conn)
    return rows


async def begin(workflow_id: str) -> Checkpoints | None:
    """Read the run's recorded steps and status once, as its execution starts (``None``: not configured,
    the steps go through DBOS's own API)."""
    if not _CONFIG.sql:
        return None
    rows = await _execute(_CONFIG.sql["preload"], {"wf": workflow_id})
    cp = Checkpoints(workflow_id)
    for status, fid, name, output, error, ser in rows:
        cp.cancelled = status == "CANCELLED"
        if fid is not None:
            cp.recorded[int(fid)] = (name, output, error, ser)
    _RUNS[workflow_id] = cp
    return cp


def end(workflow_id: str) -> None:
    _RUNS.pop(workflow_id, None)


def _replay(dbos: Any, name: str, recorded: tuple[str, str | None, str | None, str | None], wf: str,
            fid: int) -> Any:
    from dbos._error import DBOSUnexpectedStepError
    from dbos._serialization import deserialize_exception, deserialize_value

    rec_name, output, error, ser = recorded
    if rec_name != name:
        raise DBOSUnexpectedStepError(wf, fid, name, rec_name)
    if error is not None:
        raise deserialize_exception(error, ser, dbos._serializer)
    return deserialize_value(output, ser, dbos._serializer)


async def step(name: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``fn`` as step ``name`` of the current DBOS workflow: replayed if recorded, else run and recorded."""
    from dbos import DBOS
    from dbos._context import EnterDBOSStepCtx, get_local_dbos_context
    from dbos._dbos import _get_dbos_instance
    from dbos._error import DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError
    from dbos._serialization import serialize_exception, serialize_value

    ctx = get_local_dbos_context()
    cp = _RUNS.get(ctx.workflow_id) if ctx is not None and ctx.is_workflow() else None
    if ctx is None or cp is None or not _CONFIG.sql:
        return await DBOS.run_step_async({"name": name}, fn)  # not a run begun here: DBOS's own way
    dbos = _get_dbos_instance()
    step_ctx = ctx.snapshot_step_ctx(False)
    wf, fid = cp.workflow_id, step_ctx.function_id
    recorded = cp.recorded.pop(fid, None)
    if recorded is not None:
        return _replay(dbos, name, recorded, wf, fid)
    if cp.cancelled:
        raise DBOSWorkflowCancelledError(f"Workflow {wf} is cancelled. Aborting function.")
    started = int(time.time() * 1000)
    output: Any = None
    failure: Exception | None = None
    with EnterDBOSStepCtx({"name": name, "operationType": "step"}, step_ctx):
        try:
            output = await fn()
        except DBOSWorkflowCancelledError:
            raise
        except Exception as exc:  # recorded, then raised: a replay raises it again (as DBOS does)
            failure = exc
    if failure is not None:
        error, ser = serialize_exception(failure, None, dbos._serializer)
        value = None
    else:
        value, ser = serialize_value(output, None, dbos._serializer)
        error = None
    rows = await _execute(_CONFIG.sql["record"], {
        "wf": wf, "fid": fid, "name": name, "output": value, "error": error, "started": started,
        "completed": int(time.time() * 1000), "ser": ser, "app": dbos._sys_db.app_name,
        "owner": step_ctx.owner_xid,
    })
    if not rows:
        raise DBOSWorkflowConflictIDError(wf)  # the run's row is gone (deleted)
    status, owns, inserted = rows[0]
    cp.cancelled = status == "CANCELLED"
    if not inserted:
        if cp.cancelled:
            raise DBOSWorkflowCancelledError(f"Workflow {wf} is cancelled. Aborting function.")
        if not owns:
            raise DBOSWorkflowConflictIDError(wf)
        # another execution of the run recorded this step first: its result is the run's
        found = await _execute(_CONFIG.sql["one"], {"wf": wf, "fid": fid})
        if not found:
            raise DBOSWorkflowConflictIDError(wf)
        return _replay(dbos, name, found[0], wf, fid)
    if failure is not None:
        raise failure
    return output
