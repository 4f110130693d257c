"""Who may do what: agents, allow/deny lists and risk tiers, enforced twice.

A tool an agent may not use is left out of ``reach.tools(agent=...)`` *and*
refused at invoke time, whatever the model sends.

Defaults (the ``default`` agent, used for ``agent=None`` or any agent not named
in config): ``read`` and ``write`` tools run; ``dangerous`` tools need a person's
confirmation, and are denied with the reason and the fix when no confirmer is
installed. ``[agents.default]`` tightens or loosens that.

Patterns in ``allow``/``deny``: a tool name, a glob (``sql_*``), ``tag:NAME``,
``plugin:NAME`` or ``risk:TIER``. Deny wins over allow.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

from .connectors import RISKS

if TYPE_CHECKING:
    from .config import AgentConfig
    from .tool import Tool

__all__ = ["CONFIRM", "DENY", "RUN", "Policy", "matches"]

# Policy.verdict values
DENY, RUN, CONFIRM = 0, 1, 2

_RANK = {r: i for i, r in enumerate(RISKS)}


def matches(pattern: str, tool: Tool) -> bool:
    """Does one allow/deny pattern cover ``tool``?"""
    if pattern.startswith("tag:"):
        return pattern[4:] in tool.tags
    if pattern.startswith("plugin:"):
        return fnmatch.fnmatchcase(tool.plugin, pattern[7:])
    if pattern.startswith("risk:"):
        return tool.risk == pattern[5:]
    return fnmatch.fnmatchcase(tool.name, pattern)


class Policy:
    """The compiled policy of one agent."""

    __slots__ = ("name", "config", "_cache", "_confirm", "_verdicts")

    def __init__(self, name: str, config: AgentConfig) -> None:
        self.name = name
        self.config = config
        self._cache: dict[int, bool] = {}
        self._confirm: dict[int, bool] = {}
        self._verdicts: dict[int, int] = {}

    def verdict(self, tool: Tool) -> int:
        """``DENY``, ``RUN`` or ``CONFIRM`` for ``tool``: both questions in one cached lookup
        (the pipeline asks them on every call)."""
        hit = self._verdicts.get(id(tool))
        if hit is None:
            hit = DENY if not self.allows(tool) else CONFIRM if self.needs_confirmation(tool) else RUN
            self._verdicts[id(tool)] = hit
        return hit

    def allows(self, tool: Tool) -> bool:
        key = id(tool)
        hit = self._cache.get(key)
        if hit is None:
            cfg = self.config
            hit = tool.blocked is None and (cfg.allow is None or any(matches(p, tool) for p in cfg.allow)) and not any(
                matches(p, tool) for p in cfg.deny
            ) and _RANK[tool.risk] <= _RANK[cfg.max_tier]
            self._cache[key] = hit
        return hit

    def needs_confirmation(self, tool: Tool) -> bool:
        """True when the tool's tier is above what this agent runs unattended,
        or an approval mode other than ``never`` is configured for it."""
        hit = self._confirm.get(id(tool))
        if hit is None:
            mode = self.approval_mode(tool)
            hit = mode != "never" if mode is not None else _RANK[tool.risk] > _RANK[self.config.auto_tier]
            self._confirm[id(tool)] = hit
        return hit

    def approval_mode(self, tool: Tool) -> str | None:
        approval = self.config.approval
        if not approval:
            return None
        if tool.name in approval:
            return approval[tool.name]
        for pattern, mode in approval.items():
            if matches(pattern, tool) or pattern == tool.risk:
                return mode
        return None

    def denial_fix(self, tool: Tool) -> str:
        if tool.blocked:
            return f"review the change, then run `reach tools pin {tool.name}`"
        return (
            f"add {tool.name!r} to [agents.{self.name}] allow (and remove it from deny)"
            if not self.allows(tool)
            else ""
        )
