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
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from agents import FunctionTool
from agents.tool_context import ToolContext

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


def _invoker(reach: Reach, name: str, agent: str | None, query: str | None, approved: bool) -> Any:
    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> str:
        call = {"id": ctx.tool_call_id, "name": name, "arguments": arguments}
        if approved:  # the SDK only gets here once a person approved this call
            with approved_call(name, ctx.tool_call_id, by="the Agents SDK (RunState.approve)"):
                result = await reach.invoke(call, agent=agent, query=query)
        else:
            result = await reach.invoke(call, agent=agent, query=query)
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
