"""What ``reach runs show`` makes of checkpointed steps: tokens so far, the approval waited for."""

from __future__ import annotations

import pytest
from reach_dbos.runs import summarize_steps

from reach_core.adapter import ModelResponse, ModelToolCall, Usage
from reach_core.result import ToolError, ToolResult


def _step(n: int, name: str, output: object, done: bool = True) -> dict:
    return {"function_id": n, "function_name": name, "output": output, "error": None,
            "completed_at_epoch_ms": 1 if done else None}


def _asks() -> list[dict]:
    model = ModelResponse(text=None, tool_calls=[ModelToolCall("c1", "danger_write", "{}")], usage=Usage(10, 5, 2))
    waiting = ToolResult("c1", "danger_write", False, None, ToolError("needs_confirmation", "waits"),
                         meta={"confirmation_id": "cf_1"})
    return [_step(1, "reach.model", model), _step(2, "reach.tools", [waiting])]


def test_tokens_add_up_over_model_steps_and_a_waiting_call_is_the_pending_approval() -> None:
    steps, tokens, pending = summarize_steps(_asks())
    assert tokens == {"prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 2, "total_tokens": 15}
    assert steps[0]["tool_calls"] == ["danger_write"] and steps[1]["results"][0]["error"] == "needs_confirmation"
    assert pending == {"calls": [{"tool": "danger_write", "call_id": "c1", "confirmation_id": "cf_1"}]}


def test_a_decision_or_a_later_model_step_clears_the_pending_approval() -> None:
    approved = ToolResult("c1", "danger_write", True, {"deleted": "x"}, meta={"approved": True})
    steps, _, pending = summarize_steps([*_asks(), _step(3, "reach.approval", approved)])
    assert pending is None and steps[2]["approval"] == "approved"
    still = ToolResult("c1", "danger_write", False, None, ToolError("needs_confirmation", "waits"))
    assert summarize_steps([*_asks(), _step(3, "reach.approval", still)])[2] is not None
    answer = ModelResponse(text="ok", usage=Usage(3, 1))
    _, tokens, pending = summarize_steps([*_asks(), _step(3, "reach.model", answer)])
    assert pending is None and tokens["total_tokens"] == 19


def test_cost_uses_each_models_price_or_the_star_and_names_models_without_one() -> None:
    from reach_dbos.runs import cost_of, model_usage
    from reach_dbos.settings import DbosSettings

    steps = [_step(1, "reach.model", ModelResponse(text=None, usage=Usage(1_000_000, 100_000, 400_000), model="big")),
             _step(2, "reach.model", ModelResponse(text="ok", usage=Usage(2_000, 1_000), model="small")),
             _step(3, "reach.model", None, done=False)]  # in flight: not recorded, not counted
    by_model = model_usage(steps)
    assert by_model["big"]["total_tokens"] == 1_100_000 and by_model["small"]["cached_tokens"] == 0
    prices = DbosSettings.model_validate({"prices": {"big": {"prompt": 2, "completion": 8, "cached": 0.5},
                                                     "*": {"prompt": 1, "completion": 1}}}).prices
    cost, unpriced = cost_of(by_model, prices)
    assert unpriced == [] and cost == pytest.approx(0.6 * 2 + 0.4 * 0.5 + 0.1 * 8 + 0.003)
    only_big = {"big": prices["big"]}
    assert cost_of(by_model, only_big) == (None, ["small"])
