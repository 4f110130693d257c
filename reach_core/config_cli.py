"""``reach config check`` and ``reach config show``: a config file checked or shown, nothing started.

``check`` reports every problem at once (on stderr, or as ``--json`` on stdout; exit 1
if any), in this order:

1. the file: TOML syntax, every table and key against the models (``reach_core.config``);
2. plugin names (``[plugins] load/disable``, ``REACH_PLUGINS``, ``REACH_DISABLE_PLUGINS``,
   ``[plugins.NAME]``, ``[hooks]``, ``[limits.plugins.NAME]``, ``error_formatter``,
   ``provider``, ``plugin:NAME`` patterns) against the installed entry points, read
   from the packages' metadata without importing them;
3. only then, and only where a check needs it, plugins' entry-point modules are
   imported (as ``reach plugins`` does): a plugin that has a ``[plugins.NAME]``
   table, to validate it with the plugin's own settings model (``{ env = "VAR" }``
   must be set); a plugin named in ``[hooks]``, to see it implements that hook;
   every plugin the config loads when ``[strategies] selector / adapter /
   confirmer / parser`` names a provider, whose names are only known
   once registered. No tool is registered, no start-up hook runs, no store or
   connection is opened. A plugin that fails to import is a warning (a problem
   with ``[reach] strict``). A config with neither imports no plugin at all.

``show`` prints the effective configuration (every default filled in) as TOML
or JSON, with secrets masked: ``{ env = "VAR" }`` values, values of keys that
look secret (``password``, ``token``, ``api_key`` ...) and passwords in URLs.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import click

__all__ = ["config_group", "mask", "to_toml"]


@click.group("config")
def config_group() -> None:
    """Check or show the configuration (reach.toml) without starting anything."""


def _source(ctx: click.Context, file: str | None) -> str | None:
    if file:
        return file
    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    return obj.get("config") or root.params.get("config")


@config_group.command("check")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def check_cmd(ctx: click.Context, file: str | None, as_json: bool) -> None:
    """Validate FILE (default: --config, $REACH_CONFIG, ./reach.toml, [tool.reach]); exit 1 on problems."""
    source, problems, warnings = check(_source(ctx, file))
    if as_json:
        click.echo(json.dumps({"file": str(source) if source else None, "ok": not problems,
                               "problems": [p.to_dict() for p in problems],
                               "warnings": [w.to_dict() for w in warnings]}, ensure_ascii=False, indent=2))
    else:  # problems on stderr, as every command that meets a bad config prints them
        for w in warnings:
            click.echo(f"warning: {w}", err=True)
        for p in problems:
            click.echo(str(p), err=True)
        if problems:
            click.echo(f"{len(problems)} problem(s) in {source or 'the configuration'}", err=True)
        else:
            click.echo(f"{source or 'default configuration'}: ok")
    if problems:
        ctx.exit(1)


def check(file: str | None) -> tuple[Any, list[Any], list[Any]]:
    """``(source, problems, warnings)`` for the config ``file`` (or the default one).

    Warnings are what ``Reach`` reports but starts anyway: a plugin that fails to
    import (a problem with ``[reach] strict``)."""
    from .config import Config, validate_config
    from .config_problems import Problem
    from .configfile import read_config
    from .errors import ConfigError

    try:
        data, source = read_config(file)
    except ConfigError as exc:
        return file, [Problem("", None, str(exc))], []
    try:
        cfg: Config = validate_config(data)
    except ConfigError as exc:
        return source, list(getattr(exc, "problems", None) or [Problem("", None, str(exc))]), []
    warnings: list[Any] = []
    return source, _check_installed(cfg, warnings), warnings


def _check_installed(cfg: Any, warnings: list[Any]) -> list[Any]:
    from .builtin import BUILTIN_NAMES
    from .config_names import CORE_NAMES, check_plugin_names, check_strategies
    from .config_problems import Problem
    from .plugins import PluginNames, checked_selection, load_plugins, new_manager

    problems: list[Any] = []
    names = PluginNames()
    # the built-ins (reach.tagged, reach.delegation) are not entry points: `disable` may name them
    disable = [n for n in cfg.plugins.disable if n not in BUILTIN_NAMES]
    blocked, allow = checked_selection(names, disable, cfg.plugins.load, problems)
    problems += check_plugin_names(cfg, names)
    if problems:
        return problems  # names first: importing would load a plugin a misspelt `disable` meant to block
    # import only what the remaining checks need: plugins with a settings table, or every
    # plugin when a provider strategy is named (provider names are known only once registered)
    strategies = cfg.strategies
    if any(getattr(strategies, k) for k in ("selector", "adapter", "confirmer", "parser", "runner")):
        wanted = allow
    else:
        named = [*cfg.plugins.plugin_tables(), *(n for order in cfg.hooks.values() for n in order)]
        wanted = [n for n in dict.fromkeys(named) if (allow is None or n in allow) and n not in CORE_NAMES]
    if wanted == []:
        return problems
    pm = new_manager()
    infos = load_plugins(pm, "auto", disable=blocked, allow=wanted, strict=False)
    providers: dict[str, dict[str, Any]] = {}
    for info in infos:
        if info.status == "failed":
            (problems if cfg.reach.strict else warnings).append(
                Problem(f"plugins.{info.name}", None, f"the plugin failed to import: {info.reason}"))
        if info.status != "loaded":
            continue
        problems += _check_settings(pm, info.name, cfg.plugins.plugin_table(info.name))
        for kind in ("selector", "adapter", "confirmer", "parser", "runner"):
            for impl in getattr(pm.hook, f"reach_register_{kind}s").get_hookimpls():
                if impl.plugin_name == info.name:
                    _collect(impl, kind, info.name, providers, problems)
    if "reach.tagged" not in cfg.plugins.disable:
        providers.setdefault("parser", {})["tagged"] = _Provider("reach.tagged")
    problems += check_strategies(cfg, providers, names)
    for hook, order in cfg.hooks.items():
        implementing = {i.plugin_name for i in getattr(pm.hook, hook).get_hookimpls()}
        for name in order:
            if name not in implementing and name != "reach-core":
                problems.append(Problem("hooks", hook, f"`{name}` implements no `{hook}` (or is not loaded)"))
    return problems


class _Provider:
    def __init__(self, plugin: str) -> None:
        self.plugin = plugin


def _collect(impl: Any, kind: str, plugin: str, providers: dict[str, dict[str, Any]], problems: list[Any]) -> None:
    from .config_problems import Problem

    def register(name: str, obj: Any) -> None:
        providers.setdefault(kind, {})[name] = _Provider(plugin)

    try:
        impl.function(register=register)
    except Exception as exc:  # noqa: BLE001 - report, do not crash the check
        problems.append(Problem(f"plugins.{plugin}", None, f"reach_register_{kind}s failed: {exc}"))


def _check_settings(pm: Any, plugin: str, table: dict[str, Any]) -> list[Any]:
    from .config import validate_settings
    from .config_problems import Problem

    table.pop("hooks_disabled", None)
    impls = [i for i in pm.hook.reach_plugin_settings.get_hookimpls() if i.plugin_name == plugin]
    try:
        model = impls[0].function() if impls else None
    except Exception as exc:  # noqa: BLE001
        return [Problem(f"plugins.{plugin}", None, f"reach_plugin_settings failed: {exc}")]
    if model is None:
        return []  # as in Reach: a plugin without a settings model ignores its table
    return validate_settings(model, table, plugin)[1]


# ------------------------------------------------------------------ show
@config_group.command("show")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="JSON instead of TOML.")
@click.pass_context
def show_cmd(ctx: click.Context, file: str | None, as_json: bool) -> None:
    """Print the effective configuration (defaults filled in), secrets masked."""
    from .config import load_config
    from .configfile import read_config
    from .errors import ConfigError

    try:
        data, source = read_config(_source(ctx, file))
        cfg = load_config(source if source is not None else data)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    effective = mask(cfg.model_dump(mode="json", exclude_none=True))
    own = list(vars(type(cfg.reach)).get("__annotations__", {}))  # [reach]'s own keys before the guard rails'
    effective["reach"] = dict(sorted(effective["reach"].items(), key=lambda kv: (kv[0] not in own, 0)))
    if as_json:
        click.echo(json.dumps(effective, ensure_ascii=False, indent=2))
        return
    click.echo(f"# effective configuration from {source or 'defaults'}; secrets masked")
    for var in ("REACH_PLUGINS", "REACH_DISABLE_PLUGINS"):
        if var in os.environ:  # they change [plugins] load / disable
            click.echo(f"# {var}={os.environ[var]}")
    click.echo(to_toml(effective))


_SECRET_KEY = re.compile(
    r"(pass|pwd|secret|token|api_?key|apikey|auth|credential|private|cookie|signature|dsn|"
    r"(^|_)pw$|(^|_)pin$|(^|_)key$|(^|_)salt$)", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.\-]*://[^/@:\s]*:)(?P<pw>[^@/\s]+)(?=@)", re.IGNORECASE)
_URL_QUERY_SECRET = re.compile(r"(?P<head>[?&](?:key|api_?key|token|access_token|password|secret|sig)=)[^&#\s]+",
                               re.IGNORECASE)
MASK = "***"


def mask(value: Any, key: str = "") -> Any:
    """``value`` with secrets replaced by ``***``: ``{ env = "VAR" }`` tables, values of
    keys that look secret, and passwords or tokens inside URLs."""
    if isinstance(value, dict):
        if set(value) == {"env"} and isinstance(value["env"], str):
            return MASK
        return {k: mask(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, key) for v in value]
    if isinstance(value, str):
        if value and _SECRET_KEY.search(key.replace("-", "_")):
            return MASK
        value = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, value)
        return _URL_QUERY_SECRET.sub(lambda m: m.group("head") + MASK, value)
    return value


# ------------------------------------------------------------------ a small TOML writer
_BARE = re.compile(r"[A-Za-z0-9_-]+\Z")  # \Z: "$" lets "key\n" through, bare


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k, ensure_ascii=False)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items() if x is not None) + " }"
    return json.dumps(str(v), ensure_ascii=False)


def to_toml(data: dict[str, Any], prefix: str = "") -> str:
    """``data`` (JSON-like) as TOML: scalars and lists first, then one ``[table]`` per dict."""
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    for k, v in data.items():
        if v is None:
            continue
        if isinstance(v, dict):
            tables.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_value(v)}")
    out = "\n".join(lines)
    for k, v in tables:
        name = f"{prefix}.{_key(k)}" if prefix else _key(k)
        body = to_toml(v, name)
        has_scalars = any(not isinstance(x, dict) for x in v.values() if x is not None)
        block = (f"[{name}]\n" if has_scalars or not v else "") + body
        out += ("\n\n" if out else "") + block.strip("\n")
    return out
