"""Settings of the reach-openai plugin (``[plugins.reach-openai]`` in reach.toml)."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

#: Where the SDK goes when neither settings nor OPENAI_BASE_URL name an endpoint.
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAISettings(BaseModel):
    """Which OpenAI-compatible endpoint and model ``reach.run`` talks to.

    Unset ``api_key``/``base_url`` fall back to ``OPENAI_API_KEY``/``OPENAI_BASE_URL``
    so the usual environment of OpenAI tools just works; local servers (Ollama,
    vLLM, LM Studio) need only ``base_url``.
    """

    model_config = ConfigDict(extra="forbid")

    api_key: SecretStr | None = Field(
        default=None,
        description='API key; default OPENAI_API_KEY. In reach.toml write { env = "VAR" }.',
    )
    base_url: str | None = Field(
        default=None,
        description="Chat Completions base URL ending in /v1; default OPENAI_BASE_URL, "
        "else https://api.openai.com/v1.",
    )
    model: str = Field(default="gpt-4o-mini", description="Model name as the endpoint knows it.")
    timeout: float = Field(
        default=60.0, gt=0, le=3600, description="Seconds to wait for one model call."
    )
    max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="SDK retries on connection errors, 408/409/429/5xx (with backoff).",
    )
    mode: Literal["native", "tagged"] = Field(
        default="native",
        description="native: the endpoint's tool calling; tagged: tools described in the system "
        "prompt and calls parsed from <tool_call> tags, for models without tool calling.",
    )
    temperature: float | None = Field(
        default=None, ge=0, le=2, description="Sampling temperature; default: the model's."
    )
    parallel_tool_calls: bool | None = Field(
        default=None,
        description="Ask for (or forbid) several tool calls per message; default: the endpoint's.",
    )

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://, e.g. http://127.0.0.1:11434/v1")
        return value.rstrip("/")

    def effective_base_url(self) -> str:
        """The endpoint actually used (settings, then OPENAI_BASE_URL, then OpenAI)."""
        return (
            self.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
        ).rstrip("/")

    def effective_api_key(self) -> str | None:
        """The key actually used; a custom endpoint without a key gets a placeholder."""
        if self.api_key is not None and self.api_key.get_secret_value():
            return self.api_key.get_secret_value()
        env = os.environ.get("OPENAI_API_KEY")
        if env:
            return env
        if self.effective_base_url() != OPENAI_DEFAULT_BASE_URL:
            return "not-needed"  # local servers ignore the key, the SDK insists on one
        return None
