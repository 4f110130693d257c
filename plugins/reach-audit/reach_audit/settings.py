"""Settings of reach-audit, validated from ``[plugins.reach-audit]``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class AuditSettings(BaseModel):
    """What is recorded, how fast it is made durable, and what is hidden.

    The redaction lists *add to* the built-in ones: a configuration can make the
    audit trail hide more, never less.
    """

    model_config = {"extra": "forbid"}

    enabled: bool = True
    durability: Literal["batched", "sync"] = Field(
        "batched",
        description=(
            "batched: records are written by a background task at least every "
            "flush_interval_ms; a record is acknowledged once `await audit.flush()` "
            "returned. sync: the invoke returns only after its record is durable "
            "(concurrent calls share one commit)."
        ),
    )
    flush_interval_ms: int = Field(50, ge=1, le=50)
    batch_size: int = Field(1000, ge=1)
    summary_chars: int = Field(512, ge=32, description="cap of each argument/result summary")
    redact_keys: list[str] = Field(default_factory=list, description="extra secret key names")
    redact_patterns: list[str] = Field(default_factory=list, description="extra regexes to mask")
    log: str = Field(
        "logging",
        description=(
            'where audit events go: "logging" (the stdlib logger reach.audit, silent unless '
            'the host configures logging), "stderr", "stdout" or a file path (JSON lines), or "off"'
        ),
    )
    otel: bool = Field(True, description="emit OpenTelemetry spans when opentelemetry is installed")
    otel_content: bool = Field(
        False, description="put (redacted) arguments and results on spans; off by default"
    )
