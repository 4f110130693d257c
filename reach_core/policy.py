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
from .errors import config_line

if TYPE_CHECKING:
    from .config import AgentConfig
    from .tool import Tool

__all__ = ["CONFIRM", "DENY", "RUN", "Policy", "matches", "strictest_mode"]

# Policy.verdict values
DENY, RUN, CONFIRM = 0, 1, 2

_RANK = {r: i for i, r in enumerate(RISKS)}

#: how much a person is asked under each approval mode; ``once`` (per arguments, for
#: good) and ``run`` (per run, any arguments) each ask where the other does not
_MODE_RANK = {"never": 0, "once": 1, "run": 1, "always": 2}


def strictest_mode(modes: list[str | None]) -> str | None:
    """The approval mode that asks at least whenever any of ``modes`` would ask.

    ``None`` (no mode named: the confirmer's default) yields to any named mode; of
    ``once`` and ``run`` together, neither covers the other, so ``always``.
    """
    named = [m for m in modes if m is not None]
    if not named:
        return None
    top = max(_MODE_RANK[m] for m in named)
    kinds = {m for m in named if _MODE_RANK[m] == top}
    return kinds.pop() if len(kinds) == 1 else "always"


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

    @property
    def pinned(self) -> list[str]:
        """Tools offered to this agent whatever a selector ranks (``pinned`` in its table)."""
        return list(self.config.pinned)

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
            mode = self.configured_mode(tool)
            hit = mode != "never" if mode is not None else _RANK[tool.risk] > _RANK[self.config.auto_tier]
            self._confirm[id(tool)] = hit
        return hit

    def approval_mode(self, tool: Tool) -> str | None:
        """The approval mode a confirmer applies to a call of ``tool`` by this agent
        (``never``, ``once``, ``run``, ``always``; ``None``: the confirmer's default)."""
        return self.configured_mode(tool)

    def configured_mode(self, tool: Tool) -> str | None:
        """The mode this agent's own ``approval`` table names for ``tool``.

        The tool's own name wins: it is a deliberate choice about that one tool. Among
        patterns (globs, ``tag:``, ``plugin:``, ``risk:``, a bare tier), the strictest
        mode that matches wins (:func:`strictest_mode`), whatever order they are written in: a TOML table has
        no order a reader can rely on, and ``"get_*" = "never"`` written before
        ``"risk:dangerous" = "always"`` must not let a dangerous ``get_*`` tool run
        unattended. (It used to be the first pattern written.)"""
        approval = self.config.approval
        if not approval:
            return None
        if tool.name in approval:
            return approval[tool.name]
        return strictest_mode([mode for pattern, mode in approval.items()
                               if matches(pattern, tool) or pattern == tool.risk])

    def denial_fix(self, tool: Tool, *, confirmer: bool = False) -> str:
        """What would let this agent run ``tool``, as config lines to set (see
        ``errors.config_line``): each rule that refuses it is named by its own key
        (``allow``, ``deny``, ``max_tier``). When the tool would then need a person and
        no ``confirmer`` is installed, the lines that run it unattended come too."""
        if tool.blocked:
            return f"review the change, then run `reach tools pin {tool.name}`"
        cfg, table = self.config, ("agents", self.name)
        lines = []
        if cfg.allow is not None and not any(matches(p, tool) for p in cfg.allow):
            lines.append(config_line(table, "allow", [*cfg.allow, tool.name]))
        denied_by = [p for p in cfg.deny if matches(p, tool)]
        if denied_by:
            lines.append(config_line(table, "deny", [p for p in cfg.deny if p not in denied_by]))
        if _RANK[tool.risk] > _RANK[cfg.max_tier]:
            lines.append(config_line(table, "max_tier", tool.risk))
        if not lines:
            return ""
        fix = "set " + " and ".join(lines)
        unattended = [] if confirmer else self.confirmation_lines(tool)
        if unattended:
            fix += (f" and, since it then needs a person's approval, {' and '.join(unattended)} "
                    "(or install a confirmer plugin, pip install reach-confirm, to have each call approved)")
        return fix

    def confirmation_lines(self, tool: Tool) -> list[str]:
        """The config lines that let this agent run ``tool`` without a person's approval:
        the tool's own approval entry (which wins over patterns) when an approval mode
        asks, else ``auto_tier`` raised to the tool's tier; none when nothing asks."""
        mode = self.configured_mode(tool)
        if mode is not None:
            return [] if mode == "never" else [config_line(("agents", self.name, "approval"), tool.name, "never")]
        if _RANK[tool.risk] > _RANK[self.config.auto_tier]:
            return [config_line(("agents", self.name), "auto_tier", tool.risk)]
        return []
