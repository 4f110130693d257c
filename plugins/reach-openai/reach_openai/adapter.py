"""The ``openai`` adapter: one Chat Completions call per loop step via ``openai.AsyncOpenAI``.

Works with every server that speaks the Chat Completions wire protocol (OpenAI,
Ollama, vLLM, LM Studio, DeepSeek ...). The SDK is imported on first use so that
``reach --version`` stays fast with the plugin installed.
"""

from __future__ import annotations

from typing import Any

from reach_core.adapter import ModelError, ModelRequest, ModelResponse, ModelToolCall, Usage

from .settings import OpenAISettings


class OpenAIAdapter:
    """Adapter ``openai``: native tool calling, or ``tagged`` mode for text-only models."""

    name = "openai"

    def __init__(
        self, settings: OpenAISettings | dict[str, Any] | None = None, reach: Any = None
    ) -> None:
        if settings is None:
            settings = OpenAISettings()
        elif isinstance(settings, dict):
            settings = OpenAISettings.model_validate(settings)
        self.settings = settings
        self.reach = reach
        self._client: Any = None
        self._loop: Any = None

    @property
    def endpoint(self) -> str:
        return self.settings.effective_base_url()

    def describe(self) -> str:
        mode = " (tagged mode)" if self.settings.mode == "tagged" else ""
        return f"openai-compatible model {self.settings.model} at {self.endpoint}{mode}"

    def client(self) -> Any:
        """The SDK client, created (and the SDK imported) on first use; ModelError without a key."""
        # An AsyncOpenAI pool belongs to the event loop that opened it; run_sync starts a
        # new loop per call, so a client from a finished loop is dropped, not reused.
        loop = _running_loop()
        if self._client is not None and loop is not self._loop:
            self._client = None
        if self._client is None:
            self._loop = loop
            key = self.settings.effective_api_key()
            if key is None:
                raise ModelError(
                    f"no API key for the model endpoint {self.endpoint}; set OPENAI_API_KEY or "
                    "[plugins.reach-openai] api_key, or point base_url at a local server "
                    "(or run `reach demo` for the offline scripted model)",
                    kind="auth",
                    endpoint=self.endpoint,
                )
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=key,
                base_url=self.endpoint,
                timeout=self.settings.timeout,
                max_retries=self.settings.max_retries,
            )
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP connection pool (``reach.aclose()`` calls this through the plugin)."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        client = self.client()
        s = self.settings
        timeout = (
            s.timeout if request.timeout is None else max(0.001, min(s.timeout, request.timeout))
        )
        tagged = s.mode == "tagged"
        kwargs: dict[str, Any] = {"model": s.model, "timeout": timeout}
        if tagged:
            from .tagged import to_wire

            kwargs["messages"] = to_wire(request.messages, request.tools, request.tool_choice)
        else:
            kwargs["messages"] = request.messages
            if request.tools:
                kwargs["tools"] = request.tools
                kwargs["tool_choice"] = request.tool_choice
                if s.parallel_tool_calls is not None:
                    kwargs["parallel_tool_calls"] = s.parallel_tool_calls
        if s.temperature is not None:
            kwargs["temperature"] = s.temperature

        import openai

        from .endpoint_errors import explain

        try:
            completion = await client.chat.completions.create(**kwargs)
        except openai.OpenAIError as exc:
            raise explain(exc, endpoint=self.endpoint, model=s.model, timeout=timeout) from None
        if not getattr(completion, "choices", None):
            raise ModelError(
                f"the model endpoint {self.endpoint} returned no choices for model {s.model}; "
                "check that it implements /v1/chat/completions",
                kind="bad_request",
                endpoint=self.endpoint,
            )
        choice = completion.choices[0]
        message = choice.message
        usage = _usage(getattr(completion, "usage", None))
        text = message.content
        if tagged:
            return self._parse_tagged(
                text or "", usage, choice.finish_reason, completion.model, request
            )
        calls = [
            ModelToolCall(
                id=str(tc.id or ""),
                name=str(tc.function.name or ""),
                arguments=_raw_arguments(tc.function),
            )
            for tc in (message.tool_calls or [])
            if getattr(tc, "function", None) is not None
        ]
        return ModelResponse(
            text=text,
            tool_calls=calls,
            usage=usage,
            finish_reason=choice.finish_reason,
            model=completion.model,
        )

    def _parse_tagged(
        self,
        text: str,
        usage: Usage,
        finish_reason: str | None,
        model: str | None,
        request: ModelRequest,
    ) -> ModelResponse:
        from reach_core.calls import TaggedParser
        from reach_core.result import dumps

        reach = request.reach or self.reach
        parse = getattr(reach, "parse_tagged", None)
        calls, errors = parse(text) if parse is not None else TaggedParser().parse(text)
        tool_calls = [
            ModelToolCall(
                id=c.id,
                name=c.name,
                arguments=c.arguments if isinstance(c.arguments, str) else dumps(c.arguments or {}),
            )
            for c in calls
        ]
        visible = TaggedParser().strip(text) if (tool_calls or errors) else text
        return ModelResponse(
            text=visible or None,
            tool_calls=tool_calls,
            usage=usage,
            finish_reason=finish_reason,
            model=model,
            feedback=[f"Your tool call could not be read: {e}" for e in errors],
        )


def _raw_arguments(function: Any) -> str:
    """The arguments as JSON text; a few servers send an object instead of a string.

    The object is written back as the model sent it, so the core's rules for argument
    text apply to it: ``NaN``/``Infinity`` (which the SDK's JSON reader accepts) stay
    constants the core refuses, not ``null`` (a NaN ``limit`` would run as "no limit"),
    and a lone surrogate stays a ``\\ud800`` escape the core refuses (written as a
    character, it also made the next request unencodable and ended the run)."""
    raw = getattr(function, "arguments", None)
    if raw is None:
        return "{}"
    if isinstance(raw, str):
        return raw
    import json

    text = json.dumps(raw, ensure_ascii=False, allow_nan=True, separators=(",", ":"), default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape it
        text = json.dumps(raw, allow_nan=True, separators=(",", ":"), default=str)
    return text


def _running_loop() -> Any:
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(
        prompt_tokens=int(getattr(raw, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(raw, "completion_tokens", 0) or 0),
        cached_tokens=int(cached or 0),
    )
