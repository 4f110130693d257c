"""The seam between the agent loop and a model: the Adapter protocol and its types.

The loop (``reach_core.loop``) never talks to a model vendor. It keeps one
canonical transcript in OpenAI Chat Completions shape (``system``/``user``/
``assistant`` with ``tool_calls``/``tool`` messages), hands it to an adapter as a
:class:`ModelRequest`, and gets a :class:`ModelResponse` back. An adapter that
speaks another wire format (or a model without native tool calling) translates
the transcript itself, so the loop stays the same for every model.

Adapters are named providers registered through ``reach_register_adapters``;
``[strategies] adapter = "NAME"`` picks one when several are installed.

Failures of the model endpoint (connection refused, bad key, rate limit, server
error, timeout) are raised as :class:`ModelError`. The loop turns them into a
``model_error`` outcome with the message as is, so the message must name the
endpoint and say what to check; no traceback reaches the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "Adapter",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelToolCall",
    "ToolChoice",
    "Usage",
    "normalize_tool_choice",
]

#: ``"auto" | "none" | "required"`` or ``{"type": "function", "function": {"name": ...}}``.
ToolChoice = str | dict[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one model call used (``cached_tokens`` is the part of the prompt served from cache)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(slots=True)
class ModelToolCall:
    """One tool call as the model wrote it; ``arguments`` stays the raw JSON text.

    Keeping the raw text matters: invalid JSON must reach the pipeline unchanged
    so the model gets an ``invalid_json`` error it can fix.
    """

    id: str
    name: str
    arguments: str = "{}"

    def to_openai(self) -> dict[str, Any]:
        """The ``tool_calls`` entry of an assistant message."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class ModelRequest:
    """What the loop asks of the model for one step.

    ``messages`` is the canonical transcript (OpenAI shape); ``tools`` are OpenAI
    ``tools`` entries; ``timeout`` is the seconds left before the run's deadline
    (None: no deadline, use the adapter's own timeout).
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tool_choice: ToolChoice = "auto"
    run_id: str = ""
    step: int = 1
    timeout: float | None = None
    reach: Any = None


@dataclass(slots=True)
class ModelResponse:
    """The model's answer for one step.

    ``feedback`` carries problems the model itself must hear about that are not
    tool calls (a tagged call the parser could not read); the loop sends them
    back to the model as a user message and takes another step.
    """

    text: str | None = None
    tool_calls: list[ModelToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model: str | None = None
    feedback: list[str] = field(default_factory=list)

    def assistant_message(self) -> dict[str, Any]:
        """The canonical assistant message to append to the transcript."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        return msg


ModelErrorKind = Literal[
    "connection", "timeout", "auth", "rate_limited", "server", "bad_request", "not_found", "other"
]


class ModelError(Exception):
    """The model endpoint failed; ends the run with outcome ``model_error``.

    ``str(error)`` is shown to the user as is: name the endpoint and what to check
    ("is the server running?", "check OPENAI_API_KEY").
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ModelErrorKind = "other",
        endpoint: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.endpoint = endpoint
        self.status = status


@runtime_checkable
class Adapter(Protocol):
    """A model the loop can drive. Implementations are registered by name.

    ``describe()`` is one line for people ("openai gpt-4o-mini at https://...").
    ``complete()`` runs one model call; it raises :class:`ModelError` for endpoint
    failures and returns every tool call the model made in this message.
    """

    name: str

    def describe(self) -> str: ...

    async def complete(self, request: ModelRequest) -> ModelResponse: ...


def normalize_tool_choice(choice: Any) -> ToolChoice:
    """Accept ``"auto"``, ``"none"``, ``"required"``, a tool name, or the OpenAI dict.

    Returns the string modes unchanged and a named tool as the OpenAI dict, so
    adapters see one shape. ``None`` means ``"auto"``.
    """
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        if choice in ("auto", "none", "required"):
            return choice
        if not choice:
            raise ValueError("tool_choice must be 'auto', 'none', 'required' or a tool name")
        return {"type": "function", "function": {"name": choice}}
    if isinstance(choice, dict):
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else choice.get("name")
        if isinstance(name, str) and name:
            return {"type": "function", "function": {"name": name}}
    raise ValueError(
        f"tool_choice {choice!r} is not understood; use 'auto', 'none', 'required' or a tool name"
    )


def forced_tool_name(choice: ToolChoice) -> str | None:
    """The tool a named ``tool_choice`` forces, else None."""
    if isinstance(choice, dict):
        return str(choice["function"]["name"])
    return None
