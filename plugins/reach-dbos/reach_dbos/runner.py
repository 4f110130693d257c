"""A ``reach.run`` as a DBOS workflow: each model call and each turn of tool calls is a step.

Why the loop itself is not rewritten: :func:`reach_core.loop.run_agent` is
deterministic given what the model and the tools return, so running it inside a
DBOS workflow with those two effects as steps is enough. On a replay (a restart
after a crash) DBOS hands back each recorded step's output instead of running
it, and the loop walks the same path to the first step that did not finish.

What a step that was in flight when the process died does again is decided by
reach, not DBOS: the turn of tool calls runs again through the pipeline with the
same run id and call ids, hence the same idempotency keys, so the ledger
(DESIGN §6) answers: a read runs again, a write that had finished returns its
receipt, a write cut off mid-call is ``outcome_unknown`` unless its connector's
``reconcile(key)`` settled it at start-up.

The workflow runs against the Reach this process bound (:func:`bind`); a
workflow DBOS recovers at launch runs on DBOS's own event loop, so nothing here
keeps loop-bound state across runs (adapters are built per event loop).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dbos import DBOS, SetWorkflowID

from reach_core.adapter import Usage
from reach_core.errors import ConfigError, ReachError
from reach_core.loop import RunResult, run_agent

from . import checkpoint
from .approval import DurableConfirmer
from .settings import DbosSettings

__all__ = ["DurableRunner", "RunIdInUse", "WORKFLOW", "bind", "bound_reach", "launch", "shutdown"]


#: The DBOS workflow name of a reach run (``reach runs list`` filters on it).
WORKFLOW = "reach.run"
MODEL_STEP = "reach.model"
TOOLS_STEP = "reach.tools"

#: ``reach.run`` keyword arguments that are kept with the run (a resumed run gets them back).
_DURABLE_ARGS = ("agent", "max_steps", "tool_choice", "force_every_step", "deadline", "tools",
                 "system_hint", "parent_run_id", "confirm_wait")


@dataclass
class _State:
    """What this process holds for DBOS: one DBOS instance, the Reach its workflows use."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    reach: Any = None
    settings: DbosSettings | None = None
    launched: bool = False
    url: str | None = None
    heartbeat: Any = None
    #: per-run things that cannot be checkpointed (an adapter object, an on_step callback)
    local: dict[str, dict[str, Any]] = field(default_factory=dict)
    adapters: weakref.WeakKeyDictionary[Any, dict[tuple[int, str | None], tuple[Any, Any]]] = field(
        default_factory=weakref.WeakKeyDictionary)


_STATE = _State()


def settings_of(reach: Any) -> DbosSettings:
    found = reach.plugin_settings("reach-dbos") if hasattr(reach, "plugin_settings") else None
    return found if isinstance(found, DbosSettings) else DbosSettings.model_validate({})


def _sqlalchemy_url(url: str) -> str:
    """DBOS speaks psycopg 3; ``postgresql://`` and ``postgresql+psycopg://`` both work here."""
    for prefix in ("postgresql+psycopg2://", "postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def _plausible(run_id: str) -> bool:
    """Could this be a run id at all? 1-256 characters a person can see (``str.isprintable``: no
    control character, C1 ones such as U+009B included, no format character such as U+200B or
    U+202E, no line separator, no space but the ASCII one). The id is the first part of each
    write's idempotency key (``<run id>:<call id>``, which the ledger allows only printable,
    ``reach_core.guard.ledger.checked_key``) and what an operator reads to cancel or resume a
    run: two ids that print alike must not name two runs."""
    return 0 < len(run_id) <= 256 and run_id.isprintable()


def _storable(run_id: str) -> bool:
    """Could a stored run have this id? The rule before :func:`_plausible` (no C0 control, no DEL):
    ``reach runs show|cancel`` still find a run started under it, they never start one."""
    return 0 < len(run_id) <= 256 and not any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in run_id)


def bind(reach: Any) -> None:
    """Make ``reach`` the Reach this process's workflows run against (the last one bound wins)."""
    _STATE.reach = reach


def bound_reach() -> Any:
    return _STATE.reach


def launch(reach: Any, *, recover: bool | None = None) -> None:
    """Start DBOS once per process (blocking; call it in a thread from async code).

    ``DBOS.launch()`` resumes the unfinished runs of this executor at once (with
    ``recover_on_start``); they run on DBOS's event loop against ``reach``.
    """
    settings = settings_of(reach)
    url = settings.url()
    if not url:
        raise ConfigError(
            "reach-dbos needs a PostgreSQL database for its checkpoints: set [plugins.reach-dbos] "
            "database_url = \"postgresql://user:password@host/db\" or the REACH_DBOS_DATABASE_URL variable"
        )
    with _STATE.lock:
        if _STATE.launched:
            other_schema = _STATE.settings is not None and _STATE.settings.schema_name != settings.schema_name
            if _STATE.url != url or other_schema:
                raise ConfigError(
                    "reach-dbos runs one DBOS instance per process, already started on another database or "
                    "schema; use one [plugins.reach-dbos] database_url and schema per process"
                )
            bind(reach)
            return
        bind(reach)
        executor = settings.executor_id
        if recover is False or (recover is None and not settings.recover_on_start):
            # DBOS resumes its executor's runs in launch(); a process that must not (a CLI listing
            # runs) takes a name of its own
            executor = f"{executor}-ro-{uuid.uuid4().hex[:8]}"
        config: dict[str, Any] = {
            "name": "reach",
            "system_database_url": _sqlalchemy_url(url),
            "dbos_system_schema": settings.schema_name,
            "executor_id": executor,
            "application_version": settings.application_version,
            # LISTEN/NOTIFY needs pg_notify, which locked-down databases revoke; polling needs nothing
            "use_listen_notify": False,
            "notification_listener_polling_interval_sec": settings.poll_interval,
            "log_level": "WARNING",
            "sys_db_pool_size": 10,
        }
        checkpoint.configure(url, settings.schema_name, synchronous_commit=settings.synchronous_commit)
        if not settings.synchronous_commit:
            config["db_engine_kwargs"] = {"connect_args": {"application_name": "dbos_transact",
                                                           "options": "-c synchronous_commit=off"}}
        _quiet_dbos_logger()
        DBOS(config=config)  # type: ignore[arg-type]
        DBOS.launch()
        _STATE.launched, _STATE.url, _STATE.settings = True, url, settings
        if settings.takeover_after is not None and "-ro-" not in executor:
            from .takeover import Heartbeat

            heartbeat = _STATE.heartbeat = Heartbeat(
                checkpoint.plain_url(url), settings.schema_name, executor, every=settings.heartbeat,
                takeover_after=settings.takeover_after, redactor=getattr(reach, "redactor", None))
            heartbeat.start()
            problem = unshared_ledger(reach)
            if problem:
                heartbeat.log.warning(problem)


def _quiet_dbos_logger() -> None:
    """Give DBOS's ``dbos`` logger the library convention's ``NullHandler`` when it has none.

    Why: DBOS, finding that logger without a handler, adds its own stderr handler and
    turns propagation off, so its records would print on a host that configured no
    logging and bypass the handlers of one that did. With a handler in place it does
    neither: its records propagate to the host's logging like any library's.
    """
    import logging

    dbos_log = logging.getLogger("dbos")
    if not dbos_log.handlers:
        dbos_log.addHandler(logging.NullHandler())


def unshared_ledger(reach: Any) -> str | None:
    """Why another instance taking this one's runs over could repeat a write, or None.

    A step cut off by a crash runs again where the run is resumed, and only the
    ledger (reach's store) knows that a write in it had finished. Resumed on another
    machine, a ledger in a local SQLite file knows nothing of it: the write runs again.
    One machine sharing one file is fine, so this is a warning, not an error."""
    store = getattr(getattr(getattr(reach, "config", None), "reach", None), "store", None) or ""
    if store.lower().startswith(("postgresql://", "postgres://", "postgresql+")):
        return None
    return ("reach-dbos: runs of this instance may be taken over by another (takeover_after, `reach runs "
            "resume --executor`), but reach's store (the ledger of writes) is not PostgreSQL "
            f"({store or 'the default SQLite file in data_dir'}); a write that finished here just before a crash "
            "would run again on an instance that does not share this file. Set [reach] store to the PostgreSQL "
            "every instance uses (docs/plugins/reach-dbos.md, Several instances).")


def shutdown() -> None:
    """Stop DBOS in this process (tests, ``reach_shutdown``); workflows still running stay pending."""
    with _STATE.lock:
        if _STATE.heartbeat is not None:
            _STATE.heartbeat.stop()
            _STATE.heartbeat = None
        if _STATE.launched:
            DBOS.destroy(workflow_completion_timeout_sec=0)
            checkpoint.close_all()
            _STATE.launched = False
            _STATE.url = None


def _adapter(reach: Any, name: str | None) -> Any:
    """The run's adapter, one per event loop (an HTTP client's pool belongs to one loop)."""
    loop = asyncio.get_running_loop()
    per_loop = _STATE.adapters.setdefault(loop, {})
    # keyed by the Reach too: a process that binds another Reach (its config, its model URL)
    # must not resume runs on DBOS's loop with the adapter built for the previous one
    key = (id(reach), name)
    held = per_loop.get(key)
    if held is None or held[0] is not reach:
        obj = reach.provider("adapter", name)
        if obj is None:
            raise ConfigError("no model adapter is installed: pip install reach-openai")
        if not hasattr(obj, "complete"):
            found = [p for p in reach.providers("adapter").values() if p.obj is obj]
            settings = reach.plugin_settings(found[0].plugin) if found else None
            obj = obj(reach, settings)
        for stale in [k for k, (r, _) in per_loop.items() if r is not reach]:
            del per_loop[stale]  # the workflows use the last Reach bound (``bind``): the others' are done
        held = per_loop[key] = (reach, obj)
    return held[1]


class _DurableAdapter:
    """The adapter seen by the loop: each ``complete`` is a checkpointed step."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name = getattr(inner, "name", "adapter")

    def describe(self) -> str:
        describe = getattr(self._inner, "describe", None)
        return str(describe()) if callable(describe) else str(self.name)

    async def complete(self, request: Any) -> Any:
        return await checkpoint.step(MODEL_STEP, lambda: self._inner.complete(request))


class _DurableReach:
    """The Reach seen by the loop: a turn of tool calls is one checkpointed step.

    Everything else is the real Reach's (tools, policy, config, hooks).
    """

    def __init__(self, reach: Any) -> None:
        self._reach = reach

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reach, name)

    async def invoke_many(self, calls: Sequence[Any], **kwargs: Any) -> Any:
        reach = self._reach

        limit = settings_of(reach).max_result_bytes

        async def turn() -> list[Any]:
            return [_bounded(r, limit) for r in await reach.invoke_many(calls, **kwargs)]

        return await checkpoint.step(TOOLS_STEP, turn)

    def provider(self, kind: str, name: str | None = None) -> Any:
        obj = self._reach.provider(kind, name)
        if kind == "confirmer" and obj is not None and hasattr(obj, "resolve"):
            return DurableConfirmer(obj, self._reach)
        return obj


def _bounded(result: Any, limit: int) -> Any:
    """``result``, or its head when its JSON is over ``limit`` bytes (``max_result_bytes``).

    A durable run writes each tool turn's results to PostgreSQL and reads them all
    back on every resume: an unbounded result (a tool or a service returning
    gigabytes) would fill the database and the memory of every replay. The cut is
    made before the step is recorded, so the model sees the same thing live and on
    replay. The call stays ``ok`` (it ran, once: a "failed" would invite a repeat of
    a write)."""
    from dataclasses import replace

    from reach_core.result import ToolError, ToolResult

    if not isinstance(result, ToolResult):
        return result
    text = result.to_json()
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return result
    head = text.encode("utf-8", "surrogatepass")[: limit // 2].decode("utf-8", "ignore")
    note = (f"the result of {result.name} was {size} bytes, over this durable run's limit of {limit} "
            "([plugins.reach-dbos] max_result_bytes): only its start is kept. The call ran; do not repeat "
            "it to see the rest, ask for a smaller part instead (a filter, a page, a limit).")
    meta = {**result.meta, "truncated_bytes": size}
    if result.ok:
        return replace(result, content={"truncated": True, "bytes": size, "note": note, "head": head},
                       meta=meta, _json=None)
    error = result.error
    message = (error.message if error is not None else "")[: limit // 2]
    return replace(result, error=ToolError(code=error.code if error else "execution_failed",
                                           message=message + " [" + note + "]",
                                           retry_after=error.retry_after if error else None),
                   meta=meta, _json=None)


@DBOS.workflow(name=WORKFLOW)
async def _run_workflow(messages_or_text: Any, options: dict[str, Any]) -> RunResult:
    """The durable run. ``options`` hold the checkpointed ``reach.run`` arguments."""
    run_id = DBOS.workflow_id
    assert run_id is not None
    reach = _STATE.reach
    if reach is None:
        raise RuntimeError("reach-dbos: no Reach is bound in this process (reach_dbos.runner.bind)")
    for _ in range(500):  # noqa: ASYNC110 - a run DBOS recovers at launch waits for reach's start-up
        if reach.started:
            break
        await asyncio.sleep(0.01)
    local = _STATE.local.get(run_id, {})
    adapter = local.get("adapter")
    inner = adapter if adapter is not None and not isinstance(adapter, str) else _adapter(reach, options.get("adapter"))
    await checkpoint.begin(run_id)  # the steps recorded so far, in one read
    try:
        return await run_agent(
            _DurableReach(reach), messages_or_text, adapter=_DurableAdapter(inner), run_id=run_id,
            on_step=local.get("on_step"), **{k: options[k] for k in _DURABLE_ARGS if k in options},
        )
    finally:
        checkpoint.end(run_id)


class DurableRunner:
    """The ``runner`` provider: ``reach.run`` as a DBOS workflow whose id is the run id."""

    name = "reach-dbos"

    async def run(self, reach: Any, messages_or_text: Any, **kwargs: Any) -> RunResult:
        if _STATE.launched and DBOS.workflow_id is not None:
            # a run started by a tool of a durable run (delegation): it is part of that run's step,
            # whose re-run after a crash the ledger settles; a workflow inside a step is not
            return await run_agent(reach, messages_or_text, **kwargs)
        await self.ensure(reach)
        if not isinstance(messages_or_text, str):
            from reach_core.loop import _initial_messages

            messages_or_text = _initial_messages(messages_or_text)
        run_id = kwargs.pop("run_id", None) or f"run_{uuid.uuid4().hex[:16]}"
        if not isinstance(run_id, str) or not _plausible(run_id):
            raise ValueError(f"run_id {run_id!r} cannot name a durable run: use 1-256 printable characters (no "
                             "control, format, line-break or other invisible characters; e.g. run_2024_05_01_a)")
        on_step = kwargs.pop("on_step", None)
        adapter = kwargs.pop("adapter", None)
        unknown = set(kwargs) - set(_DURABLE_ARGS)
        if unknown:
            raise TypeError(f"reach.run got unexpected arguments: {', '.join(sorted(unknown))}")
        options = dict(kwargs)
        if isinstance(adapter, str):
            options["adapter"] = adapter
        mine = {"adapter": adapter, "on_step": on_step}
        # a second caller of the same id (in flight here) must not swap the first one's adapter
        # or on_step, nor drop them when it returns
        ours = _STATE.local.setdefault(run_id, mine) is mine
        try:
            with SetWorkflowID(run_id):
                handle = await DBOS.start_workflow_async(_run_workflow, messages_or_text, options)
            if not _started_here(handle):  # an id already taken: is it this run?
                await _same_run(run_id, messages_or_text, options)
            return await _result(handle, run_id)
        finally:
            if ours:
                _STATE.local.pop(run_id, None)

    async def ensure(self, reach: Any) -> None:
        """DBOS launched and bound to ``reach`` (reach started first: ledger recovery comes before any resume)."""
        if not reach.started:
            await reach.start()
        if not _STATE.launched:
            await asyncio.to_thread(launch, reach)
        else:
            launch(reach)  # started already: checks this Reach names the same database, and binds it


#: Options that only bound how long a caller waits: a repeat may give others and still get the run.
_TIMING_ARGS = frozenset({"deadline", "confirm_wait"})


class RunIdInUse(ReachError, ValueError):
    """``reach.run(..., run_id=X)`` where X already names a durable run with another question,
    agent or options."""


def _fingerprint(messages_or_text: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """What makes two starts of one run id the same run: the question and the kept arguments."""
    from reach_core.loop import _initial_messages

    return (_initial_messages(messages_or_text),
            {k: v for k, v in options.items() if k not in _TIMING_ARGS and v is not None})


def _started_here(handle: Any) -> bool:
    """Did this start insert the run (DBOS executes it here, with the inputs just given)?

    DBOS returns a task handle only to the start that wrote the run's row; every later
    start of the id gets a polling handle on the existing run. Only those are compared
    (``_same_run``), which keeps a new run's start free of an extra round trip."""
    try:
        from dbos._core import WorkflowHandleAsyncTask
    except ImportError:  # another DBOS layout: compare always
        return False
    return isinstance(handle, WorkflowHandleAsyncTask)


async def _same_run(run_id: str, messages_or_text: Any, options: dict[str, Any]) -> None:
    """Refuse to hand back a run that another call started under the same id.

    DBOS starts a workflow id once: a later start of the same id, whatever its
    arguments, gets the first run's handle. That is the documented repeat (the
    same question again returns the recorded run without running anything), but a
    caller that reuses an id with another question or agent (a guessed or
    colliding id, another tenant) would receive that run's answer and transcript,
    and its own question would be silently dropped. DBOS keeps the first start's
    inputs (an insert that never overwrites), so comparing with them after the
    start is free of races: two concurrent starts with different questions see
    the same stored inputs, and only the one that wrote them gets the run.
    """
    found = await DBOS.list_workflows_async(workflow_ids=[run_id], load_input=True, load_output=False)
    stored = found[0].input if found else None
    args: Any = (stored or {}).get("args") if isinstance(stored, dict) else getattr(stored, "args", None)
    try:
        same = (bool(args) and len(args) == 2 and isinstance(args[1], dict)
                and _fingerprint(args[0], args[1]) == _fingerprint(messages_or_text, options))
    except (TypeError, ValueError):
        same = False
    if not same:
        raise RunIdInUse(
            f"run_id {run_id!r} already names a durable run with another question, agent or options; "
            "nothing was run and that run's result is not returned. Use a new run_id for a new run "
            "(leave it out and reach picks a random one); repeating the same question with the same "
            "arguments returns the recorded run."
        )


async def _result(handle: Any, run_id: str) -> RunResult:
    """The run's result; a cancelled run is an outcome (``cancelled``), not an exception."""
    from dbos._error import DBOSAwaitedWorkflowCancelledError, DBOSWorkflowCancelledError

    try:
        return await handle.get_result()  # type: ignore[no-any-return]
    except (DBOSWorkflowCancelledError, DBOSAwaitedWorkflowCancelledError):
        return RunResult(
            text="", outcome="cancelled", messages=[], results=[], steps=[], usage=Usage(), run_id=run_id,  # type: ignore[arg-type]
            error=f"the run was cancelled between two steps; `reach runs resume {run_id}` continues it "
            "from its last finished step",
        )


async def wait_for(run_id: str, wait: float | None = None) -> RunResult:
    """The result of a run that is running or being resumed in this process or another
    (``wait``: seconds, then ``TimeoutError``)."""
    handle: Any = await DBOS.retrieve_workflow_async(run_id)
    return await asyncio.wait_for(_result(handle, run_id), wait)
