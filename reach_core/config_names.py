"""Names in config that only the installation can confirm: plugins and strategy providers.

The models (``reach_core.config``) check every key; which plugin names and
provider names exist is only known once plugins are discovered, so ``Reach``
calls these while it sets up (and ``reach config check`` with the names it
found without starting anything). Each function rewrites the names it accepts to
the plugin's entry-point name (config may use the distribution name), so every
later reader compares one spelling, and returns what it could not accept as
:class:`~reach_core.config_problems.Problem` objects.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any

from .config_problems import Problem, suggest

if TYPE_CHECKING:
    from .config import Config
    from .plugins import PluginNames

__all__ = ["CORE_NAMES", "check_plugin_names", "check_strategies", "unknown_tool_names"]

#: names that are not installed plugins but own tools: the core (``delegate``) and ``reach.register``
CORE_NAMES = ("reach-core", "user")
_GLOB = set("*?[")


def _resolve(names: PluginNames, name: str, *, core: bool = False) -> str | None:
    if core and name in CORE_NAMES:
        return name
    return names.resolve(name)


def _unknown_plugin(table: str, key: str | None, name: str, names: PluginNames, *, core: bool = False,
                    message: str | None = None) -> Problem:
    valid = names.all() + (list(CORE_NAMES) if core else [])
    hint = suggest(name, valid)
    listing = "" if hint else f" (installed: {', '.join(names.entry_names()) or 'none'})"
    return Problem(table, key, (message or f"`{name}` is not an installed plugin") + listing, hint)


def _unknown_table(parent: str, name: str, names: PluginNames) -> Problem:
    p = _unknown_plugin(f"{parent}.{name}", None, name, names, core=parent == "limits.plugins",
                        message=f"a table for `{name}`, which is not an installed plugin")
    if p.suggestion is not None:
        p.suggestion = f"{parent}.{p.suggestion}"
    return p


def check_plugin_names(cfg: Config, names: PluginNames) -> list[Problem]:
    """Check and rewrite to entry-point names every plugin name config holds outside
    ``[plugins] load/disable`` (which ``load_plugins`` checks before importing):
    ``[plugins.NAME]`` tables, ``[hooks]`` orders, ``[limits.plugins.NAME]``,
    ``[strategies] error_formatter``, ``[connectors.NAME] provider`` and
    ``plugin:NAME`` patterns in ``[agents.NAME]``."""
    problems: list[Problem] = []
    plugins = cfg.plugins
    extra = plugins.model_extra if plugins.model_extra is not None else {}
    for name in list(extra):
        if not isinstance(extra[name], dict):
            continue
        found = names.resolve(name)
        if found is None:
            problems.append(_unknown_table("plugins", name, names))
            continue
        if found != name:
            if found in extra:
                problems.append(Problem(f"plugins.{name}", None, f"the settings of `{found}` are also given as "
                                        f"[plugins.{found}]; keep one table"))
                continue
            extra[found] = extra.pop(name)
    for hook, order in cfg.hooks.items():
        fixed = []
        for name in order:
            found = _resolve(names, name, core=True)
            if found is None:
                problems.append(_unknown_plugin("hooks", hook, name, names, core=True))
            fixed.append(found or name)
        cfg.hooks[hook] = fixed
    caps = cfg.limits.plugins
    for name in list(caps):
        found = _resolve(names, name, core=True)
        if found is None:
            problems.append(_unknown_table("limits.plugins", name, names))
        elif found != name:
            caps[found] = caps.pop(name)
    fmt = cfg.strategies.error_formatter
    if fmt is not None:
        found = names.resolve(fmt)
        if found is None:
            problems.append(_unknown_plugin("strategies", "error_formatter", fmt, names))
        else:
            cfg.strategies.error_formatter = found
    for tool, ccfg in cfg.connectors.items():
        if ccfg.provider is not None:
            found = _resolve(names, ccfg.provider, core=True)
            if found is None:
                problems.append(_unknown_plugin(f"connectors.{tool}", "provider", ccfg.provider, names, core=True))
            else:
                ccfg.provider = found
    for agent, acfg in cfg.agents.items():
        for key in ("allow", "deny"):
            patterns = getattr(acfg, key)
            if patterns:
                setattr(acfg, key, _patterns(patterns, f"agents.{agent}", key, names, problems))
        if acfg.approval:
            fixed = _patterns(list(acfg.approval), f"agents.{agent}", "approval", names, problems)
            acfg.approval = dict(zip(fixed, acfg.approval.values(), strict=True))
    return problems


_TIERS = ("read", "write", "dangerous")


def _never_matches(pattern: str) -> Problem | None:
    """Why ``pattern`` can match no tool, or None. ``risk:`` compares the tier exactly, and
    a tool name holds no ``:`` (``tool.NAME_RE``): ``risk:danger``, ``Risk:dangerous`` or
    ``tags:x`` in ``deny`` would deny nothing, whatever tools are registered later."""
    if pattern.startswith("risk:"):
        tier = pattern[5:]
        if tier in _TIERS:
            return None
        hint = suggest(tier.strip().lower(), list(_TIERS))
        return Problem("", None, f"`{pattern}` names no tier (tiers: read, write, dangerous)",
                       f"risk:{hint}" if hint else None)
    if ":" in pattern and not pattern.startswith(("tag:", "plugin:")):
        prefix, _, rest = pattern.partition(":")
        hint = suggest(prefix.strip().lower(), ["tag", "plugin", "risk"])
        return Problem("", None, f"`{pattern}` can match no tool: tool names hold no `:`, and the patterns "
                       "are a name or glob, `tag:NAME`, `plugin:NAME` or `risk:TIER`",
                       f"{hint}:{rest.strip()}" if hint else None)
    return None


def _patterns(patterns: list[str], table: str, key: str, names: PluginNames, problems: list[Problem]) -> list[str]:
    """``plugin:NAME`` patterns with the entry-point name; a plain unknown NAME is a problem
    (a misspelt ``deny = ["plugin:reach-shel"]`` would deny nothing), and so is a pattern
    that can match no tool at all (:func:`_never_matches`)."""
    out = []
    for pattern in patterns:
        if (never := _never_matches(pattern)) is not None:
            never.table, never.key = table, key
            problems.append(never)
        elif pattern.startswith("plugin:") and not (_GLOB & set(pattern[7:])):
            name = pattern[7:]
            found = _resolve(names, name, core=True)
            if found is None:
                problems.append(_unknown_plugin(table, key, name, names, core=True,
                                                message=f"`{pattern}` names `{name}`, "
                                                        "which is not an installed plugin"))
            else:
                pattern = "plugin:" + found
        out.append(pattern)
    return out


def check_strategies(cfg: Config, providers: dict[str, dict[str, Any]], names: PluginNames) -> list[Problem]:
    """``[strategies] selector/adapter/confirmer/parser`` must name a registered provider
    (or a plugin that registers exactly one of that kind: rewritten to the provider's name)."""
    problems: list[Problem] = []
    strategies = cfg.strategies
    for kind in ("selector", "adapter", "confirmer", "parser", "runner"):
        chosen = getattr(strategies, kind)
        if chosen is None:
            continue
        bucket = providers.get(kind, {})
        if chosen in bucket:
            continue
        plugin = names.resolve(chosen)
        mine = [p for p, prov in bucket.items() if plugin is not None and prov.plugin == plugin]
        if len(mine) == 1:
            setattr(strategies, kind, mine[0])
            continue
        hint = suggest(chosen, list(bucket))
        listing = "" if hint else f" (installed: {', '.join(f'`{n}`' for n in sorted(bucket)) or 'none'})"
        problems.append(Problem("strategies", kind, f"no installed plugin provides a {kind} named `{chosen}`"
                                f"{listing}", hint))
    return problems


_PREFIXES = ("tag:", "plugin:", "risk:")


def unknown_tool_names(cfg: Config, tools: set[str], tags: set[str] | None = None) -> list[Problem]:
    """Tool names config gives that no registered tool has: ``[connectors.NAME]`` tables and
    plain names in ``[agents.NAME] allow/deny/approval/pinned``, with the closest tool name;
    in ``deny`` and ``approval`` also globs that match no tool name and, given ``tags``,
    ``tag:NAME`` patterns no tool carries (in ``allow`` such a miss only narrows).

    Only knowable once every tool is registered (``Reach.start``; tools may also be
    registered later, so these are logged as warnings, not raised). A misspelt name in
    ``deny``, ``approval`` or ``[connectors.NAME]`` would leave the real tool unrestricted,
    and so would ``deny = ["Delete_*"]`` (globs match case-sensitively) or ``deny = ["tag:filesytem"]``."""
    problems: list[Problem] = []
    if not tools:
        return problems

    def check(table: str, key: str | None, name: str) -> None:
        if name in tools:
            return
        restricts = key in ("deny", "approval")  # a miss there leaves the tool unrestricted
        if name.startswith("tag:"):
            if restricts and tags is not None and name[4:] not in tags:
                hint = suggest(name[4:], tags)
                problems.append(Problem(table, key, f"`{name}`: no registered tool carries the tag `{name[4:]}`",
                                        f"tag:{hint}" if hint else None))
            return
        if name.startswith(_PREFIXES):
            return
        if _GLOB & set(name):
            if restricts and not any(fnmatch.fnmatchcase(tool, name) for tool in tools):
                hint = next((t for t in sorted(tools) if fnmatch.fnmatch(t.lower(), name.lower())), None)
                problems.append(Problem(table, key, f"`{name}` matches no registered tool (globs are case-sensitive)",
                                        hint))
            return
        hint = suggest(name, tools)
        problems.append(Problem(table, key, f"`{name}` is not a registered tool", hint))

    for name in cfg.connectors:
        check(f"connectors.{name}", None, name)
        if problems and problems[-1].table == f"connectors.{name}" and problems[-1].suggestion:
            problems[-1].suggestion = f"connectors.{problems[-1].suggestion}"
    for agent, acfg in cfg.agents.items():
        for key in ("allow", "deny", "pinned"):
            for name in getattr(acfg, key) or ():
                check(f"agents.{agent}", key, name)
        for name in acfg.approval:
            if name not in ("read", "write", "dangerous"):
                check(f"agents.{agent}", "approval", name)
    return problems
