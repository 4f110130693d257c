"""Settings of ``[plugins.reach-confirm]``."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ConfirmSettings(BaseModel):
    ttl_seconds: float = Field(3600.0, gt=0, description="How long a request can be approved.")
    default_mode: str = Field("always", pattern="^(once|run|always)$",
                              description="Approval mode when policy asks for confirmation without naming one.")
    summary_chars: int = Field(200, ge=40, description="Longest one-line summary shown to a person.")
