"""A pydantic-ai toolset whose every call is a ``reach.invoke``.

Why an ``AbstractToolset`` and not ``FunctionToolset``: the tools' JSON Schemas
are reach's own (declared by connectors, not derived from Python signatures),
and arguments are validated once, by reach, with its model-friendly messages.
pydantic-ai's own argument validator only reads the model's JSON text, with reach's
decoder (:class:`_ReachArguments`), so what reach refuses in JSON text (a key given
twice, lone surrogates, ``NaN``, oversized or too deeply nested arguments) is refused
here too instead of being settled silently by a laxer parser before reach sees it.

How reach's outcomes look to a pydantic-ai agent:

* success: the tool returns reach's (shaped) content;
* ``invalid_arguments`` / ``invalid_json``: ``ModelRetry`` with reach's message,
  so the model corrects the call (counted against the tool's retries);
* a call reach's policy wants a person to approve: ``ApprovalRequired``, so the
  run ends with ``DeferredToolRequests`` and resumes with pydantic-ai's
  ``DeferredToolResults`` (``approval="auto"``, the default, when reach has no
  confirmer plugin of its own, or ``"native"``); otherwise the call goes to reach
  as is and reach's confirmer (reach-confirm) decides;
* every other failure (``denied``, ``needs_confirmation``, ``timeout`` ...):
  ``ToolFailed("<code>: <message>")``: the model sees it (pydantic-ai sends
  ``{"error": "denied: ..."}``) and adapts, without a retry prompt.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, ModelRetry
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from reach_core import Reach, ToolFailure, ToolResult
from reach_core.approvals import approved_call, native_approval
from reach_core.calls import decode_arguments

try:  # pydantic-ai >= 1.x has a terminal "the model should see this" failure
    from pydantic_ai.exceptions import ToolFailed
except ImportError:  # pragma: no cover - older pydantic-ai: the error payload is returned instead
    ToolFailed = None  # type: ignore[assignment,misc]

__all__ = ["ReachToolset", "as_pydantic_ai_toolset"]

_PASS_THROUGH = SchemaValidator(core_schema.any_schema())


class _ReachArguments:
    """pydantic-ai's argument validator for reach's tools: the model's JSON text read by
    reach's own decoder.

    Why not a pass-through ``SchemaValidator``: pydantic's JSON parser keeps the last of
    two equal keys, so ``{"target": "tmp", "target": "prod"}`` reached reach as
    ``{"target": "prod"}``, a dict reach cannot tell from a clean one, while the
    conversation, the traces and any approval screen show the text with both. Read
    here, the text gets reach's rules and message (a ``ModelRetry``: the model resends
    the call), as it does through the other bridges and reach's own loop. Partial
    (streamed) text and Python values are passed through: reach checks the values of a
    dict again when the call is made.
    """

    def __init__(self, max_bytes: int, max_depth: int) -> None:
        self.max_bytes, self.max_depth = max_bytes, max_depth

    def validate_json(self, input: str | bytes | bytearray, *, allow_partial: Any = False, **kwargs: Any) -> Any:
        if allow_partial not in (False, "off"):
            return _PASS_THROUGH.validate_json(input, allow_partial=allow_partial, **kwargs)
        try:
            return decode_arguments(input, self.max_bytes, self.max_depth)
        except ToolFailure as exc:
            raise ModelRetry(exc.message) from None

    def validate_python(self, input: Any, *, allow_partial: Any = False, **kwargs: Any) -> Any:
        return _PASS_THROUGH.validate_python(input, allow_partial=allow_partial, **kwargs)
_RETRY_CODES = frozenset({"invalid_arguments", "invalid_json"})

Approval = Literal["auto", "native", "reach"]


class ReachToolset(AbstractToolset[Any]):
    """reach's tools for one reach agent, as a pydantic-ai toolset.

    The tool list is computed for each run step, so a policy change applies at
    once. With ``limit`` and no fixed ``query``, the run's prompt is the query
    that reach's selector ranks the tools for.
    """

    def __init__(
        self,
        reach: Reach,
        agent: str | None = None,
        *,
        query: str | None = None,
        limit: int | None = None,
        names: list[str] | None = None,
        approval: Approval = "auto",
        max_retries: int = 2,
        id: str | None = None,
    ) -> None:
        self.reach = reach
        self.agent = agent
        self.query = query
        self.limit = limit
        self.names = names
        self.max_retries = max_retries
        self.native_approval = native_approval(reach, approval)
        self._id = id

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def label(self) -> str:
        return f"reach toolset (agent {self.agent or 'default'})"

    def _query(self, ctx: RunContext[Any]) -> str | None:
        if self.query is not None:
            return self.query
        return ctx.prompt if isinstance(ctx.prompt, str) else None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        query = self._query(ctx) if self.limit is not None else self.query
        tools = self.reach.select(agent=self.agent, query=query, limit=self.limit, names=self.names)
        policy = self.reach.policy(self.agent)
        caps = self.reach.config.reach
        arguments = _ReachArguments(caps.max_argument_bytes, caps.max_argument_depth)
        return {
            t.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=t.name,
                    description=t.description,
                    parameters_json_schema=t.declaration()["function"]["parameters"],
                    metadata={"reach_plugin": t.plugin, "risk": t.risk,
                              "needs_approval": policy.needs_confirmation(t)},
                ),
                max_retries=self.max_retries,
                args_validator=arguments,
            )
            for t in tools
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        call_id = ctx.tool_call_id or f"pai_{uuid.uuid4().hex[:16]}"
        call = {"id": call_id, "name": name, "arguments": tool_args}
        kwargs: dict[str, Any] = {"agent": self.agent, "run_id": ctx.run_id, "query": self._query(ctx)}
        needs_person = self.native_approval and bool((tool.tool_def.metadata or {}).get("needs_approval"))
        if needs_person and not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={"tool": name, "risk": (tool.tool_def.metadata or {}).get("risk")})
        if needs_person:
            with approved_call(name, call_id, by="pydantic-ai deferred approval"):
                result = await self.reach.invoke(call, **kwargs)
        else:
            result = await self.reach.invoke(call, **kwargs)
        return _outcome(result)


def _outcome(result: ToolResult) -> Any:
    if result.ok:
        return result.content
    assert result.error is not None
    if result.error.code in _RETRY_CODES:
        raise ModelRetry(result.error.message)
    if ToolFailed is not None:
        # pydantic-ai sends it as {"error": "<text>"}; the stable code leads the text
        raise ToolFailed(f"{result.error.code}: {result.error.message}")
    return result.model_payload()


def as_pydantic_ai_toolset(
    reach: Reach,
    agent: str | None = None,
    *,
    query: str | None = None,
    limit: int | None = None,
    names: list[str] | None = None,
    approval: Approval = "auto",
    max_retries: int = 2,
    id: str | None = None,
) -> ReachToolset:
    """The tools ``agent`` may use, as a pydantic-ai toolset (``Agent(..., toolsets=[...])``).

    ``approval="native"`` routes calls that reach's policy wants a person to
    approve through pydantic-ai's deferred approval (give the agent
    ``output_type=[str, DeferredToolRequests]``); ``"reach"`` leaves them to
    reach's confirmer plugin; ``"auto"`` (default) is ``"native"`` unless a
    confirmer plugin is installed in ``reach``.
    """
    return ReachToolset(reach, agent, query=query, limit=limit, names=names, approval=approval,
                        max_retries=max_retries, id=id)
