"""Red team: a run's guard-rail state is one agent's, even when two agents send the same run id.

Run ids come from callers: a framework's thread id, or a client of ``reach serve``
(``POST /v1/invoke {"run_id": ...}``, where each token acts as its own agent). The
per-run state (how often each exact call was made and its last good result, the read
cache, failures in a row, the run's call count) was keyed by the run id alone. So a
second agent sending the same run id got the first agent's results back (the
identical-call guard's "earlier result", a cached read) and had its calls refused
because of the first agent's calls (its run limits, its failures, its repeated
writes). Now the state is keyed by agent and run id; a delegated run still shares its
parent's state on purpose (tests/test_delegate.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from reach_core import BusinessError, Connector
from reach_core.testing import make_reach


class Inbox(Connector):
    name = "read_inbox"
    description = "Read the caller's inbox. Use when asked about mail."
    risk = "read"
    input_schema = {"type": "object", "properties": {"folder": {"type": "string"}}}

    async def execute(self, params: Any, ctx: Any) -> dict[str, str]:
        return {"owner": ctx.agent, "mail": f"private mail of {ctx.agent}"}


class Post(Connector):
    name = "post_note"
    description = "Post a note. Use when asked to write something down."
    risk = "write"
    input_schema = {"type": "object", "properties": {"text": {"type": "string"}}}

    async def execute(self, params: Any, ctx: Any) -> str:
        if params.get("text") == "fail":
            raise BusinessError(f"the board refused {ctx.agent}'s note")
        return f"posted by {ctx.agent}"


# (first agent, second agent): named, unnamed (the default table's rights), default, and spellings
PAIRS = [("alice", "bob"), ("bob", "alice"), (None, "alice"), ("alice", None), ("zz", "yy"), ("alice", "Alice"),
         ("alice", "alice "), ("default", "bob")]
IDS = [f"{a}->{b}" for a, b in PAIRS]


def _reach(tmp_path, **reach_cfg: Any):
    reach = make_reach(config={"reach": reach_cfg} if reach_cfg else None, data_dir=tmp_path)
    reach.register(Inbox())
    reach.register(Post())
    return reach


def _own(result: Any, agent: str | None) -> None:
    assert result.ok, result
    assert result.content == {"owner": agent or "default", "mail": f"private mail of {agent or 'default'}"}
    assert not {"repeated", "cached", "from_call"} & set(result.meta)


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=IDS)
async def test_another_agents_repeated_call_is_not_replayed(tmp_path, first, second):
    reach = _reach(tmp_path)
    for _ in range(3):  # identical_call_limit: the next identical call would get this result back
        await reach.invoke("read_inbox", {"folder": "in"}, agent=first, run_id="thread-1")
    _own(await reach.invoke("read_inbox", {"folder": "in"}, agent=second, run_id="thread-1"), second)


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=IDS)
async def test_another_agents_cached_read_is_not_served(tmp_path, first, second):
    reach = _reach(tmp_path, read_cache=True)
    await reach.invoke("read_inbox", {"folder": "in"}, agent=first, run_id="thread-1")
    _own(await reach.invoke("read_inbox", {"folder": "in"}, agent=second, run_id="thread-1"), second)


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=IDS)
async def test_another_agents_calls_do_not_use_up_the_run(tmp_path, first, second):
    reach = _reach(tmp_path, max_calls_per_run=2)
    for folder in ("a", "b", "c"):
        await reach.invoke("read_inbox", {"folder": folder}, agent=first, run_id="thread-1")
    _own(await reach.invoke("read_inbox", {"folder": "in"}, agent=second, run_id="thread-1"), second)


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=IDS)
async def test_another_agents_failures_do_not_refuse_the_call(tmp_path, first, second):
    reach = _reach(tmp_path)
    for _ in range(2):  # failing_call_limit
        await reach.invoke("post_note", {"text": "fail"}, agent=first, run_id="thread-1")
    result = await reach.invoke("post_note", {"text": "fail"}, agent=second, run_id="thread-1")
    assert result.error is not None and result.error.code == "execution_failed", result  # it ran, and failed itself
    assert f"{second or 'default'}'s note" in result.error.message


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=IDS)
async def test_another_agents_identical_writes_do_not_refuse_the_write(tmp_path, first, second):
    reach = _reach(tmp_path)
    for _ in range(3):
        await reach.invoke("post_note", {"text": "hi"}, agent=first, run_id="thread-1")
    result = await reach.invoke("post_note", {"text": "hi"}, agent=second, run_id="thread-1")
    assert result.ok and result.content == f"posted by {second or 'default'}", result


@pytest.mark.parametrize("agent", ["alice", None, "zz"])
async def test_positive_control_one_agents_run_keeps_its_guards(tmp_path, agent):
    reach = _reach(tmp_path, read_cache=True, max_calls_per_run=3)
    first = await reach.invoke("read_inbox", {"folder": "in"}, agent=agent, run_id="thread-1")
    again = await reach.invoke("read_inbox", {"folder": "in"}, agent=agent, run_id="thread-1")
    assert again.meta.get("cached") and again.content == first.content
    for folder in ("a", "b"):
        await reach.invoke("read_inbox", {"folder": folder}, agent=agent, run_id="thread-1")
    over = await reach.invoke("read_inbox", {"folder": "z"}, agent=agent, run_id="thread-1")
    assert over.error is not None and over.error.code == "budget_exceeded"
