"""Settings of reach-shape: ``[plugins.reach-shape]`` and ``[plugins.reach-shape.tools.NAME]``.

``[connectors.NAME]`` belongs to the core and cannot hold plugin data, so per-tool
shaping lives under this plugin's own table, keyed by tool name.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .tokens import Tokenizer

__all__ = ["ShapeSettings", "ToolShape"]

Mode = Literal["auto", "json", "text", "off"]


class ToolShape(BaseModel):
    """How one tool's results are shaped."""

    model_config = ConfigDict(extra="forbid")

    budget: int | None = Field(
        default=None, ge=200, description="Tokens this tool's result may take; default: default_budget."
    )
    fields: list[str] = Field(
        default_factory=list,
        description='Keep only these fields, as paths ("current.temperature", "items.name"); '
        "the rest stays reachable through read_result.",
    )
    mode: Mode = Field(
        default="auto",
        description='"json": shape by structure; "text": shape the result as text (JSON is rendered '
        'one item per line); "auto": text for strings, structure otherwise; "off": never shape.',
    )


class ShapeSettings(BaseModel):
    """Budgets, per-tool rules and how long full results are kept."""

    model_config = ConfigDict(extra="forbid")

    default_budget: int = Field(default=2000, ge=200, description="Tokens a tool result may take by default.")
    read_budget: int = Field(
        default=4000, ge=200, description="Tokens one read_result answer may take (its own slices are never shaped)."
    )
    tools: dict[str, ToolShape] = Field(default_factory=dict, description="Per-tool rules, by tool name.")
    run_ttl: float = Field(
        default=3600.0, gt=0,
        description="Seconds a full result stays available within a run (the run's end drops it sooner).",
    )
    bare_ttl: float = Field(
        default=300.0, gt=0, description="Seconds a full result of a call without a run id stays available."
    )
    max_entries: int = Field(default=512, ge=1, description="Full results kept at most (oldest dropped first).")
    max_bytes: int = Field(
        default=256 * 1024 * 1024, ge=1024, description="Serialized size of all kept full results at most."
    )
    tokenizer: Tokenizer = Field(
        default="auto", description='"cl100k" (needs the tokens extra), "estimate", or "auto": cl100k when installed.'
    )

    def for_tool(self, name: str) -> ToolShape | None:
        return self.tools.get(name)
