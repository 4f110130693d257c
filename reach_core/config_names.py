"""Names in config: how each must be spelt, and those only the installation can confirm.

:func:`spelling_problems` runs when any config is read (the ``Config`` model calls
it): a name that differs from a real one only by what a person cannot see or does
not notice (spaces around it, a zero-width space, a no-break space, a full-width or
Cyrillic letter, a glob no tool name can match) is refused, because config compares
names exactly and such a name matches nothing: ``deny = ["shell_run "]`` denied
nothing, ``[agents."support "]`` was a table no caller reached.

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
import json
import re
import unicodedata
from typing import TYPE_CHECKING, Any

from .config_problems import Problem, look_alike, named, oddities, shown, suggest

if TYPE_CHECKING:
    from .config import Config
    from .plugins import PluginNames

__all__ = ["CORE_NAMES", "check_plugin_names", "check_strategies", "spelling_problems", "unknown_tool_names"]

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
    hint = suggest(look_alike(name), valid)
    listing = "" if hint else f" (installed: {', '.join(names.entry_names()) or 'none'})"
    return Problem(table, key, (message or f"{named(name)} is not an installed plugin") + listing, hint)


def _unknown_table(parent: str, name: str, names: PluginNames) -> Problem:
    table = f"{parent}.{_quoted(name) if oddities(name) else name}"
    p = _unknown_plugin(table, None, name, names, core=parent == "limits.plugins",
                        message=f"a table for {named(name)}, which is not an installed plugin")
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


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_PLUGIN_CHARS = _NAME_CHARS | {"."}
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")  # tool.NAME_RE (not imported: tool.py pulls in the schema code)
_RULE = "tool names are 1-64 ASCII letters, digits, `_` or `-`"


def _quoted(name: str) -> str:
    """``name`` as a TOML key in a problem's table: bare when it can be, else a quoted
    string with every non-ASCII character escaped (``agents."support\\u200b"``)."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


def _odd(value: str, what: str, hint: str | None, *, part_of: str | None = None) -> Problem | None:
    """A problem when ``value`` has :func:`oddities`; ``what`` says what it then fails to do.
    ``part_of``: the whole pattern ``value`` is the name in (``tag:NAME``), quoted instead."""
    found = oddities(value)
    if not found:
        return None
    if part_of is not None:
        prefix = part_of[: len(part_of) - len(value)]
        return Problem("", None, f"{shown(part_of)}: the name after `{prefix}` {' and '.join(found)}: {what}",
                       hint or None)
    return Problem("", None, f"{shown(value)} {' and '.join(found)}: {what}", hint or None)


def _glob(pattern: str, allowed: frozenset[str], rule: str) -> Problem | None:
    """Why the name or glob ``pattern`` can match no name made of ``allowed`` characters,
    or None. ``*``, ``?`` and ``[...]`` (``[!...]`` negated) are glob syntax; any other
    character must be one a name can hold, a ``[`` must be closed, and ``[^...]`` is a
    class holding ``^``, not a negation (``deny = ["[^s]*"]`` denied only names
    starting with ``s``)."""
    literal, star, i, bad = 0, False, 0, []
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            star = True
        elif char == "[":
            j = i + 1
            if pattern[j:j + 1] == "^":
                return Problem("", None, f"{shown(pattern)}: `[^...]` is a class holding `^`, not a negation; "
                               "globs negate with `[!...]`", pattern.replace("[^", "[!"))
            j += 1 if pattern[j:j + 1] == "!" else 0
            j += 1 if pattern[j:j + 1] == "]" else 0
            end = pattern.find("]", j)
            if end < 0:
                return Problem("", None, f"{shown(pattern)}: the `[` is never closed, so it stands for itself, "
                               f"which no name holds ({rule})")
            if pattern[i + 1:i + 2] != "!":  # a negated class may name anything it leaves out
                bad += [c for c in pattern[i + 1:end] if c not in allowed]
            i = end
            literal += 1
        else:
            if char != "?" and char not in allowed:
                bad.append(char)
            literal += 1
        i += 1
    if bad:
        fixed = _ascii_name(pattern, allowed)
        chars = ", ".join(dict.fromkeys(shown(c, escape=True) for c in bad))
        return Problem("", None, f"{shown(pattern, escape=True)} holds {chars}, which no name has ({rule}): "
                       "it can match nothing", fixed if fixed != pattern else None)
    if literal > 64 and not star:
        return Problem("", None, f"{shown(pattern)} is longer than any name ({rule}): it can match nothing")
    return None


def _ascii_name(pattern: str, allowed: frozenset[str]) -> str | None:
    """The name or glob ``pattern`` was probably meant to be, in the characters a name
    holds: accents dropped (``café`` -> ``cafe``), dashes as ``-``, any other run of
    characters as ``_``; None when nothing of a name is left (``🔥*``)."""
    text = "".join("-" if unicodedata.category(c) == "Pd" else c
                   for c in unicodedata.normalize("NFKD", look_alike(pattern, space="_"))
                   if not unicodedata.combining(c))
    keep = allowed | set("*?[]!")
    fixed = re.sub(r"_*[^" + re.escape("".join(sorted(keep))) + r"]+_*", "_", text).strip("_")
    return fixed if any(c.isalnum() for c in fixed) else None


def _prefixed(pattern: str) -> tuple[str, str]:
    """``("tag:", "files")`` for ``tag:files``; ``("", pattern)`` for a tool name or glob."""
    for prefix, _space in _PREFIX_SPACE:
        if pattern.startswith(prefix):
            return prefix, pattern[len(prefix):]
    return "", pattern


#: how a name after each prefix joins its words in the name meant (tags hold spaces)
_PREFIX_SPACE = (("tag:", " "), ("plugin:", "-"), ("risk:", ""))


def _meant(pattern: str) -> str | None:
    """The pattern probably meant: the name after its prefix as :func:`look_alike` reads it."""
    prefix, name = _prefixed(look_alike(pattern))  # ` risk:write` is `risk:write`
    space = dict(_PREFIX_SPACE).get(prefix, "_")
    rest = look_alike(name, space=space)
    if prefix == "risk:":
        rest = rest.lower()
    elif not prefix:
        return _ascii_name(rest, _NAME_CHARS) if rest else None
    return prefix + rest if rest else None


def _pattern_problem(pattern: str) -> Problem | None:
    """Why one ``allow``/``deny``/``approval``/``pinned`` pattern can match nothing it was
    written to match, or None (table and key are the caller's to set)."""
    if (odd := _odd(pattern, "it can match no tool", _meant(pattern))) is not None:
        return odd
    if (never := _never_matches(pattern)) is not None:
        return never
    if pattern.startswith("tag:"):
        tag = pattern[4:]
        return _odd(tag, "no tool carries such a tag, so it matches nothing", _meant(pattern), part_of=pattern)
    if pattern.startswith("plugin:"):
        name = pattern[7:]
        if (odd := _odd(name, "no plugin has such a name", _meant(pattern), part_of=pattern)) is not None:
            return odd
        if _GLOB & set(name):
            return _glob(name, _PLUGIN_CHARS, "plugin names are ASCII letters, digits, `_`, `-` or `.`")
        return None  # an exact name: check_plugin_names looks it up among the installed plugins
    if pattern.startswith("risk:"):
        return None
    return _glob(pattern, _NAME_CHARS, _RULE)


def spelling_problems(cfg: Config) -> list[Problem]:
    """Names in ``cfg`` that can match nothing they were written to match, whatever is
    installed: agent tables (``[agents."support "]``: callers say ``support``, who then
    gets ``default``'s rights), ``delegates``, ``[connectors.NAME]`` tables and the tags
    they add, and the patterns in ``allow``/``deny``/``approval``/``pinned`` (see
    :func:`_pattern_problem`). Each problem quotes the value as ``repr`` shows it
    (non-ASCII escaped when it looks like ASCII) and the name probably meant. Runs with
    every config, before any plugin is found."""
    problems: list[Problem] = []

    def add(problem: Problem | None, table: str, key: str | None) -> None:
        if problem is not None:
            problem.table, problem.key = table, key
            problems.append(problem)

    for name, acfg in cfg.agents.items():
        table = f"agents.{_quoted(name)}"
        meant = look_alike(name)
        add(_odd(name, "callers name agents exactly, so none reaches this table and the agent they "
                 "name gets the `default` agent's rights", f"agents.{_quoted(meant)}" if meant else None), table, None)
        if name != "default" and name.casefold() == "default":
            add(Problem("", None, f"{shown(name)} is not the `default` agent (names are compared exactly), so "
                        "its rules would not apply to callers that name no agent or one without a table",
                        "agents.default"), table, None)
        for key in ("allow", "deny", "pinned"):
            for pattern in getattr(acfg, key) or ():
                add(_pattern_problem(pattern), table, key)
        for pattern in acfg.approval:
            tier = pattern.strip().casefold()
            if tier in _TIERS and pattern != tier:
                add(Problem("", None, f"{shown(pattern)} is not a tier: tiers are written `read`, `write`, "
                            "`dangerous`", tier), table, "approval")
            elif pattern not in _TIERS:
                add(_pattern_problem(pattern), table, "approval")
        for target in acfg.delegates:
            add(_odd(target, "no agent has that name", look_alike(target) or None), table, "delegates")
    for name, ccfg in cfg.connectors.items():
        table = f"connectors.{_quoted(name)}"
        fixed = look_alike(name, space="_")
        problem = _odd(name, "no tool has that name, so these settings apply to none",
                       f"connectors.{_quoted(fixed)}" if fixed else None)
        if problem is None and not _TOOL_NAME.match(name):
            problem = Problem("", None, f"{shown(name)} is no tool's name ({_RULE}; no globs here): "
                              "these settings apply to none")
        add(problem, table, None)
        for tag in ccfg.tags:
            add(_odd(tag, "`tag:` patterns name tags exactly, so none matches it", look_alike(tag) or None),
                table, "tags")
    if problems:  # a password pasted into a name is masked wherever the name shows
        from .redact import mask_userinfo  # (only when a config is refused)

        for p in problems:
            p.table, masked = mask_userinfo(p.table), mask_userinfo(p.message)
            if p.suggestion is not None and "[REDACTED]" in masked:  # rewritten, a URL may not be found again
                hint = mask_userinfo(p.suggestion)
                p.suggestion = hint if hint != p.suggestion else None
            p.message = masked
    return problems


def _patterns(patterns: list[str], table: str, key: str, names: PluginNames, problems: list[Problem]) -> list[str]:
    """``plugin:NAME`` patterns with the entry-point name; a plain unknown NAME is a problem
    (a misspelt ``deny = ["plugin:reach-shel"]`` would deny nothing). A pattern that can
    match no tool at all was refused when the config was read (:func:`spelling_problems`)."""
    out = []
    for pattern in patterns:
        if pattern.startswith("plugin:") and not (_GLOB & set(pattern[7:])):
            name = pattern[7:]
            found = _resolve(names, name, core=True)
            if found is None:
                problems.append(_unknown_plugin(table, key, name, names, core=True,
                                                message=f"{named(pattern)} names {named(name)}, "
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
        hint = suggest(look_alike(chosen), list(bucket))
        listing = "" if hint else f" (installed: {', '.join(f'`{n}`' for n in sorted(bucket)) or 'none'})"
        problems.append(Problem("strategies", kind, f"no installed plugin provides a {kind} named {named(chosen)}"
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
