"""LangChain ``BaseTool``s whose every call is a ``reach.invoke``.

Why a ``BaseTool`` subclass rather than ``StructuredTool.from_function``: the
tool's ``args_schema`` is reach's JSON Schema itself (LangChain sends it to the
model unchanged and does not validate against it), so validation happens once,
in reach, with reach's model-friendly messages; and the tool sees LangChain's
tool-call id, which becomes the reach call id (audit, idempotency keys).

Failures (``denied``, ``needs_confirmation``, ``invalid_arguments`` ...) are
raised as ``ToolException`` with ``handle_tool_error=True``: LangChain turns
them into a ``ToolMessage`` with ``status="error"`` whose content is reach's
error JSON (``{"error": {"code": ..., "message": ...}}``), so the agent goes on
and the model reads what to do.

Every call carries a run id, so a write gets an idempotency key (run id + tool-call
id) and a step that is replayed writes once, as with the pydantic-ai bridge: the
``run_id`` given to :func:`as_langchain_tools`, else the one the caller gave
LangGraph (``config={"run_id": ...}``), else one made for the graph invocation
the call belongs to. On a LangGraph thread (a checkpointer and ``thread_id``) the
key is the thread's, the reach agent's and the tool-call id, so a node re-run when
the thread is resumed does not repeat a write that already happened, and two reach
agents on one thread do not take each other's keys.

Calls that reach's policy wants a person to approve follow reach's confirmer
(``approval="reach"``, the default), or, with ``approval="interrupt"``, LangGraph's
own human-in-the-loop: the tool calls ``langgraph.types.interrupt`` before the
call reaches reach, and the graph resumes with the person's answer, which names the
call it answers (``Command(resume={"type": "approve", "call_id": ...})``, the
``call_id`` of the interrupt's value; needs a checkpointer). LangGraph hands the
answers of one node to its ``interrupt`` calls by their order, and a node running
several tool calls at once (``ToolNode``, a thread pool) may reach them in another
order when it runs again; an answer that names another call is a denial (one that names
no call is matched by that order, as before).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import hashlib
import json
import logging
import threading
import uuid
from collections import OrderedDict
from typing import Any, Literal

from langchain_core.runnables import ensure_config
from langchain_core.tools import BaseTool, ToolException
from pydantic import ConfigDict, Field

from reach_core import Reach, ToolResult
from reach_core.approvals import approved_call
from reach_core.result import dumps

__all__ = ["ReachTool", "as_langchain_tools"]

log = logging.getLogger("reach_langchain")

# LangChain hands the tool-call id to ``arun``/``run`` but not to ``_arun``/``_run``;
# it travels between them in this variable (one value per task/thread, never shared).
_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("reach_langchain_call_id", default=None)

Approval = Literal["reach", "interrupt"]

# One run id per LangGraph invocation: its RunControl is shared by every task of the
# invocation (and only of that one). It cannot be weakly referenced, so the last few
# thousand are held here with their ids: while held, no other object can take its id().
_INVOCATION_RUNS: OrderedDict[int, tuple[Any, str]] = OrderedDict()
_INVOCATION_LOCK = threading.Lock()
_KEEP_INVOCATIONS = 4096


def _invocation_run(control: Any) -> str:
    with _INVOCATION_LOCK:
        hit = _INVOCATION_RUNS.get(id(control))
        if hit is not None and hit[0] is control:
            _INVOCATION_RUNS.move_to_end(id(control))
            return hit[1]
        run = f"lc-{uuid.uuid4().hex}"
        _INVOCATION_RUNS[id(control)] = (control, run)
        if len(_INVOCATION_RUNS) > _KEEP_INVOCATIONS:
            _INVOCATION_RUNS.popitem(last=False)
        return run


def _run_scope(config: Any) -> tuple[str | None, str | None]:
    """``(run_id, thread_id)`` of the graph invocation a tool call belongs to."""
    configurable = config.get("configurable") or {}
    runtime = configurable.get("__pregel_runtime")
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None) or configurable.get("thread_id")
    thread = str(thread) if thread is not None else None
    given = getattr(info, "run_id", None) or configurable.get("run_id")
    if given is not None:
        return f"lc-{given}", thread
    control = getattr(runtime, "control", None)
    if control is not None:
        return _invocation_run(control), thread
    return None, thread  # outside LangGraph, nothing names the whole run: no run id (as before)


def _decision(answer: Any, call_id: str) -> tuple[bool, str | None, str | None]:
    """``(approved, message, mismatch)`` from a resume value for the call ``call_id``.

    An answer is ``{"type": "approve" | "reject", "call_id": ..., "message": ...}`` (``"accept"``
    as LangChain's HITL spells approve), ``True``/``False``, or ``{"decisions": [...]}`` of them.
    Why the id: LangGraph matches the answers of one node to its interrupts by order, not by
    what they asked, so an approval meant for one call could land on another when a node
    runs several calls and reaches them in another order after the resume. An answer that
    names a call counts only for that call, exactly (same string: no case folding, trimming
    or look-alikes); in a ``decisions`` list that names calls, the one decision naming this
    call counts. An answer that names no call is LangGraph's order, as before (the first
    decision of a list): kept so that ``Command(resume={"type": "approve"})`` still works for
    one call at a time, and the docs ask for the id. ``mismatch`` says why an answer that
    names another call, or several decisions for this one, approved nothing."""
    if isinstance(answer, dict) and isinstance(answer.get("decisions"), list):
        decisions = answer["decisions"]
        if any(isinstance(d, dict) and "call_id" in d for d in decisions):
            mine = [d for d in decisions if isinstance(d, dict) and d.get("call_id") == call_id]
            if len(mine) != 1:
                return False, None, f"{len(mine)} of the decisions name this call"
            answer = mine[0]
        elif decisions:
            answer = decisions[0]
    if isinstance(answer, bool):
        return answer, None, None
    if not isinstance(answer, dict):
        return False, None, None
    if "call_id" in answer and answer["call_id"] != call_id:
        return False, None, f"the answer names another call ({str(answer['call_id'])[:80]!r})"
    message = answer.get("message")
    return answer.get("type") in ("approve", "accept"), message if isinstance(message, str) else None, None


def _ask_person(tool: ReachTool, arguments: dict[str, Any], call_id: str) -> tuple[bool, str | None]:
    from langgraph.types import interrupt

    answer = interrupt({
        "action": "approve_tool_call", "tool": tool.name, "arguments": arguments, "call_id": call_id,
        "risk": (tool.metadata or {}).get("risk"), "description": tool.description,
        "allowed_decisions": ["approve", "reject"],
    })
    approved, message, mismatch = _decision(answer, call_id)
    if mismatch is not None:
        log.warning("reach_langchain: a resume answer for the interrupt of %s call %r approved nothing: %s; "
                    "resume with {\"type\": \"approve\", \"call_id\": %r}", tool.name, call_id, mismatch, call_id)
        raise ToolException(dumps({"error": {"code": "denied", "message": (
            f"this {tool.name} call was not run: the person's answer was not for it; "
            "do not call it again unless the user asks.")}}))
    return approved, message


def _asked_id(name: str, arguments: dict[str, Any]) -> str:
    """The ``call_id`` an interrupt shows for a call made without a tool-call id: the node
    runs again when the graph resumes and the answer must name the same call, so it is
    the tool's and the arguments' (the random id reach gets is new on every run)."""
    text = json.dumps([name, arguments], sort_keys=True, ensure_ascii=False, default=str)
    return "lc_" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class ReachTool(BaseTool):
    """One reach tool as a LangChain tool. Build them with :func:`as_langchain_tools`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    reach: Any = Field(exclude=True)
    """The ``Reach`` that runs the calls."""
    agent: str | None = None
    """The reach agent whose policy applies (``None``: the default agent)."""
    query: str | None = None
    """The user's question, handed to reach's hooks as ``ctx.query``."""
    ask_person: bool = False
    """Ask through a LangGraph interrupt before the call (``approval="interrupt"``)."""
    run_id: str | None = None
    """The reach run the calls belong to (``None``: the graph invocation's, see the module doc)."""
    handle_tool_error: Any = True
    response_format: Any = "content_and_artifact"

    async def arun(self, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any) -> Any:
        token = _CALL_ID.set(tool_call_id)
        try:
            return await super().arun(tool_input, *args, tool_call_id=tool_call_id, **kwargs)
        finally:
            _CALL_ID.reset(token)

    def run(self, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any) -> Any:
        token = _CALL_ID.set(tool_call_id)
        try:
            return super().run(tool_input, *args, tool_call_id=tool_call_id, **kwargs)
        finally:
            _CALL_ID.reset(token)

    async def _arun(self, /, **arguments: Any) -> tuple[str, ToolResult]:
        # a tool called without a tool call (``tool.ainvoke(args)``) still gets an id of its own
        given_id = _CALL_ID.get()
        call_id = given_id or f"lc_{uuid.uuid4().hex[:16]}"
        call = {"id": call_id, "name": self.name, "arguments": arguments}
        # the config LangChain runs this tool under (not a parameter: a tool field may be called `config`)
        run_id, thread = _run_scope(ensure_config())
        run_id = self.run_id or run_id
        kwargs: dict[str, Any] = {"agent": self.agent, "query": self.query, "run_id": run_id}
        if thread is not None and given_id is not None:
            # the agent too: the ledger keeps a key per agent and refuses another agent's, so two
            # reach agents on one thread (a supervisor's sub-agents) whose models number their calls
            # alike had the second write denied, with a "new key" the model cannot send through LangChain
            kwargs["idempotency_key"] = f"lc:{thread}:{self.agent or 'default'}:{given_id}"
        if self.ask_person:
            approved, message = _ask_person(self, arguments, given_id or _asked_id(self.name, arguments))
            if not approved:
                raise ToolException(_declined(self.name, message))
            with approved_call(self.name, call_id, by="a LangGraph interrupt"):
                result: ToolResult = await self.reach.invoke(call, **kwargs)
        else:
            result = await self.reach.invoke(call, **kwargs)
        if not result.ok:
            raise ToolException(result.to_json())
        return result.to_json(), result

    def _run(self, /, **arguments: Any) -> tuple[str, ToolResult]:
        """Synchronous LangChain paths (``tool.invoke``): the async call on a private loop.

        A fresh thread keeps this usable from inside a running event loop too; the
        async path (``ainvoke``, LangGraph's async nodes) is the one to prefer.
        """
        ctx = contextvars.copy_context()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(ctx.run, asyncio.run, self._arun(**arguments)).result()


def _declined(name: str, message: str | None) -> str:
    text = f"a person declined this {name} call" + (f": {message}" if message else "")
    return dumps({"error": {"code": "denied", "message": text + "; do not call it again."}})


def as_langchain_tools(
    reach: Reach,
    agent: str | None = None,
    *,
    query: str | None = None,
    limit: int | None = None,
    names: list[str] | None = None,
    approval: Approval = "reach",
    run_id: str | None = None,
) -> list[BaseTool]:
    """The tools ``agent`` may use, as LangChain tools.

    ``query``/``limit`` go to reach's selection (the installed selector ranks the
    tools for the question; pinned tools always come along); ``names`` narrows to
    those tools. The policy is applied again at every call, so a tool that became
    forbidden after this list was made is still refused.

    ``approval="interrupt"`` asks a person through LangGraph's ``interrupt`` for
    calls the policy wants approved (the graph needs a checkpointer and the
    approval counts in reach's pipeline through ``reach_core.approvals``); ``"reach"`` leaves them to reach's
    confirmer plugin, or denies them when there is none.

    ``run_id`` fixes the reach run of every call (guard rails per run, idempotency keys);
    by default each graph invocation is a run of its own (see the module doc).
    """
    if approval not in ("reach", "interrupt"):
        raise ValueError("approval must be 'reach' (reach's confirmer) or 'interrupt' (a LangGraph interrupt)")
    if approval == "interrupt":
        try:
            import langgraph.types  # noqa: F401
        except ImportError:
            raise ValueError("approval='interrupt' needs LangGraph: pip install langgraph") from None
    policy = reach.policy(agent)
    tools = reach.select(agent=agent, query=query, limit=limit, names=names)
    return [
        ReachTool(
            name=t.name,
            description=t.description,
            args_schema=t.declaration()["function"]["parameters"],
            reach=reach,
            agent=agent,
            query=query,
            ask_person=approval == "interrupt" and policy.needs_confirmation(t),
            run_id=run_id,
            tags=["reach", *t.tags],
            metadata={"reach_plugin": t.plugin, "risk": t.risk},
        )
        for t in tools
    ]
