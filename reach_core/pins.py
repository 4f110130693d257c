"""Pins against tool rug-pulls: a recorded hash of each tool's name, description and schema.

``reach tools pin`` records the current definitions. When a plugin update or a
remote (MCP) server later changes a pinned tool, the tool is blocked — left out
of ``reach.tools()`` and refused at invoke time with ``denied`` — until a person
reviews the change and pins again. Unpinned tools are not affected.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tool import Tool

__all__ = ["PinStore"]


class PinStore:
    """Pins kept as a small JSON file (``[reach] pins``, default ``<data_dir>/pins.json``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pins: dict[str, str] | None = None

    @property
    def pins(self) -> dict[str, str]:
        if self._pins is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                data = {}
            self._pins = {str(k): str(v) for k, v in (data.get("tools") or {}).items()}
        return self._pins

    def check(self, tool: Tool) -> str | None:
        """Why ``tool`` is blocked, or ``None`` when it matches its pin (or has none)."""
        pinned = self.pins.get(tool.name)
        if pinned is None or pinned == tool.fingerprint():
            return None
        return (
            f"the definition of {tool.name!r} changed since it was pinned; it stays blocked until a person "
            f"reviews the change and runs `reach tools pin {tool.name}`"
        )

    def pin(self, tools: list[Tool]) -> dict[str, str]:
        """Record the current definitions of ``tools``; atomic write."""
        pins = dict(self.pins)
        for t in tools:
            pins[t.name] = t.fingerprint()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"tools": pins}, indent=2, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)
        self._pins = pins
        return pins
