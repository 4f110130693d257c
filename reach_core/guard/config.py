"""Settings of the guard rails, as pydantic models the root config includes.

Where each model lives in ``reach.toml``::

    [reach]                       # GuardDefaults (fields merged into the [reach] table)
    budget_timezone = "UTC"
    max_calls_per_run = 50
    identical_call_limit = 3
    failing_call_limit = 2
    read_cache = false
    retry_backoff = 1.0           # (core field) first retry delay; doubles each retry
    retry_backoff_max = 30
    thread_pool = 16

    [limits]                      # LimitsConfig
    storage = "memory://"         # or "redis://localhost:6379/0" to share limits
    strategy = "fixed-window"
    [limits.plugins.reach-http]   # PluginLimits, process-wide cap for one plugin's tools
    max_concurrency = 4

    [connectors.send_email]       # ConnectorGuard (fields merged into [connectors.NAME])
    rate_limit = "10/minute"
    daily_budget = 200
    max_concurrency = 1
    attempt_timeout = 5

    [agents.support]              # AgentGuard (fields merged into [agents.NAME])
    rate_limit = "100/minute"
    daily_budget = 1000
    max_calls_per_run = 30
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "AgentGuard",
    "ConnectorGuard",
    "GuardDefaults",
    "LimitsConfig",
    "PluginLimits",
    "section",
]


def _check_rate(value: str | None) -> str | None:
    if value is None:
        return None
    from limits import parse_many

    try:
        parse_many(value)
    except ValueError as exc:
        raise ValueError(
            f"rate limit {value!r} is not understood; write it like \"10/second\" or \"100/minute; 1000/day\""
        ) from exc
    return value


class GuardDefaults(BaseModel):
    """Process-wide defaults of the guard rails (fields of ``[reach]``).

    The guard rails read these from the whole ``[reach]`` table, so extra keys are
    ignored here; ``reach_core.config.ReachSection`` includes these fields and
    forbids unknown keys (a typo is an error there, at start-up)."""

    model_config = ConfigDict(extra="ignore")

    budget_timezone: str = Field(default="UTC", description="time zone in which daily budgets reset at 00:00")
    max_calls_per_run: int | None = Field(default=None, ge=1,
                                          description="tool calls one run may make, all tools together")
    identical_call_limit: int = Field(default=3, ge=1,
                                      description="same tool + same arguments allowed this many times per run")
    failing_call_limit: int = Field(default=2, ge=1,
                                    description="a call that failed this many times in a run is refused")
    read_cache: bool = Field(default=False, description="reuse results of identical read calls within a run")
    retry_backoff_max: float = Field(default=30.0, ge=0, description="cap of one backoff delay (s)")
    thread_pool: int = Field(default=16, ge=1, description="worker threads for sync connectors")

    @field_validator("budget_timezone")
    @classmethod
    def _tz(cls, value: str) -> str:
        from zoneinfo import ZoneInfo

        try:
            ZoneInfo(value)
        except Exception as exc:
            raise ValueError(f"unknown time zone {value!r}; "
                             "use an IANA name like \"UTC\" or \"Europe/Berlin\"") from exc
        return value


class PluginLimits(BaseModel):
    """Caps shared by every tool of one plugin (``[limits.plugins.NAME]``).

    Strict like the core's tables: ``"4"`` or ``true`` is not a number of calls."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_concurrency: int | None = Field(default=None, ge=1, description="calls of this plugin's tools running at once, "
                                        "process-wide")
    rate_limit: str | None = Field(default=None, description="calls of this plugin's tools, e.g. `\"100/minute\"`")

    _rate = field_validator("rate_limit")(classmethod(lambda cls, v: _check_rate(v)))


def _check_storage(value: str) -> str:
    """A storage URI the ``limits`` package can open: an unknown scheme (``memroy://``,
    ``redis:/host``) was accepted at start and then failed every call as an internal error."""
    from limits.storage import SCHEMES

    scheme, sep, _ = value.partition("://")
    if not sep or scheme.removeprefix("async+") not in SCHEMES:
        known = sorted(k for k in SCHEMES if not k.startswith("async+"))
        shown = f"the scheme {scheme!r}" if sep else "no scheme"
        raise ValueError(f"storage has {shown}, which is not a limits storage; write memory:// or "
                         f"redis://host:port/db (schemes: {', '.join(known)})")
    return value


class LimitsConfig(BaseModel):
    """``[limits]``: where rate-limit counters live and per-plugin caps (strict, as above)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    storage: str = Field(default="memory://", description="limits storage URI: memory:// or redis://host:port/db")
    _storage = field_validator("storage")(classmethod(lambda cls, v: _check_storage(v)))
    strategy: Literal["fixed-window", "moving-window", "sliding-window-counter"] = Field(default=
        "fixed-window",
        description="fixed-window: O(1) per call; moving-window: no bursts at window edges, but keeps "
        "one timestamp per allowed call (costly for limits in the thousands)",
    )
    plugins: dict[str, PluginLimits] = Field(default_factory=dict, description="caps per plugin (entry-point "
                                             "or distribution name): `[limits.plugins.NAME]`")


class ConnectorGuard(BaseModel):
    """Guard-rail fields of ``[connectors.NAME]`` (next to timeout, max_retries, risk ...).

    Extra keys are ignored here (the guard rails read the whole table);
    ``reach_core.config.ConnectorConfig`` includes these fields and forbids unknown keys."""

    model_config = ConfigDict(extra="ignore")

    rate_limit: str | None = Field(default=None, description="calls of this tool, e.g. `\"10/minute\"` or "
                                   "`\"10/second; 1000/day\"`")
    daily_budget: int | None = Field(default=None, ge=0, description="calls of this tool per day (resets at 00:00 "
                                     "in `[reach] budget_timezone`)")
    max_calls_per_run: int | None = Field(default=None, ge=1, description="calls of this tool one run may make")
    identical_call_limit: int | None = Field(default=None, ge=1, description="same arguments allowed this many "
                                             "times per run (default `[reach] identical_call_limit`)")
    read_cache: bool | None = Field(default=None, description="reuse results of identical read calls within a run "
                                    "(default `[reach] read_cache`)")

    _rate = field_validator("rate_limit")(classmethod(lambda cls, v: _check_rate(v)))


class AgentGuard(BaseModel):
    """Guard-rail fields of ``[agents.NAME]`` (next to allow, deny, tiers ...).

    Extra keys are ignored here (the guard rails read the whole table);
    ``reach_core.config.AgentConfig`` includes these fields and forbids unknown keys."""

    model_config = ConfigDict(extra="ignore")

    rate_limit: str | None = Field(default=None, description="calls by this agent, e.g. `\"100/minute\"`")
    daily_budget: int | None = Field(default=None, ge=0, description="calls by this agent per day")
    max_calls_per_run: int | None = Field(default=None, ge=1, description="tool calls one run of this agent may make")

    _rate = field_validator("rate_limit")(classmethod(lambda cls, v: _check_rate(v)))


def section(obj: Any, *path: str) -> dict[str, Any]:
    """Read a nested config table as a plain dict, whether the root config is a
    pydantic model, a dict, or missing (the guard rails must work with any)."""
    cur: Any = obj
    for key in path:
        if cur is None:
            return {}
        if isinstance(cur, dict):
            cur = cur.get(key)
        else:
            nxt = getattr(cur, key, None)
            if nxt is None:
                extra = getattr(cur, "model_extra", None) or getattr(cur, "__pydantic_extra__", None)
                nxt = extra.get(key) if extra else None
            cur = nxt
    if cur is None:
        return {}
    if isinstance(cur, dict):
        return {k: (v.model_dump() if isinstance(v, BaseModel) else v) for k, v in cur.items()}
    if isinstance(cur, BaseModel):
        data = cur.model_dump()
        data.update(getattr(cur, "model_extra", None) or {})
        return data
    return {}
