"""Red team: the idempotency key reach derives for a call in a run (no key of its own).

It used to be ``run_id:call_id``:

* two agents in one run (a graph of agents sharing a thread id) number their calls
  alike, so the second agent's ``call_1`` was refused as the first one's key (and an
  upstream service that dedups on the ``Idempotency-Key`` header would hand it the
  first agent's response);
* ``run "a:b"`` + ``call "c"`` and ``run "a"`` + ``call "b:c"`` spelled the same key: a
  call that never ran came back as the other's receipt.

Now the key names the agent and says where each part ends (``reach_core.guard.ledger.derived_key``),
and a row stored under the old form still answers the same agent's same run and call.
"""

from __future__ import annotations

import itertools

import pytest

from reach_core import Connector, Reach
from reach_core.guard.ledger import derived_key, legacy_key


def _writer():
    sent: list[tuple[str, str, str | None]] = []

    class Send(Connector):
        name = "send_email"
        description = "Send an email. Use when the user asks to send one."
        risk = "write"
        input_schema = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}

        async def execute(self, params, ctx):
            sent.append((ctx.agent, params["to"], ctx.idempotency_key))
            return {"sent_to": params["to"], "by": ctx.agent}

    return Send(), sent


@pytest.fixture
def made(tmp_path):
    tool, sent = _writer()
    agents = {name: {"allow": ["send_email"]} for name in ("alice", "bob", "Alice", "bob2", "ops", "ops_2")}
    reach = Reach({"reach": {"data_dir": str(tmp_path / "d"), "log_calls": False}, "agents": agents}, plugins=[])
    reach.register(tool)
    yield reach, sent
    if reach.runtime.store_ is not None:
        reach.runtime.store_.close_sync()


def _call(call_id: str, to: str = "a@x.org") -> dict:
    return {"id": call_id, "name": "send_email", "arguments": {"to": to}}


# two different agents (None is "default"); look-alike names and names holding the separator
_AGENT_PAIRS = [
    ("alice", "bob"), ("alice", "Alice"), ("alice", "alice "), ("alice", None), (None, "alice"),
    ("alice", "default"), ("bob", "bob2"), ("ops", "ops_2"), ("ops", "ops:"), ("a:1", "a"),
    ("ops", "ops\u200b"), ("alice", "\u0430lice"),
]


@pytest.mark.parametrize("same_args", [True, False], ids=["same-args", "other-args"])
@pytest.mark.parametrize(("first", "second"), _AGENT_PAIRS, ids=repr)
async def test_two_agents_in_one_run_with_the_same_call_id_both_run(made, first, second, same_args):
    reach, sent = made
    one = await reach.invoke(_call("call_1"), agent=first, run_id="thread-7")
    two = await reach.invoke(_call("call_1", "a@x.org" if same_args else "b@x.org"), agent=second,
                             run_id="thread-7")
    assert one.ok and two.ok, (one, two)
    assert "receipt" not in two.meta and two.content["by"] == (second or "default")
    assert len(sent) == 2 and sent[0][2] != sent[1][2]
    # each agent's retry is its own receipt, not a denial and not the other's result
    for agent, first_result in ((first, one), (second, two)):
        again = await reach.invoke(_call("call_1", first_result.content["sent_to"]), agent=agent, run_id="thread-7")
        assert again.ok and again.meta.get("receipt") is True and again.content == first_result.content
    assert len(sent) == 2


# (run id, call id) pairs whose old keys were the same string: every pair is two different calls
_SPLITS = [
    (("a:b", "c"), ("a", "b:c")),
    (("run-1:call", "1"), ("run-1", "call:1")),
    (("x:", "y"), ("x", ":y")),
    (("5:r", "c"), ("5", "r:c")),
    (("r::", "c"), ("r:", ":c")),
    (("r", "::c"), ("r::", "c")),
    (("1:a:1", "b"), ("1", "a:1:b")),
    (("t", "1:x:1:y"), ("t:1:x", "1:y")),
]


@pytest.mark.parametrize("agent", [None, "alice", "a:1"])
@pytest.mark.parametrize(("one", "two"), _SPLITS, ids=repr)
async def test_run_and_call_ids_that_spell_one_old_key_are_two_calls(made, one, two, agent):
    reach, sent = made
    first = await reach.invoke(_call(one[1]), agent=agent, run_id=one[0])
    second = await reach.invoke(_call(two[1]), agent=agent, run_id=two[0])
    assert first.ok and second.ok
    assert "receipt" not in second.meta, "a call that never ran came back as another call's receipt"
    assert len(sent) == 2


def test_derived_keys_of_different_calls_never_meet():
    """The encoding is one-to-one over parts holding the separator, digits and look-alikes."""
    parts = ["", "a", "b", ":", "a:b", "1", "1:", ":1", "1:a", "a:1:b", "alice", "alice ", "\u0430lice", "é:", "5:x"]
    seen: dict[str, tuple[str, str, str]] = {}
    for triple in itertools.product(parts, parts, parts):
        key = derived_key(*triple)
        assert seen.setdefault(key, triple) == triple, f"{triple} and {seen[key]} share the key {key!r}"
    assert len(seen) == len(parts) ** 3


async def test_the_connector_gets_the_derived_key_and_a_callers_key_is_left_alone(made):
    reach, sent = made
    await reach.invoke(_call("c:1"), agent="alice", run_id="r:1")
    await reach.invoke(_call("c:2"), agent="alice", run_id="r:1", idempotency_key="order-17")
    assert [k for *_, k in sent] == [derived_key("alice", "r:1", "c:1"), "order-17"]
    assert sent[0][2] == "5:alice:3:r:1:c:1"


async def _stored_under_the_old_key(reach, agent: str, run_id: str, call_id: str, to: str) -> None:
    """A row as the version before wrote it: key ``run:call``, outcome recorded."""
    from reach_core.guard import _args_hash

    await reach.runtime.start()
    ledger = reach.runtime.guards.ledger
    claim = await ledger.claim("send_email", legacy_key(run_id, call_id), _args_hash({"to": to}),
                               agent=agent, run_id=run_id, call_id=call_id)
    assert claim.claimed
    await ledger.complete("send_email", legacy_key(run_id, call_id), "done",
                          {"ok": True, "content": {"sent_to": to, "by": "before the upgrade"}})


async def test_a_row_stored_under_the_old_key_answers_the_same_agents_same_call(made):
    reach, sent = made
    await _stored_under_the_old_key(reach, "alice", "wf-1", "call_1", "a@x.org")
    again = await reach.invoke(_call("call_1"), agent="alice", run_id="wf-1")
    assert again.ok and again.meta.get("receipt") is True and again.content["by"] == "before the upgrade"
    changed = await reach.invoke(_call("call_1", "evil@x.org"), agent="alice", run_id="wf-1")
    assert changed.error.code == "denied" and "different arguments" in changed.error.message
    assert sent == []


@pytest.mark.parametrize(("agent", "run_id", "call_id"), [
    ("bob", "wf-1", "call_1"),  # another agent in the same run
    (None, "wf-1", "call_1"),  # the default agent
    ("alice", "wf-1:call", "1"),  # the same old key string, another run and call
    ("alice", "wf", "1:call_1"),
    ("alice", "wf-1", "call_2"),
    ("alice", "wf-2", "call_1"),
], ids=repr)
async def test_an_old_row_is_no_other_calls_receipt(made, agent, run_id, call_id):
    reach, sent = made
    await _stored_under_the_old_key(reach, "alice", "wf-1", "call_1", "a@x.org")
    res = await reach.invoke(_call(call_id), agent=agent, run_id=run_id)
    assert res.ok and "receipt" not in res.meta and len(sent) == 1
