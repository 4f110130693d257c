"""Settings of reach-dbos (``[plugins.reach-dbos]`` in reach.toml)."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: Read when ``database_url`` is not set, so a deployment can keep the URL out of the file.
URL_ENV = "REACH_DBOS_DATABASE_URL"


class Price(BaseModel):
    """What a model's tokens cost, per million (any currency: ``reach runs`` adds them up as given)."""

    model_config = ConfigDict(extra="forbid")

    prompt: float = Field(ge=0, description="per million prompt tokens (the part not served from cache)")
    completion: float = Field(ge=0, description="per million completion tokens")
    cached: float | None = Field(None, ge=0, description="per million cached prompt tokens (default: the prompt price)")

    def cost(self, usage: dict[str, int]) -> float:
        cached = min(usage.get("cached_tokens", 0), usage.get("prompt_tokens", 0))
        fresh = usage.get("prompt_tokens", 0) - cached
        per_cached = self.prompt if self.cached is None else self.cached
        return (fresh * self.prompt + cached * per_cached + usage.get("completion_tokens", 0) * self.completion) / 1e6


class DbosSettings(BaseModel):
    """Where DBOS keeps its checkpoints, and which executor this process is."""

    model_config = ConfigDict(extra="forbid")

    database_url: str | None = Field(
        None,
        description="PostgreSQL URL of the DBOS system database (postgresql://user:pw@host/db); "
        f"default: ${URL_ENV}. Write it as {{ env = \"VAR\" }} to keep the password out of the file.",
    )
    schema_name: str = Field(
        "reach_dbos", alias="schema", pattern=r"^[a-z_][a-z0-9_]{0,62}$",
        description="schema of DBOS's tables in that database (created on first start)",
    )
    executor_id: str = Field(
        "local",
        description="this instance's name in DBOS; on start an instance resumes the unfinished runs "
        "of its own name (give each replica its own stable name, e.g. the pod name)",
    )
    application_version: str = Field(
        "reach-dbos-1", description="runs are resumed only by instances of the same version"
    )
    recover_on_start: bool = Field(True, description="resume this executor's unfinished runs when reach starts")
    poll_interval: float = Field(
        0.2, gt=0, le=10, description="seconds between checks for an approval or message a run waits for"
    )

    takeover_after: float | None = Field(
        None, gt=0,
        description="seconds without a heartbeat after which another instance takes over a stopped instance's "
        "unfinished runs (unset: only by hand, `reach runs resume --executor NAME`); needs a distinct "
        "executor_id per instance",
    )
    heartbeat: float = Field(5.0, gt=0, le=3600, description="seconds between two heartbeats of this instance")
    synchronous_commit: bool = Field(
        True,
        description="each checkpoint waits for PostgreSQL to flush it to disk (2-4 ms a step on an ordinary "
        "disk); false: PostgreSQL's asynchronous commit for reach-dbos's writes only. A crash of reach loses "
        "nothing either way; a crash of PostgreSQL itself may lose the last fraction of a second of "
        "checkpoints, whose steps then run again (a write through the ledger: its receipt or outcome_unknown)",
    )
    max_result_bytes: int = Field(
        1_000_000, ge=1024, le=512_000_000,
        description="largest tool result (its JSON, as the model gets it) a durable run keeps; a larger one "
        "is cut to its head and marked `truncated` for the model, live and on replay alike (the call still "
        "ran once), so one tool cannot fill the checkpoint database",
    )
    prices: dict[str, Price] = Field(
        default_factory=dict,
        description="token prices per model name as the provider reports it (\"*\": any other model), "
        "for the cost so far in `reach runs list|show`; a run using a model without a price shows no cost",
    )

    @model_validator(mode="after")
    def _beats_often_enough(self) -> DbosSettings:
        if self.takeover_after is not None and self.takeover_after <= 2 * self.heartbeat:
            raise ValueError(f"takeover_after ({self.takeover_after} s) must be more than twice heartbeat "
                             f"({self.heartbeat} s), or a live instance's runs get taken over between two beats")
        return self

    def url(self) -> str | None:
        return self.database_url or os.environ.get(URL_ENV) or None
