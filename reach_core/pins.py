"""Pins against tool rug-pulls: a recorded hash of each tool's name, description and schema.

``reach tools pin`` records the current definitions. When a plugin update or a
remote (MCP) server later changes a pinned tool, the tool is blocked — left out
of ``reach.tools()`` and refused at invoke time with ``denied`` — until a person
reviews the change and pins again. Unpinned tools are not affected.

The pin also records the tool's tier (``risk``, config overrides applied), because
the tier decides what runs without a person: a tool reviewed as ``dangerous`` that
now declares itself ``read`` (a plugin update, an MCP server that now sends
``readOnlyHint``) would otherwise keep its pin and run unattended. A lower tier
blocks the tool like a changed definition; a higher one is believed. A tier set in
``[connectors.NAME] risk`` counts like any other: at or above the pinned one, the tool
runs. Pins written before tiers were recorded check the definition only.

It records whether the tool was ``idempotent`` too: an idempotent tool is retried on
a failure and its calls may be answered again from a replay, so a write reviewed as
run-at-most-once that an update now declares idempotent would start running twice.
That change blocks the tool the same way; the other way round (now at most once) is
believed. ``[connectors.NAME] idempotent = false`` restores the reviewed behaviour.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from .connectors import RISKS

if TYPE_CHECKING:
    from .tool import Tool

_RANK = {r: i for i, r in enumerate(RISKS)}

__all__ = ["PinStore"]


class PinStore:
    """Pins kept as a small JSON file (``[reach] pins``, default ``<data_dir>/pins.json``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pins: dict[str, str] | None = None
        self._tiers: dict[str, str] = {}  # the tier of each pinned tool when it was pinned
        self._idempotent: dict[str, bool] = {}  # whether each pinned tool was idempotent when pinned

    @property
    def pins(self) -> dict[str, str]:
        if self._pins is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                data = {}
            self._pins = {str(k): str(v) for k, v in (data.get("tools") or {}).items()}
            self._tiers = {str(k): str(v) for k, v in (data.get("tiers") or {}).items()}
            self._idempotent = {str(k): v for k, v in (data.get("idempotent") or {}).items() if isinstance(v, bool)}
        return self._pins

    def check(self, tool: Tool) -> str | None:
        """Why ``tool`` is blocked, or ``None`` when it matches its pin (or has none)."""
        pinned = self.pins.get(tool.name)
        if pinned is None:
            return None
        if pinned != tool.fingerprint():
            return (
                f"the definition of {tool.name!r} changed since it was pinned; it stays blocked until a person "
                f"reviews the change and runs `reach tools pin {tool.name}`"
            )
        tier = self._tiers.get(tool.name)
        if tier in _RANK and _RANK.get(tool.risk, -1) < _RANK[tier]:
            return (
                f"the tier of {tool.name!r} dropped from {tier!r} when it was pinned to {tool.risk!r}, so it would "
                f"run with less oversight; it stays blocked until a person reviews the change and runs "
                f"`reach tools pin {tool.name}` (or sets [connectors.{tool.name}] risk = {tier!r})"
            )
        if tool.idempotent and self._idempotent.get(tool.name) is False:
            return (
                f"{tool.name!r} was pinned as not idempotent (run at most once) and now says it is idempotent, so "
                f"a failed call would be retried and could act twice; it stays blocked until a person reviews the "
                f"change and runs `reach tools pin {tool.name}` (or sets [connectors.{tool.name}] idempotent = false)"
            )
        return None

    def pin(self, tools: list[Tool]) -> dict[str, str]:
        """Record the current definitions of ``tools``; atomic write."""
        pins = dict(self.pins)
        tiers = dict(self._tiers)
        idempotent = dict(self._idempotent)
        for t in tools:
            pins[t.name] = t.fingerprint()
            tiers[t.name] = t.risk
            idempotent[t.name] = t.idempotent
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"tools": pins, "tiers": tiers, "idempotent": idempotent}, indent=2, sort_keys=True)
        # a fresh name made with O_EXCL: a link planted at a fixed ``pins.tmp`` would be written through
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._pins, self._tiers, self._idempotent = pins, tiers, idempotent
        return pins
