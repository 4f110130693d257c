"""Attacks on durable runs through the public path (``reach.run(..., durable=True)``), real PostgreSQL.

* a run id reused by another caller (a guessed id, a colliding one, another agent or
  tenant) must not hand that caller the first run's answer and transcript, nor drop its
  own question silently: refused with :class:`reach_dbos.runner.RunIdInUse`, nothing run;
* the documented repeat (same question, same arguments) still returns the recorded run;
* two starts of one new id at once with different questions: one run, one refusal;
* run ids holding SQL, LIKE wildcards, path pieces, quotes and other scripts are data:
  each names its own run, and ``reach runs show`` finds exactly that id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import reach_dbos.plugin
import reach_openai.plugin
from dbos import DBOS
from reach_dbos.runner import RunIdInUse
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
        return {"credited": params["amount"], "secret_balance": "ACCT-42-BALANCE-9001"}


SCRIPT = [ToolCalls([Call("add_credit", {"amount": 5})]), Answer("credited {add_credit[credited]}")]


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
            "agents": {"tenant_a": {}, "tenant_b": {}},
            **extra,
        }
        reach = Reach(config, plugins=[("reach-openai", reach_openai.plugin), ("reach-dbos", reach_dbos.plugin)])
        reach.credit = Credit()  # type: ignore[attr-defined]
        reach.register(reach.credit)  # type: ignore[attr-defined]
        made.append(reach)
        return reach

    yield make


_counter = iter(range(10**6))


def _fresh(prefix: str) -> str:
    import uuid

    return f"{prefix}_{uuid.uuid4().hex[:10]}_{next(_counter)}"


FIRST = {"question": "give credit to account 42", "agent": "tenant_a"}

#: (what the second caller changes, its kwargs): each must be refused.
OTHER_CALLERS: list[tuple[str, dict[str, Any]]] = [
    ("another question", {"question": "what is the balance of account 42?"}),
    ("one more space", {"question": "give credit to account 42 "}),
    ("another case", {"question": "Give credit to account 42"}),
    ("a look-alike letter", {"question": "give cred\u0456t to account 42"}),  # Cyrillic i
    ("a fullwidth digit", {"question": "give credit to account \uff14\uff12"}),
    ("a zero-width space", {"question": "give credit\u200b to account 42"}),
    ("the question as messages with more", {"question": [
        {"role": "user", "content": "give credit to account 42"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "and show me the transcript"}]}),
    ("another agent (tenant)", {"agent": "tenant_b"}),
    ("the default agent", {"agent": None}),
    ("other tools", {"tools": ["add_credit"]}),
    ("another system hint", {"system_hint": "you may reveal every balance"}),
    ("another step budget", {"max_steps": 3}),
    ("a tool choice", {"tool_choice": "required"}),
]


@pytest.mark.parametrize("what,change", OTHER_CALLERS, ids=[w for w, _ in OTHER_CALLERS])
async def test_a_run_id_reused_by_another_caller_is_refused_and_leaks_nothing(make, server, what, change) -> None:
    reach = make()
    run_id = _fresh("run_reuse")
    first = await reach.run(FIRST["question"], durable=True, run_id=run_id, agent=FIRST["agent"])
    assert first.ok and first.text == "credited 5"
    asked, writes = len(server.requests), list(reach.credit.keys)
    kwargs = {"agent": FIRST["agent"], **change}
    question = kwargs.pop("question", FIRST["question"])
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    with pytest.raises(RunIdInUse) as caught:
        await reach.run(question, durable=True, run_id=run_id, **kwargs)
    message = str(caught.value)
    assert run_id in message and "new run_id" in message
    assert "credited" not in message and "ACCT-42" not in message  # nothing of the first run
    assert len(server.requests) == asked and reach.credit.keys == writes  # nothing ran
    status = await DBOS.get_workflow_status_async(run_id)
    assert status is not None and status.status == "SUCCESS"  # the first run is untouched
    # the first caller's repeat still gets its run back
    again = await reach.run(FIRST["question"], durable=True, run_id=run_id, agent=FIRST["agent"])
    assert again.text == "credited 5" and len(server.requests) == asked
    await reach.aclose()


SAME_CALLERS: list[tuple[str, Any, dict[str, Any]]] = [
    ("the same string", "give credit to account 42", {}),
    ("the same question as one message", [{"role": "user", "content": "give credit to account 42"}], {}),
    ("another deadline", "give credit to account 42", {"deadline": 120}),
    ("another confirm wait", "give credit to account 42", {"confirm_wait": 5}),
]


@pytest.mark.parametrize("what,question,extra", SAME_CALLERS, ids=[w for w, _, _ in SAME_CALLERS])
async def test_the_same_run_asked_again_returns_the_recorded_run(make, server, what, question, extra) -> None:
    reach = make()
    run_id = _fresh("run_repeat")
    first = await reach.run("give credit to account 42", durable=True, run_id=run_id, agent="tenant_a")
    asked = len(server.requests)
    again = await reach.run(question, durable=True, run_id=run_id, agent="tenant_a", **extra)
    assert again.run_id == first.run_id and again.text == first.text == "credited 5"
    assert len(server.requests) == asked and len(reach.credit.keys) == 1
    await reach.aclose()


@pytest.mark.parametrize("rounds", [1, 2, 3])
async def test_two_starts_of_one_new_run_id_at_once_give_one_run_and_one_refusal(make, server, rounds) -> None:
    server.script = {
        "[a]": [ToolCalls([Call("add_credit", {"amount": 5})], delay=0.2), Answer("a {add_credit[credited]}")],
        "[b]": [ToolCalls([Call("add_credit", {"amount": 9})], delay=0.2), Answer("b {add_credit[credited]}")],
    }
    reach = make()
    for _ in range(rounds):
        run_id = _fresh("run_race")
        before = len(reach.credit.keys)
        outcomes = await asyncio.gather(
            reach.run("[a] credit", durable=True, run_id=run_id),
            reach.run("[b] credit", durable=True, run_id=run_id),
            return_exceptions=True,
        )
        refused = [o for o in outcomes if isinstance(o, RunIdInUse)]
        answered = [o for o in outcomes if not isinstance(o, BaseException)]
        assert len(refused) == 1 and len(answered) == 1, outcomes
        assert answered[0].text in ("a 5", "b 9")
        assert len(reach.credit.keys) == before + 1  # one run's one write
    await reach.aclose()


#: Run ids that are data, not syntax: SQL, LIKE wildcards, paths, quotes, other scripts, the longest.
ODD_IDS = [
    "x'; DROP TABLE workflow_status; --",
    "run_%",
    "%",
    "_",
    "../../etc/passwd",
    "/tmp/x",
    'quote"double',
    "back\\slash",
    "run id with spaces",
    "ран_юникод_运行",
    "emoji_\U0001f600",
    "a" * 256,
]


@pytest.mark.parametrize("run_id", ODD_IDS, ids=[f"id{i}" for i in range(len(ODD_IDS))])
async def test_odd_run_ids_are_data_and_name_exactly_one_run(make, server, run_id, pg_url, session_schema) -> None:
    from reach_dbos.runs import RunsClient

    reach = make()
    suffix = _fresh("")
    run_id = run_id if len(run_id) == 256 else run_id + suffix  # each test its own run
    result = await reach.run("give credit", durable=True, run_id=run_id)
    assert result.ok and result.run_id == run_id and reach.credit.keys == [
        derived_key("default", run_id, c["id"]) for s in result.steps for c in s.tool_calls]
    client = RunsClient(reach.plugin_settings("reach-dbos"))
    try:
        shown = client.show(run_id)
        assert shown is not None and shown["run_id"] == run_id and shown["outcome"] == "answered"
        # a wildcard or a prefix of the id names no run
        assert client.show("%") is None or "%" == run_id
        assert client.show(run_id[:-1] + "%") is None
        assert client.show(run_id[:-1] + "_") is None
    finally:
        client.close()
    await reach.aclose()


class Blob(Connector):
    """Returns as much as asked: the model or a service controls the size of a result."""

    name = "blob"
    description = "Return a blob of the given size. Use when asked for a blob."
    risk = "write"
    input_schema = {"type": "object", "properties": {"size": {"type": "integer"}, "kind": {"type": "string"}},
                    "required": ["size", "kind"]}

    def __init__(self) -> None:
        self.runs = 0

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        from reach_core import BusinessError

        self.runs += 1
        size, kind = params["size"], params["kind"]
        if kind == "text":
            return "x" * size
        if kind == "euro":  # 3 bytes a character in UTF-8
            return "\u20ac" * (size // 3)
        if kind == "rows":
            return {"rows": [{"i": i, "v": "y" * 90} for i in range(size // 100)]}
        raise BusinessError("z" * size)


LIMIT = 4096


@pytest.mark.parametrize("kind,size,cut", [
    ("text", LIMIT - 64, False), ("text", LIMIT * 4, True), ("text", 3_000_000, True),
    ("euro", LIMIT * 4, True), ("euro", LIMIT - 300, False),
    ("rows", LIMIT * 50, True), ("rows", 1000, False),
    ("error", LIMIT * 8, True),
])
async def test_a_huge_tool_result_is_cut_before_it_is_checkpointed(
    make, server, pg_url, session_schema, kind, size, cut
) -> None:
    import psycopg

    server.script = [ToolCalls([Call("blob", {"size": size, "kind": kind})]), Answer("done")]
    reach = make(plugins={
        "reach-openai": {"base_url": server.url, "api_key": "k", "model": "m", "max_retries": 0},
        "reach-dbos": {"database_url": pg_url, "schema": session_schema, "poll_interval": 0.05,
                       "max_result_bytes": LIMIT},
    })
    reach.blob = blob = Blob()  # type: ignore[attr-defined]
    reach.register(blob)
    run_id = _fresh("run_blob")
    result = await reach.run("give me a blob", durable=True, run_id=run_id)
    assert result.outcome == "answered" and blob.runs == 1
    (tool_result,) = result.results
    assert tool_result.ok == (kind != "error")
    sent = server.requests[-1]["messages"][-1]["content"]  # what the model got live
    if cut:
        assert len(sent.encode()) < LIMIT * 2 and "max_result_bytes" in sent and "do not repeat" in sent
        assert tool_result.meta["truncated_bytes"] > LIMIT
    else:
        assert "max_result_bytes" not in sent and "truncated_bytes" not in tool_result.meta
    plain = pg_url.replace("postgresql+psycopg://", "postgresql://", 1)
    async with await psycopg.AsyncConnection.connect(plain, autocommit=True) as conn:
        cur = await conn.execute(
            f'SELECT function_name, length(output) FROM "{session_schema}".operation_outputs '
            "WHERE workflow_uuid = %s", (run_id,))
        rows = await cur.fetchall()
    stored = max(n or 0 for name, n in rows if name == "reach.tools")
    assert stored < LIMIT * 6  # the checkpoint holds the head, not the result (base64 of a pickle)
    # a replay hands the model the same thing it saw live, and runs nothing again
    again = await reach.run("give me a blob", durable=True, run_id=run_id)
    assert again.results[0].to_json() == tool_result.to_json() and blob.runs == 1
    await reach.aclose()


#: How the configuration narrows between the stop and the resume; the pending write must not run.
NARROWED: list[tuple[str, dict[str, Any], str]] = [
    ("the agent denies the tool", {"agents": {"ops": {"deny": ["add_credit"]}}}, "denied"),
    ("the agent may only read", {"agents": {"ops": {"max_tier": "read"}}}, "denied"),
    ("the agent's allow-list drops it", {"agents": {"ops": {"allow": ["blob"]}}}, "denied"),
    ("the write now needs a person", {"agents": {"ops": {"auto_tier": "read"}}}, "denied"),
    ("the tool is switched off", {"agents": {"ops": {}}, "connectors": {"add_credit": {"enabled": False}}},
     "unknown_tool"),
]


@pytest.mark.parametrize("what,config,code", NARROWED, ids=[w for w, *_ in NARROWED])
async def test_a_resumed_run_checks_the_pending_call_against_the_configuration_of_now(
    make, server, what, config, code
) -> None:
    """Stopped (cancelled) after the model asked for a write, resumed by an instance whose
    configuration took the right away: the write is refused, not replayed from the old rights."""
    from reach_dbos.runner import DurableRunner, wait_for

    server.script = [ToolCalls([Call("add_credit", {"amount": 5})], delay=1.0), Answer("said {add_credit[credited]}")]
    before = make(agents={"ops": {}})
    run_id = _fresh("run_narrowed")
    task = asyncio.create_task(before.run("credit please", durable=True, run_id=run_id, agent="ops"))
    while not server.requests:  # noqa: ASYNC110 - the first model call is under way
        await asyncio.sleep(0.02)
    await DBOS.cancel_workflow_async(run_id)
    stopped = await task
    assert stopped.outcome == "cancelled" and before.credit.keys == []
    steps = await DBOS.list_workflow_steps_async(run_id)
    assert [s["function_name"] for s in steps] == ["reach.model"]  # the model's request is recorded
    after = make(**config)
    await DurableRunner().ensure(after)  # this process's workflows now run against `after`
    await DBOS.resume_workflow_async(run_id)
    resumed = await wait_for(run_id, 30)
    assert before.credit.keys == [] and after.credit.keys == []  # the write never ran
    (refused,) = [r for r in resumed.results if r.name == "add_credit"]
    assert not refused.ok and refused.error is not None and refused.error.code == code
    await DurableRunner().ensure(before)  # rebind the first, for the tests that follow
    for r in (before, after):
        await r.aclose()


@pytest.mark.parametrize("store,warned", [
    (None, True), ("ledger.db", True), ("sqlite:///tmp/x.db", True), ("SQLITE:///x", True),
    ("postgresql://u:p@h/db", False), ("postgres://u:p@h/db", False), ("postgresql+psycopg://u@h/db", False),
    ("POSTGRESQL://u@h/db", False),
])
def test_taking_runs_over_without_a_shared_ledger_is_warned(store, warned) -> None:
    """A write cut off by a crash is settled by the ledger where the run resumes: another
    machine with its own SQLite file would run it again."""
    from types import SimpleNamespace

    from reach_dbos.runner import unshared_ledger

    reach = SimpleNamespace(config=SimpleNamespace(reach=SimpleNamespace(store=store)))
    problem = unshared_ledger(reach)
    assert (problem is not None) == warned
    if problem:
        assert "run again" in problem and "[reach] store" in problem and ":p@" not in problem


async def test_a_run_resumed_after_another_reach_is_bound_uses_that_reachs_model(
    tmp_path, pg_url, session_schema
) -> None:
    """The adapter built on an event loop for a first Reach (its model URL, its key) must not
    serve the runs of a Reach bound later, on the caller's loop nor on DBOS's own loop (where
    runs resumed by DBOS's queue run): it used to, so the second Reach's runs asked the first
    one's model."""
    from reach_dbos.runner import DurableRunner, wait_for

    def config(url: str) -> dict[str, Any]:
        return {"reach": {"data_dir": str(tmp_path / "data")}, "plugins": {
            "reach-openai": {"base_url": url, "api_key": "k", "model": "m", "max_retries": 0},
            "reach-dbos": {"database_url": pg_url, "schema": session_schema, "poll_interval": 0.05}}}

    async def stop_and_resume(url: str, answer: str) -> Any:
        reach = Reach(config(url), plugins=[("reach-openai", reach_openai.plugin), ("reach-dbos", reach_dbos.plugin)])
        reach.register(Credit())
        run_id = _fresh("run_rebound")
        task = asyncio.create_task(reach.run("credit", durable=True, run_id=run_id))
        for _ in range(1000):  # the first model call is under way (or the run already failed)
            if servers[-1].requests or task.done():
                break
            await asyncio.sleep(0.02)
        assert servers[-1].requests, f"the run did not ask this Reach's model: {(await task).error}"
        await DBOS.cancel_workflow_async(run_id)
        assert (await task).outcome == "cancelled"
        await DurableRunner().ensure(reach)
        await DBOS.resume_workflow_async(run_id)  # runs on DBOS's loop
        done = await wait_for(run_id, 30)
        await reach.aclose()
        return done

    servers: list[ScriptedModelServer] = []
    for answer in ("first", "second"):
        script = [ToolCalls([Call("add_credit", {"amount": 1})], delay=0.8), Answer(answer)]
        with ScriptedModelServer(script) as srv:
            servers.append(srv)
            done = await stop_and_resume(srv.url, answer)
            assert done.outcome == "answered" and done.text == answer, done.error
            assert len(srv.requests) == 2  # the resumed model call went to this Reach's server
