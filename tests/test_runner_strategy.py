"""The runner seam of ``reach.run``: ``durable=True`` / ``[strategies] runner`` hand the run to a
runner provider (reach-dbos); without one asked for, the in-process loop runs as before."""

from __future__ import annotations

from typing import Any

import pytest

from reach_core import ConfigError, Reach, hookimpl
from reach_core.adapter import ModelRequest, ModelResponse


class Answer:
    name = "answer"

    def describe(self) -> str:
        return "answer"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="in-process")


class RunnerPlugin:
    REACH_PLUGIN_NAME = "test-runner"

    def __init__(self) -> None:
        self.runs: list[tuple[Any, dict[str, Any]]] = []

    @hookimpl
    def reach_register_runners(self, register: Any) -> None:
        register("test-runner", self)

    async def run(self, reach: Any, messages_or_text: Any, **kwargs: Any) -> str:
        self.runs.append((messages_or_text, kwargs))
        return "from the runner"


async def test_without_a_runner_asked_for_the_loop_runs_in_process() -> None:
    plugin = RunnerPlugin()
    reach = Reach({}, plugins=[plugin])
    result = await reach.run("hi", adapter=Answer())
    assert result.text == "in-process" and plugin.runs == []


@pytest.mark.parametrize("how", ["durable", "config"])
async def test_durable_or_the_strategy_hands_the_run_to_the_runner(how: str) -> None:
    plugin = RunnerPlugin()
    config = {"strategies": {"runner": "test-runner"}} if how == "config" else {}
    reach = Reach(config, plugins=[plugin])
    kwargs = {"durable": True} if how == "durable" else {}
    assert await reach.run("hi", max_steps=3, **kwargs) == "from the runner"
    assert plugin.runs == [("hi", {"max_steps": 3})]


async def test_durable_false_overrides_the_strategy() -> None:
    plugin = RunnerPlugin()
    reach = Reach({"strategies": {"runner": "test-runner"}}, plugins=[plugin])
    result = await reach.run("hi", adapter=Answer(), durable=False)
    assert result.text == "in-process" and plugin.runs == []


async def test_durable_without_a_runner_plugin_says_what_to_install() -> None:
    reach = Reach({}, plugins=[])
    with pytest.raises(ConfigError, match="pip install reach-dbos"):
        await reach.run("hi", adapter=Answer(), durable=True)
