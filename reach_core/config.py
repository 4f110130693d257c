"""Configuration: one pydantic model, from ``reach.toml``, ``[tool.reach]`` or a dict.

Where it comes from, first found wins: the ``config`` argument (path or dict),
``$REACH_CONFIG``, ``./reach.toml``, ``[tool.reach]`` in ``./pyproject.toml``,
else defaults. Environment: ``REACH_PLUGINS`` (comma-separated allow-list; set
but empty means no plugins), ``REACH_DISABLE_PLUGINS`` (comma-separated).

Sections::

    [reach]            data_dir, store, strict, argument caps, concurrency, retry backoff,
                       max_tools_per_step (offered per step when a selector is installed), pins
    [plugins]          load (allow-list), disable; [plugins.NAME] a plugin's settings,
                       plus hooks_disabled = ["reach_post_invoke", ...] per plugin
    [strategies]       selector, adapter, confirmer, parser, error_formatter
    [hooks]            reach_post_invoke = ["plugin-a", "plugin-b"]  (explicit order)
    [connectors.NAME]  enabled, provider, timeout, attempt_timeout, max_retries, risk,
                       idempotent, tags, keywords, max_concurrency, sequential, weight, ...
    [agents.NAME]      allow, deny, max_tier, auto_tier, approval, budgets ...

Secrets are written ``{ env = "VAR" }`` and read from the environment when a
plugin's settings are validated.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .configfile import find_default as _find_default  # noqa: F401 - kept importable from here
from .configfile import read_config, resolve_secrets
from .configfile import read_file as _read_file  # noqa: F401 - kept importable from here
from .errors import ConfigError

__all__ = ["AgentConfig", "Config", "ConnectorConfig", "load_config", "resolve_secrets"]

Tier = Literal["read", "write", "dangerous"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ReachSection(_Section):
    data_dir: Path = Path(".reach")
    strict: bool = False
    max_argument_bytes: int = 1_000_000
    max_argument_depth: int = 32
    concurrency: int = 5
    retry_backoff: float = 1.0
    default_timeout: float | None = None
    log_calls: bool = True
    system_hint: str | None = None
    max_tools_per_step: Annotated[int, Field(ge=1, le=128)] = 8
    store: str | None = None
    pins: Path | None = None


class PluginsSection(_Section):
    load: list[str] | None = None
    disable: list[str] = Field(default_factory=list)

    def plugin_table(self, name: str) -> dict[str, Any]:
        extra = self.model_extra or {}
        table = extra.get(name)
        return dict(table) if isinstance(table, dict) else {}


class StrategiesSection(_Section):
    selector: str | None = None
    adapter: str | None = None
    confirmer: str | None = None
    parser: str | None = None
    error_formatter: str | None = None


class ConnectorConfig(_Section):
    enabled: bool = True
    provider: str | None = None
    timeout: float | None = None
    attempt_timeout: float | None = None
    max_retries: int | None = Field(default=None, alias="retries")
    risk: Tier | None = None
    idempotent: bool | None = None
    tags: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    description: str | None = None
    max_concurrency: int | None = None
    sequential: bool | None = None
    weight: int | None = None
    max_calls_per_run: int | None = None

    def overrides(self) -> dict[str, Any]:
        """Only what was set, in the names ``Tool.build`` reads."""
        out = {k: v for k, v in self.model_dump(exclude_unset=True).items() if v is not None}
        out.pop("enabled", None)
        out.pop("provider", None)
        return out


class AgentConfig(_Section):
    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)
    max_tier: Tier = "dangerous"
    auto_tier: Tier = "write"
    approval: dict[str, Literal["never", "once", "run", "always"]] = Field(default_factory=dict)
    delegates: list[str] = Field(default_factory=list)
    pinned: list[str] = Field(default_factory=list)


class Config(_Section):
    reach: ReachSection = Field(default_factory=ReachSection)
    plugins: PluginsSection = Field(default_factory=PluginsSection)
    strategies: StrategiesSection = Field(default_factory=StrategiesSection)
    hooks: dict[str, list[str]] = Field(default_factory=dict)
    connectors: dict[str, ConnectorConfig] = Field(default_factory=dict)
    agents: dict[str, AgentConfig] = Field(default_factory=dict)

    def agent(self, name: str | None) -> tuple[str, AgentConfig]:
        """The named agent's config, or ``default`` (from config or built in)."""
        if name and name in self.agents:
            return name, self.agents[name]
        return "default", self.agents.get("default") or AgentConfig()


def load_config(config: str | os.PathLike[str] | dict[str, Any] | Config | None) -> Config:
    """Build and validate the configuration; raise ``ConfigError`` naming the field."""
    if isinstance(config, Config):
        return config
    data, source = read_config(config)
    try:
        cfg = Config.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        where = f" in {source}" if source else ""
        raise ConfigError(f"invalid config{where}: {loc}: {first['msg']}") from None
    if source is not None and not cfg.reach.data_dir.is_absolute() and "data_dir" in (data.get("reach") or {}):
        cfg.reach.data_dir = (source.parent / cfg.reach.data_dir).resolve()
    return cfg
