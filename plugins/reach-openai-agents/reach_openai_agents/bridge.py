"""OpenAI Agents SDK ``FunctionTool``s whose every call is a ``reach.invoke``.

The SDK hands ``on_invoke_tool`` the model's raw JSON arguments; they go to
reach unparsed, so a broken JSON string becomes reach's ``invalid_json`` error
with its model-friendly message, and validation happens once, in reach.

The tool returns reach's compact JSON either way: the result, or
``{"error": {"code": ..., "message": ...}}``. A returned string is what the SDK
expects for an error the model should read (a raised exception would end the
run). Calls that reach's policy wants a person to approve are declared with
``needs_approval=True`` (``approval="auto"``/``"native"``, see
``reach_core.approvals.native_approval``): the SDK
interrupts the run, and after ``RunState.approve`` the call runs through reach
as approved.

Every call carries the SDK run's id, so a write gets an idempotency key (run id +
tool-call id) and a step that is replayed writes once, as with the pydantic-ai
bridge: the run's trace id (kept when a run resumes from its ``RunState``), or,
with tracing off, an id made for the run (keyed by the run's usage counter, which
every step of the run shares, a resume from its ``RunState`` in the process too).
"""

from __future__ import annotations

import copy
import uuid
import weakref
from typing import Any, Literal

from agents import FunctionTool
from agents.tool_context import ToolContext
from agents.tracing import get_current_trace

from reach_core import Reach
from reach_core.approvals import approved_call, native_approval

__all__ = ["as_openai_agents_tools", "strict_compatible"]

Approval = Literal["auto", "native", "reach"]


def strict_compatible(schema: Any) -> bool:
    """Can the SDK send this schema in strict mode unchanged?

    Strict mode needs every object to list all its properties as required and to
    forbid others; the SDK would otherwise rewrite the schema (making optional
    arguments required), which changes what reach validates against.
    """
    if isinstance(schema, list):
        return all(strict_compatible(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required") or ()) != set(props):
            return False
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions", "patternProperties"):
            if isinstance(value, dict) and not all(strict_compatible(v) for v in value.values()):
                return False
        elif key in ("items", "anyOf", "allOf", "oneOf", "additionalProperties", "not", "prefixItems"):
            if not strict_compatible(value):
                return False
    return True


# Runs without a trace: an id per run, keyed by the run's Usage object, which the SDK
# shares (by reference) with every ToolContext of the run; the entry goes with it.
_RUN_IDS: dict[int, str] = {}


def _run_id(ctx: ToolContext[Any]) -> str | None:
    trace = get_current_trace()
    trace_id = getattr(trace, "trace_id", None)
    if isinstance(trace_id, str) and trace_id and trace_id != "no-op":
        return f"oa-{trace_id}"
    usage = getattr(ctx, "usage", None)
    if usage is None:
        return None
    key = id(usage)
    run = _RUN_IDS.get(key)
    if run is None:
        try:
            weakref.finalize(usage, _RUN_IDS.pop, key, None)
        except TypeError:  # not weak-referenceable: no id we could tell apart from a later run's
            return None
        run = _RUN_IDS[key] = f"oa-{uuid.uuid4().hex}"
    return run


def _invoker(reach: Reach, name: str, agent: str | None, query: str | None, approved: bool) -> Any:
    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> str:
        call = {"id": ctx.tool_call_id, "name": name, "arguments": arguments}
        run_id = _run_id(ctx)
        if approved:  # the SDK only gets here once a person approved this call
            with approved_call(name, ctx.tool_call_id, by="the Agents SDK (RunState.approve)"):
                result = await reach.invoke(call, agent=agent, query=query, run_id=run_id)
        else:
            result = await reach.invoke(call, agent=agent, query=query, run_id=run_id)
        return result.to_json()

    return on_invoke_tool


def as_openai_agents_tools(
    reach: Reach,
    agent: str | None = None,
    *,
    query: str | None = None,
    limit: int | None = None,
    names: list[str] | None = None,
    approval: Approval = "auto",
) -> list[FunctionTool]:
    """The tools ``agent`` may use, as ``FunctionTool``s for ``agents.Agent(tools=...)``.

    ``query``/``limit`` go to reach's selection; ``names`` narrows to those tools.
    ``approval="native"`` declares calls that reach's policy wants a person to
    approve with ``needs_approval=True``, so the SDK asks; ``"reach"`` leaves them
    to reach's confirmer plugin (reach-confirm); ``"auto"`` (default) is
    ``"native"`` unless a confirmer plugin is installed in ``reach``.
    """
    native = native_approval(reach, approval)
    policy = reach.policy(agent)
    out: list[FunctionTool] = []
    for t in reach.select(agent=agent, query=query, limit=limit, names=names):
        schema = copy.deepcopy(t.declaration()["function"]["parameters"])  # the SDK may edit it in place
        ask = native and policy.needs_confirmation(t)
        out.append(FunctionTool(
            name=t.name,
            description=t.description,
            params_json_schema=schema,
            on_invoke_tool=_invoker(reach, t.name, agent, query, ask),
            strict_json_schema=strict_compatible(schema),
            needs_approval=ask,
        ))
    return out
