"""reach-preselect: send the model only the few tools that fit the question.

Public names are imported lazily so `import reach_preselect` stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HybridSelector", "SelectionEngine", "ToolDoc", "EngineOptions", "PreselectSettings"]


def __getattr__(name: str) -> Any:
    if name == "HybridSelector":
        from .selector import HybridSelector

        return HybridSelector
    if name in ("SelectionEngine", "ToolDoc", "EngineOptions"):
        from . import engine

        return getattr(engine, name)
    if name == "PreselectSettings":
        from .settings import PreselectSettings

        return PreselectSettings
    raise AttributeError(name)
