"""Durable runs inside the test process: the loop as a DBOS workflow, its steps, its id."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import reach_dbos.plugin
import reach_openai.plugin
from dbos import DBOS
from reach_openai.scripted import Answer, Call, ScriptedModelServer, ToolCalls

from reach_core import Connector, Reach
from reach_core.guard.ledger import derived_key


class Credit(Connector):
    name = "add_credit"
    description = "Add credit to an account. Use when the user asks for credit."
    risk = "write"
    input_schema = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}

    def __init__(self) -> None:
        self.keys: list[str | None] = []

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        self.keys.append(ctx.idempotency_key)
        return {"credited": params["amount"]}


SCRIPT = [
    ToolCalls([Call("add_credit", {"amount": 5})]),
    ToolCalls([Call("add_credit", {"amount": 7})]),
    Answer("credited {add_credit[credited]}"),
]


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(SCRIPT) as srv:
        yield srv


@pytest.fixture
def make(
    tmp_path: Path, pg_url: str, session_schema: str, server: ScriptedModelServer
) -> Iterator[Callable[..., Reach]]:
    made: list[Reach] = []

    def make(**extra: Any) -> Reach:
        config: dict[str, Any] = {
            "reach": {"data_dir": str(tmp_path / "data")},
            "plugins": {
                "reach-openai": {"base_url": server.url, "api_key": "k", "model": "m", "max_retries": 0},
                "reach-dbos": {"database_url": pg_url, "schema": session_schema, "poll_interval": 0.05},
            },
            **extra,
        }
        reach = Reach(config, plugins=[("reach-openai", reach_openai.plugin), ("reach-dbos", reach_dbos.plugin)])
        reach.credit = Credit()  # type: ignore[attr-defined]
        reach.register(reach.credit)  # type: ignore[attr-defined]
        made.append(reach)
        return reach

    yield make


async def test_a_durable_run_is_a_workflow_whose_steps_are_model_calls_and_tool_turns(make, server) -> None:
    reach = make()
    seen: list[int] = []
    result = await reach.run("give credit", durable=True, on_step=lambda s: seen.append(s.index))
    assert result.outcome == "answered" and result.text == "credited 7"
    assert seen == [1, 2, 3]
    status = await DBOS.get_workflow_status_async(result.run_id)
    assert status is not None and status.status == "SUCCESS" and status.name == "reach.run"
    steps = await DBOS.list_workflow_steps_async(result.run_id)
    assert [s["function_name"] for s in steps] == ["reach.model", "reach.tools"] * 2 + ["reach.model"]
    # the idempotency keys are the agent's, the run id's (= workflow id) and the call ids the model step recorded
    assert reach.credit.keys == [derived_key("default", result.run_id, c["id"])
                                 for s in result.steps for c in s.tool_calls]
    assert len(server.requests) == 3
    await reach.aclose()


@pytest.mark.parametrize("how", ["durable", "strategy"])
async def test_the_run_id_is_the_workflow_id_and_a_repeat_returns_the_recorded_run(make, server, how) -> None:
    reach = make(strategies={"runner": "reach-dbos"}) if how == "strategy" else make()
    kwargs = {} if how == "strategy" else {"durable": True}
    first = await reach.run("give credit", run_id=f"run_fixed_{how}", **kwargs)
    again = await reach.run("give credit", run_id=f"run_fixed_{how}", **kwargs)
    assert first.run_id == again.run_id == f"run_fixed_{how}"
    assert again.text == first.text == "credited 7"
    assert len(server.requests) == 3 and len(reach.credit.keys) == 2  # nothing ran twice
    await reach.aclose()


async def test_durable_false_and_no_strategy_keep_the_in_process_loop(make, server) -> None:
    reach = make(strategies={"runner": "reach-dbos"})
    result = await reach.run("give credit", durable=False)
    assert result.text == "credited 7"
    assert await DBOS.get_workflow_status_async(result.run_id) is None
    await reach.aclose()


async def test_a_run_with_a_model_error_ends_as_model_error_durably(make, server) -> None:
    from reach_openai.scripted import Fail

    server.script = [Fail(400, "bad request")]
    reach = make()
    result = await reach.run("give credit", durable=True)
    assert result.outcome == "model_error" and "bad request" in (result.error or "")
    status = await DBOS.get_workflow_status_async(result.run_id)
    assert status is not None and status.status == "SUCCESS"
    await reach.aclose()


async def test_a_reach_without_the_database_or_with_another_schema_is_refused(
    make, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reach_core import ConfigError

    first = make()
    await first.run("give credit", durable=True)  # DBOS runs in this process now
    monkeypatch.delenv("REACH_DBOS_DATABASE_URL", raising=False)
    bare = Reach({"reach": {"data_dir": str(tmp_path / "bare")}},
                 plugins=[("reach-openai", reach_openai.plugin), ("reach-dbos", reach_dbos.plugin)])
    with pytest.raises(ConfigError, match="database_url"):
        await bare.run("give credit", durable=True)
    other = make()
    settings = other.plugin_settings("reach-dbos")  # validated; another schema for the same database
    other.runtime.settings["reach-dbos"] = settings.model_copy(update={"schema_name": "reach_dbos_other"})
    with pytest.raises(ConfigError, match="one DBOS instance per process"):
        await other.run("give credit", durable=True)
    for r in (first, bare, other):
        await r.aclose()


@pytest.mark.parametrize("run_id", ["run\x00x", "run\nx", "\x7f", "a" * 257, "tab\there"])
async def test_a_run_id_that_cannot_name_a_durable_run_is_refused_at_once(make, server, run_id: str) -> None:
    reach = make()
    with pytest.raises(ValueError, match="cannot name a durable run"):
        await reach.run("give credit", durable=True, run_id=run_id)
    assert server.requests == []
    await reach.aclose()


async def test_a_run_started_by_a_tool_of_a_durable_run_is_part_of_its_step(make, server) -> None:
    from reach_core import connector

    server.script = {
        "inner": [Answer("inner answer")],
        None: [ToolCalls([Call("ask_helper", {"task": "inner task"})]), Answer("outer got {ask_helper[text]}")],
    }
    reach = make()
    inner_ids: list[str] = []

    @connector(risk="read")
    async def ask_helper(task: str) -> dict[str, str]:
        """Ask a helper agent a question.

        Args:
            task: the question for the helper
        """
        child = await reach.run(task, durable=True)
        inner_ids.append(child.run_id)
        return {"text": child.text}

    reach.register(ask_helper)
    result = await reach.run("outer question", durable=True, tools=["ask_helper"])
    assert result.outcome == "answered" and result.text == "outer got inner answer"
    assert len(inner_ids) == 1 and await DBOS.get_workflow_status_async(inner_ids[0]) is None
    await reach.aclose()


async def test_many_concurrent_durable_runs_share_a_few_checkpoint_connections(make, server) -> None:
    import reach_dbos.checkpoint as checkpoint

    reach = make()
    script = [ToolCalls([Call("add_credit", {"amount": 1})]), Answer("credited {add_credit[credited]}")]
    server.script = {f"[{i}]": list(script) for i in range(24)}
    results = await asyncio.gather(*(reach.run(f"[{i}] credit", durable=True) for i in range(24)))
    assert [r.outcome for r in results] == ["answered"] * 24 and len(reach.credit.keys) == 24
    for r in results:
        steps = await DBOS.list_workflow_steps_async(r.run_id)
        assert [s["function_name"] for s in steps] == ["reach.model", "reach.tools", "reach.model"]
    pool = checkpoint._CONFIG.pools[asyncio.get_running_loop()]
    assert len(pool.idle) <= checkpoint.POOL_SIZE
    await reach.aclose()


async def test_an_execution_that_lost_the_run_is_refused_at_its_next_checkpoint_and_stops(
    make, server, pg_url: str, session_schema: str
) -> None:
    """Another instance took the run over (its owner changed) while this one waited for the model:
    this one's step is not recorded and its next step (a write) never starts."""
    import psycopg

    server.script = [ToolCalls([Call("add_credit", {"amount": 5})]),
                     ToolCalls([Call("add_credit", {"amount": 7})], delay=1.5),
                     Answer("credited {add_credit[credited]}")]
    reach = make()
    task = asyncio.create_task(reach.run("credit please", durable=True, run_id="run_lost_owner"))
    while len(server.requests) < 2:  # noqa: ASYNC110 - the second model call is under way
        await asyncio.sleep(0.02)
    plain = pg_url.replace("postgresql+psycopg://", "postgresql://", 1)
    async with await psycopg.AsyncConnection.connect(plain, autocommit=True) as conn:
        await conn.execute(f'UPDATE "{session_schema}".workflow_status SET owner_xid = %s WHERE workflow_uuid = %s',
                           ("another-instance", "run_lost_owner"))
    done, _ = await asyncio.wait({task}, timeout=4)
    steps = await DBOS.list_workflow_steps_async("run_lost_owner")
    assert [s["function_name"] for s in steps] == ["reach.model", "reach.tools"]  # the model step was refused
    assert len(reach.credit.keys) == 1  # the second write never started
    if not done:
        task.cancel()
    # leave nothing behind for a later recovery, or for the tests that list this session's runs
    await DBOS.delete_workflow_async("run_lost_owner")
    await reach.aclose()


async def test_dbos_logs_through_the_hosts_logging_not_its_own_stderr_handler(make, server) -> None:
    import logging

    reach = make()
    result = await reach.run("give credit", durable=True)
    assert result.outcome == "answered"
    dbos_log = logging.getLogger("dbos")
    assert dbos_log.propagate, "DBOS's records must reach the host's handlers"
    streams = [h for h in dbos_log.handlers if isinstance(h, logging.StreamHandler)]
    assert streams == [], streams
    await reach.aclose()
