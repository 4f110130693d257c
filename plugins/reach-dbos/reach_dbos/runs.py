"""Durable runs as people see them: ``reach runs list|show|cancel`` read DBOS's tables.

A :class:`dbos.DBOSClient` reads and cancels without starting DBOS in the
process (no executor, nothing resumed), so listing runs never takes work from
the instances that serve them. Resuming a run needs an executor: see
``commands.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reach_core.errors import ConfigError

from .approval import APPROVAL_STEP
from .runner import MODEL_STEP, TOOLS_STEP, WORKFLOW, _sqlalchemy_url, _storable
from .settings import DbosSettings

__all__ = ["RunsClient", "cost_of", "model_usage", "summarize_steps"]

#: DBOS statuses as reach names them (a run "waiting" is PENDING in DBOS).
STATUSES = ("PENDING", "ENQUEUED", "SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


def summarize_steps(
    steps: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, int], dict[str, Any] | None]:
    """Each checkpointed step in a line, the tokens used so far, and the approval waited for (if any)."""
    out: list[dict[str, Any]] = []
    tokens = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "total_tokens": 0}
    pending: dict[str, Any] | None = None
    for s in steps:
        name = s.get("function_name")
        row: dict[str, Any] = {"step": s.get("function_id"), "kind": name,
                               "done": s.get("completed_at_epoch_ms") is not None}
        output = s.get("output")
        if s.get("error") is not None:
            row["error"] = str(s["error"])[:300]
        if name == MODEL_STEP and output is not None:
            pending = None
            usage = getattr(output, "usage", None)
            if usage is not None:
                for key, value in usage.to_dict().items():
                    tokens[key] = tokens.get(key, 0) + int(value)
            row["model"] = getattr(output, "model", None)
            row["tool_calls"] = [c.name for c in getattr(output, "tool_calls", [])]
            row["text"] = (getattr(output, "text", None) or "")[:200]
        elif name == TOOLS_STEP and isinstance(output, list):
            row["results"] = [{"name": r.name, "ok": r.ok, "error": r.error.code if r.error else None}
                              for r in output]
            # calls that wait for a person; the approval steps that follow settle them one by one
            pending_calls = [{"tool": r.name, "call_id": r.call_id, "confirmation_id": r.meta.get("confirmation_id")}
                             for r in output if r.error is not None and r.error.code == "needs_confirmation"]
            pending = {"calls": pending_calls} if pending_calls else None
        elif name == APPROVAL_STEP:
            decided = output
            row["approval"] = ("approved" if getattr(decided, "ok", False) else
                               getattr(getattr(decided, "error", None), "code", None))
            if pending is not None and decided is not None:
                pending["calls"] = [c for c in pending["calls"] if c["call_id"] != getattr(decided, "call_id", None)
                                    or getattr(getattr(decided, "error", None), "code", None) == "needs_confirmation"]
                pending = pending if pending["calls"] else None
        out.append(row)
    return out, tokens, pending


def model_usage(steps: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Tokens per model name (as the provider reported it; ``""`` if it did not) over the finished model steps.

    The usage is part of each model step's checkpoint (the adapter's response), so
    the figures are exactly what the run has consumed so far, across crashes: a
    model call cut off by a crash was never recorded and is not counted (the
    provider may still bill it)."""
    out: dict[str, dict[str, int]] = {}
    for s in steps:
        output = s.get("output")
        if s.get("function_name") != MODEL_STEP or output is None:
            continue
        usage = getattr(output, "usage", None)
        if usage is None:
            continue
        into = out.setdefault(str(getattr(output, "model", None) or ""), {})
        for key, value in usage.to_dict().items():
            into[key] = into.get(key, 0) + int(value)
    return out


def cost_of(by_model: dict[str, dict[str, int]], prices: dict[str, Any]) -> tuple[float | None, list[str]]:
    """The cost of those tokens at ``[plugins.reach-dbos.prices]``, and the models without a price.

    ``None`` when some model has no price (nor ``"*"``): a partial sum would read as the whole."""
    total = 0.0
    unpriced: list[str] = []
    for model, usage in by_model.items():
        price = prices.get(model) or prices.get("*")
        if price is None:
            unpriced.append(model or "(unnamed)")
            continue
        total += price.cost(usage)
    return (None if unpriced else round(total, 6)), unpriced


class RunsClient:
    """Lists, shows and cancels the durable runs in one DBOS system database."""

    def __init__(self, settings: DbosSettings) -> None:
        url = settings.url()
        if not url:
            raise ConfigError(
                "reach runs needs the database of the durable runs: set [plugins.reach-dbos] database_url "
                "or REACH_DBOS_DATABASE_URL"
            )
        from dbos import DBOSClient

        self._prices = settings.prices
        self._client = DBOSClient(system_database_url=_sqlalchemy_url(url), dbos_system_schema=settings.schema_name)

    def close(self) -> None:
        self._client.destroy()

    def list(self, *, status: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        found = self._client.list_workflows(name=WORKFLOW, status=status, limit=limit, sort_desc=True,
                                            load_input=True, load_output=False)
        rows = []
        for w in found:
            row = self._row(w)
            # one read of the run's steps each: a listing is for people (``--limit`` bounds it)
            row.update(self._usage(self._client.list_workflow_steps(w.workflow_id)))
            rows.append(row)
        return rows

    def _usage(self, steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        by_model = model_usage(steps)
        tokens = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "total_tokens": 0}
        for usage in by_model.values():
            for key, value in usage.items():
                tokens[key] = tokens.get(key, 0) + value
        cost, unpriced = cost_of(by_model, self._prices)
        return {"tokens": tokens, "tokens_by_model": by_model, "cost": cost, "unpriced_models": unpriced}

    def show(self, run_id: str) -> dict[str, Any] | None:
        if not _storable(run_id):
            return None
        found = self._client.list_workflows(workflow_ids=[run_id], name=WORKFLOW, load_input=True, load_output=True)
        if not found:
            return None
        row = self._row(found[0])
        recorded = self._client.list_workflow_steps(run_id)
        steps, _, pending = summarize_steps(recorded)
        row.update(self._usage(recorded))
        row.update(steps=steps, pending_approval=pending if row["status"] == "PENDING" else None)
        output = found[0].output
        if output is not None:
            row["outcome"] = getattr(output, "outcome", None)
            row["text"] = getattr(output, "text", None)
            row["error"] = getattr(output, "error", None)
        elif found[0].error is not None:
            row["error"] = str(found[0].error)[:500]
        return row

    def cancel(self, run_id: str) -> bool:
        if not _storable(run_id):
            return False
        if not self._client.list_workflows(workflow_ids=[run_id], name=WORKFLOW, load_input=False, load_output=False):
            return False
        self._client.cancel_workflow(run_id)
        return True

    @staticmethod
    def _row(w: Any) -> dict[str, Any]:
        question = ""
        args = (w.input or {}).get("args") if isinstance(w.input, dict) else getattr(w.input, "args", None)
        if args:
            first = args[0]
            if isinstance(first, str):
                question = first
            elif isinstance(first, list):
                users = [m.get("content") for m in first if isinstance(m, dict) and m.get("role") == "user"]
                question = str(users[-1]) if users else ""
        return {
            "run_id": w.workflow_id,
            "status": w.status,
            "question": question[:200],
            "executor": w.executor_id,
            "created_at": w.created_at,
            "updated_at": w.updated_at,
        }
