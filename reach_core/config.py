"""Configuration: one strict pydantic model per table, from ``reach.toml``, ``[tool.reach]`` or a dict.

Where it comes from, first found wins: the ``config`` argument (path or dict),
``$REACH_CONFIG``, ``./reach.toml``, ``[tool.reach]`` in ``./pyproject.toml``,
else defaults. Environment: ``REACH_PLUGINS`` (comma-separated allow-list; set
but empty means no plugins), ``REACH_DISABLE_PLUGINS`` (comma-separated).

Tables (``docs/configuration.md`` is generated from these models:
``python -m reach_core.config_doc``)::

    [reach]            ReachSection: data_dir, store, strict, argument caps, concurrency, retries,
                       guard-rail defaults (run caps, budgets' time zone), delegation depth
    [plugins]          PluginsSection: load (allow-list), disable;
                       [plugins.NAME] a plugin's own settings (its model), plus hooks_disabled
    [strategies]       StrategiesSection: selector, adapter, confirmer, parser, error_formatter
    [hooks]            explicit order per runtime hook: reach_post_invoke = ["plugin-a", "plugin-b"]
    [limits]           LimitsConfig: rate-limit storage, [limits.plugins.NAME] per-plugin caps
    [connectors.NAME]  ConnectorConfig: enabled, provider, timeout, retries, risk, rate_limit ...
    [agents.NAME]      AgentConfig: allow, deny, max_tier, auto_tier, approval, budgets ...

Config is strict, because a typo must never widen what an agent may do: an
unknown table or key, an unknown hook name, or a value of the wrong type is a
``ConfigError`` naming the table and key and the closest valid name
(`` `[agents.support] alow`: unknown key; did you mean `allow`? ``). Names that
depend on what is installed (plugins, strategy providers) are checked once the
plugins are discovered (``reach_core.config_names``). Only ``[plugins.NAME]``
is left to each plugin's settings model (strict too).

Secrets are written ``{ env = "VAR" }`` and read from the environment when a
plugin's settings are validated.
"""

from __future__ import annotations

import os
import types
import typing
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from .config_problems import Problem, look_alike, named, raise_problems, unknown
from .configfile import find_default as _find_default  # noqa: F401 - kept importable from here
from .configfile import mask_secrets, read_config, resolve_secrets
from .configfile import read_file as _read_file  # noqa: F401 - kept importable from here
from .errors import ConfigError
from .guard.config import AgentGuard, ConnectorGuard, GuardDefaults, LimitsConfig

__all__ = [
    "AgentConfig",
    "Config",
    "ConnectorConfig",
    "HOOK_NAMES",
    "PluginsSection",
    "ReachSection",
    "StrategiesSection",
    "load_config",
    "problems_of",
    "resolve_secrets",
]

Tier = Literal["read", "write", "dangerous"]
Approval = Literal["never", "once", "run", "always"]

#: the hooks a plugin may implement (``hooks_disabled`` names them)
HOOK_NAMES: tuple[str, ...] = (
    "reach_plugin_settings", "reach_register_tools", "reach_register_selectors", "reach_register_adapters",
    "reach_register_confirmers", "reach_register_parsers", "reach_register_runners", "reach_register_commands",
    "reach_startup",
    "reach_shutdown", "reach_pre_validate", "reach_pre_invoke", "reach_post_invoke", "reach_format_error",
    "reach_run_step", "reach_tool_progress", "reach_confirmation",
)


def _runtime_hooks() -> tuple[str, ...]:
    from .hookspecs import RUNTIME_HOOKS

    return RUNTIME_HOOKS


#: unknown keys are errors; scalars are taken as TOML types them (``"2"`` is not a number,
#: ``"false"`` not a boolean); paths and lists also accept what Python code passes
_STRICT = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class _Section(BaseModel):
    """A core table: unknown keys are errors (a typo must not be ignored)."""

    model_config = _STRICT


class ReachSection(_Section, GuardDefaults):
    """``[reach]``: where state lives, the core's caps and the guard rails' defaults."""

    model_config = _STRICT

    data_dir: Path = Field(default=Path(".reach"), strict=False, description="directory of reach's state "
                           "(SQLite store, pins, audit files); a relative path is taken from the config "
                           "file's directory")
    store: str | None = Field(default=None, description="state store: a file path, `sqlite:///path` or "
                              "`postgresql://user:pw@host/db` (query `schema=`, `pool_size=`); "
                              "default `<data_dir>/reach.db`")
    strict: bool = Field(default=False, description="a plugin that fails to import or to set up raises instead of "
                         "being reported and skipped")
    max_argument_bytes: int = Field(default=1_000_000, ge=1,
                                    description="largest arguments of one call (bytes of JSON)")
    max_argument_depth: int = Field(default=32, ge=1, description="deepest nesting of one call's arguments")
    concurrency: int = Field(default=5, ge=1, description="calls of one model turn run at once (`invoke_many`)")
    retry_backoff: float = Field(default=1.0, ge=0, description="first retry delay (s); doubles each retry, jittered")
    default_timeout: float | None = Field(default=None, gt=0, description="timeout (s) of every tool whose "
                                          "`[connectors.NAME] timeout` is not set (else the connector's own)")
    log_calls: bool = Field(default=True, description="log one `reach.tool_call` event per tool call (stdlib "
                            "logger `reach`, INFO; built only when the host listens)")
    allow_undocumented: bool = Field(default=False, description="register tools that have no description "
                                     "(refused by default: a model cannot use a tool it cannot read about)")
    system_hint: str | None = Field(default=None, description="system text `reach.run` adds by default")
    max_tools_per_step: Annotated[int, Field(ge=1, le=128)] = Field(default=
        8, description="tools offered to the model per step when a selector is installed")
    pins: Path | None = Field(default=None, strict=False, description="pin file of `reach tools pin`; "
                              "default `<data_dir>/pins.json`")
    max_delegation_depth: int = Field(default=1, ge=1, le=3, description="longest chain of `delegate` calls "
                                      "(an agent delegating to one that delegates ...); hard cap 3")


class PluginsSection(BaseModel):
    """``[plugins]``: which plugins load; ``[plugins.NAME]`` tables hold each plugin's settings."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    load: list[str] | None = Field(default=None, strict=False, description="allow-list of plugin names (entry-point or "
                                   "distribution name); unset: every installed plugin; `[]`: none. "
                                   "`REACH_PLUGINS` narrows it further")
    disable: list[str] = Field(default_factory=list, strict=False, description="plugins never imported (entry-point or "
                               "distribution name); `REACH_DISABLE_PLUGINS` adds to it")

    @model_validator(mode="after")
    def _tables(self) -> PluginsSection:
        problems = []
        for name, table in (self.model_extra or {}).items():
            if name == "hooks_disabled":
                problems.append(Problem("plugins", name, "belongs in one plugin's table: "
                                        "[plugins.NAME] hooks_disabled = [...]"))
                table = {"hooks_disabled": table}
                name = "NAME"
            if not isinstance(table, dict):
                problems.append(unknown("plugins", name, name, ["load", "disable"])
                                if not _looks_like_plugin(name) else
                                Problem("plugins", name, "must be a table of that plugin's settings "
                                        f"([plugins.{name}])"))
                continue
            hooks = table.get("hooks_disabled")
            if hooks is None:
                continue
            if not isinstance(hooks, list) or not all(isinstance(h, str) for h in hooks):
                problems.append(Problem(f"plugins.{name}", "hooks_disabled", "must be a list of hook names"))
                continue
            for hook in hooks:
                if hook not in HOOK_NAMES:
                    p = unknown(f"plugins.{name}", "hooks_disabled", look_alike(hook), HOOK_NAMES, what="hook")
                    p.message = f"{named(hook)} is an {p.message}"
                    problems.append(p)
        if problems:
            raise _Problems(problems)
        return self

    def plugin_table(self, name: str) -> dict[str, Any]:
        extra = self.model_extra or {}
        table = extra.get(name)
        return dict(table) if isinstance(table, dict) else {}

    def plugin_tables(self) -> dict[str, dict[str, Any]]:
        """Every ``[plugins.NAME]`` table, by the name config uses."""
        return {k: v for k, v in (self.model_extra or {}).items() if isinstance(v, dict)}


def _looks_like_plugin(name: str) -> bool:
    return "-" in name or "." in name


class StrategiesSection(_Section):
    """``[strategies]``: which provider to use when several plugins offer one (checked once plugins are found)."""

    selector: str | None = Field(default=None, description="selector provider (ranks tools per query), e.g. `hybrid`")
    adapter: str | None = Field(default=None, description="model adapter provider for `reach run`, e.g. `openai`")
    confirmer: str | None = Field(default=None, description="confirmer provider (asks a person), e.g. `queue`")
    parser: str | None = Field(default=None, description="tool-call text parser; the core's is `tagged`")
    runner: str | None = Field(default=None, description="runs every `reach.run` (e.g. `reach-dbos`: durable "
                               "runs); unset, the in-process loop")
    error_formatter: str | None = Field(default=None, description="the one plugin whose `reach_format_error` "
                                        "writes error text (others are skipped)")


class ConnectorConfig(_Section, ConnectorGuard):
    """``[connectors.NAME]``: per-tool overrides and guard rails (NAME is the tool's name)."""

    model_config = _STRICT

    enabled: bool = Field(default=True, description="`false` removes the tool")
    provider: str | None = Field(default=None, description="the plugin whose tool of this name is used when several "
                                 "provide one")
    timeout: float | None = Field(default=None, gt=0, description="deadline (s) of the whole call, retries included")
    attempt_timeout: float | None = Field(default=None, gt=0, description="deadline (s) of one attempt")
    max_retries: int | None = Field(default=None, ge=0, alias="retries",
                                    description="retries of a retryable failure (idempotent tools only); "
                                    "also written `retries`")
    risk: Tier | None = Field(default=None, description="override of the declared tier (`read`, `write`, `dangerous`)")
    idempotent: bool | None = Field(default=None, description="override: may the call be retried and run twice")
    tags: list[str] = Field(default_factory=list, strict=False,
                            description="extra tags (selectors, `tag:NAME` patterns)")
    keywords: list[str] = Field(default_factory=list, strict=False, description="extra keywords for selectors")
    description: str | None = Field(default=None, description="replaces the description the model sees")
    max_concurrency: int | None = Field(default=None, ge=1,
                                        description="calls of this tool running at once, process-wide")
    sequential: bool | None = Field(default=None, description="calls of this tool in one turn run one after another")
    weight: int | None = Field(default=None, ge=1, description="slots one call takes of the turn's concurrency")
    idle_timeout: float | None = Field(default=None, gt=0, description="a streaming tool that sends nothing for "
                                       "this long (s) is stopped")

    def overrides(self) -> dict[str, Any]:
        """Only what was set, in the names ``Tool.build`` reads."""
        out = {k: v for k, v in self.model_dump(exclude_unset=True).items() if v is not None}
        out.pop("enabled", None)
        out.pop("provider", None)
        return out


class AgentConfig(_Section, AgentGuard):
    """``[agents.NAME]``: what one agent may do; agents without a table get ``[agents.default]``."""

    model_config = _STRICT

    allow: list[str] | None = Field(default=None, strict=False, description="tools it may use: names, globs "
                                    "(`sql_*`), `tag:NAME`, `plugin:NAME`, `risk:TIER`; unset: every tool up to "
                                    "`max_tier`")
    deny: list[str] = Field(default_factory=list, strict=False, description="tools it may never use (same patterns); "
                            "deny wins over allow")
    max_tier: Tier = Field(default="dangerous", description="highest risk tier it may use at all")
    auto_tier: Tier = Field(default="write", description="highest tier that runs without a person's approval")
    approval: dict[str, Approval] = Field(default_factory=dict, description="approval mode per tool, pattern "
                                          "or tier: `never`, `once` (per arguments), `run`, `always`; a tool's own "
                                          "name wins, else the strictest matching pattern")
    delegates: list[str] = Field(default_factory=list, strict=False, description="agents it may hand work to (the "
                                 "`delegate` tool); each needs its own `[agents.NAME]` table")
    pinned: list[str] = Field(default_factory=list, strict=False,
                              description="tools always offered, whatever a selector ranks")


def _check_hooks(value: dict[str, list[str]]) -> dict[str, list[str]]:
    runtime = _runtime_hooks()
    problems = []
    for hook in value:
        if hook not in runtime:
            p = unknown("hooks", hook, hook, runtime, what="hook")
            if hook in HOOK_NAMES:
                p.message = "only runtime hooks have an order here"
            problems.append(p)
    if problems:
        raise _Problems(problems)
    return value


class Config(_Section):
    """The whole configuration (``reach.toml``); top-level tables other than these are errors."""

    reach: ReachSection = Field(default_factory=ReachSection, description="core settings")
    plugins: PluginsSection = Field(default_factory=PluginsSection, description="plugin selection and settings")
    strategies: StrategiesSection = Field(default_factory=StrategiesSection, description="one-of providers")
    hooks: dict[str, list[str]] = Field(default_factory=dict, description="order of one runtime hook's "
                                        "implementations by plugin name: `reach_post_invoke = [\"a\", \"b\"]`; "
                                        "plugins not named run after, in the default order")
    limits: LimitsConfig = Field(default_factory=LimitsConfig, description="rate-limit storage, per-plugin caps")
    connectors: dict[str, ConnectorConfig] = Field(default_factory=dict, description="per tool")
    agents: dict[str, AgentConfig] = Field(default_factory=dict, description="per agent")
    #: the file this configuration was read from (None for a dict, or defaults only)
    _source: Path | None = PrivateAttr(default=None)

    @property
    def source(self) -> Path | None:
        """The file this configuration was read from, resolved; None when it came from a
        dict or no file was found. Plugins that guard files (reach-files) protect it."""
        return self._source

    _hooks = field_validator("hooks")(classmethod(lambda cls, v: _check_hooks(v)))

    @model_validator(mode="after")
    def _names(self) -> Config:
        """Names that can match nothing they were written to match (``[agents."support "]``,
        ``deny = ["shell_run\u200b"]``) are refused: see ``config_names.spelling_problems``."""
        from .config_names import spelling_problems

        problems = spelling_problems(self)
        if problems:
            raise _Problems(problems)
        return self

    def agent(self, name: str | None) -> tuple[str, AgentConfig]:
        """The named agent's config, or ``default`` (from config or built in)."""
        if name and name in self.agents:
            return name, self.agents[name]
        return "default", self.agents.get("default") or AgentConfig()


class _Problems(ValueError):
    """Raised inside validators: already-written problems, reported as they are."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


# ------------------------------------------------------------------ errors for a person
def _unwrap(tp: Any) -> Any:
    """The model or container inside ``Optional``/``Annotated``."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _field(model: type[BaseModel], key: str) -> Any:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info
    return None


def _problem(error: Any, root: type[BaseModel], secrets: Collection[str] = ()) -> list[Problem]:
    """One pydantic error as problems with table, key and suggestion."""
    ctx = error.get("ctx") or {}
    inner = ctx.get("error")
    if isinstance(inner, _Problems):
        return inner.problems
    loc = [str(p) for p in error["loc"]]
    tp: Any = root
    table_len = 0  # loc[:table_len] names the innermost table (a model) the error is in
    model: type[BaseModel] | None = root
    for i, part in enumerate(loc):
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            model, table_len = tp, i
            info = _field(tp, part)
            tp = info.annotation if info is not None else None
        elif typing.get_origin(tp) is dict:
            tp = typing.get_args(tp)[1]
        elif typing.get_origin(tp) is list:
            tp = typing.get_args(tp)[0]
        else:
            tp = None
    if _unwrap(tp) is not None and isinstance(_unwrap(tp), type) and issubclass(_unwrap(tp), BaseModel):
        # the error is about a whole table (e.g. a table given as a string)
        model, table_len = _unwrap(tp), len(loc)
    if table_len == 0 and len(loc) > 1 and model is root:
        table_len = 1  # a top-level table that is a plain mapping ([hooks])
    table = loc[:table_len]
    rest = loc[table_len:]
    name = ".".join(table)
    key = rest[0] + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in rest[1:]) if rest else None
    if error["type"] == "extra_forbidden" and model is not None and rest:
        valid = list(model.model_fields)
        if model is root:
            return [unknown(rest[0], None, rest[0], valid, what="table")]
        return [unknown(name, key, rest[0], valid)]
    msg = str(error["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    got = error.get("input")
    if table_len == len(loc) and table:
        if error["type"] == "value_error" and isinstance(got, dict):
            # a check of the whole table (a model validator) refused it: its message says why;
            # the table is not quoted (it may hold a password written inline)
            return [Problem(name, None, mask_secrets(msg, secrets))]
        return [Problem(name, None, f"must be a table, got {_shown(got, secrets)}")]
    if error["type"] != "missing" and not isinstance(got, (dict, BaseModel)):
        msg += f" (got {_shown(got, secrets)})"
    return [Problem(name, key, mask_secrets(msg, secrets))]


def _shown(value: Any, secrets: Collection[str] = ()) -> str:
    """A rejected value as an error shows it: short, and never one of ``secrets`` (what was read
    from the environment for this table) nor a password written inline in a URL
    (``redis://:PASS@host``), masked before it is cut."""
    from .redact import mask_userinfo  # (only when a config is refused)

    text = mask_userinfo(mask_secrets(repr(value), secrets))
    return text if len(text) <= 60 else text[:57] + "..."


def problems_of(exc: ValidationError, model: type[BaseModel] = Config, secrets: Collection[str] = ()) -> list[Problem]:
    """Every error of a failed validation of ``model`` as problems a person can act on
    (``secrets``: the values read from the environment for it, masked in the messages)."""
    out: list[Problem] = []
    for error in exc.errors():
        out.extend(_problem(error, model, secrets))
    return out


def validate_settings(model: Any, table: dict[str, Any], plugin: str) -> tuple[Any, list[Problem]]:
    """A plugin's ``[plugins.NAME]`` table (``hooks_disabled`` already taken out) validated by
    the model it returned from ``reach_plugin_settings``: ``(settings, problems)``.

    A model that ignores unknown keys (pydantic's default) is held to ``forbid`` here:
    a misspelt setting must not fall back to its default silently. A model that says
    ``extra="allow"`` keeps its extras."""
    where = f"plugins.{plugin}"
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return resolve_secrets(table, where=f"[{where}]"), []
    problems: list[Problem] = []
    if model.model_config.get("extra") in (None, "ignore"):
        valid = [n for n in model.model_fields] + [f.alias for f in model.model_fields.values() if f.alias]
        problems += [unknown(where, key, key, valid) for key in table if key not in valid]
    secrets: set[str] = set()  # this table's own: masked in its problems, shared with no other config
    try:
        data = resolve_secrets(table, where=f"[{where}]", found=secrets)
    except ConfigError as exc:
        return None, [*problems, Problem(where, None, str(exc))]
    try:
        value = model.model_validate(data)
    except ValidationError as exc:
        for p in problems_of(exc, model, secrets):
            p.table = f"{where}.{p.table}" if p.table else where
            problems.append(p)
        return None, problems
    return value, problems


def validate_config(data: Any, source: Any = None) -> Config:
    """``data`` (raw TOML data) as a ``Config``; ``ConfigError`` listing every problem."""
    if not isinstance(data, dict):
        raise_problems([Problem("", None, f"config must be a table, got {type(data).__name__}")], source=source)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise_problems(problems_of(exc), source=source)
        raise  # unreachable: raise_problems raised


def load_config(config: str | os.PathLike[str] | dict[str, Any] | Config | None) -> Config:
    """Build and validate the configuration; raise ``ConfigError`` naming the table, key and fix."""
    if isinstance(config, Config):
        return config
    data, source = read_config(config)
    cfg = validate_config(data, source)
    if source is not None and not cfg.reach.data_dir.is_absolute() and "data_dir" in (data.get("reach") or {}):
        cfg.reach.data_dir = (source.parent / cfg.reach.data_dir).resolve()
    if source is not None:
        cfg._source = Path(source).resolve()
    return cfg
