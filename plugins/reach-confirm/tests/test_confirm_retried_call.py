"""A retried call whose request a person already approved does not run a second time.

A call that needs a person carries its idempotency key (the caller's, or run id + call
id in a run) so that a repeat of it runs once. The approved call used to run under the
request's own key (``confirm:<id>``), and the repeat of the model's call (an HTTP client
retrying after a dropped answer, a durable run replaying the tool turn that was cut off
by a crash after the request was made) found no pending request, so a *new* request was
put to the person for the same call: a second "approve" ran the write twice. A repeat
of the same call (same agent, idempotency key and arguments) now gets the approved
execution's own outcome through the ledger (its receipt, or ``outcome_unknown`` while
it is not known), and no new request.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid

import pytest
import reach_confirm.plugin as confirm_plugin
from reach_confirm.plugin import queue_for
from test_confirm import SENT, Tools

from reach_core import Connector, hookimpl
from reach_core.testing import make_reach

GATE: dict[str, asyncio.Event] = {}


class SlowPay(Connector):
    """A payment that waits on ``GATE["open"]``: its approval stays in flight meanwhile."""

    name = "slow_pay"
    description = "Pay someone slowly. Use when the user asks to pay and can wait."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {"to": {"type": "string", "description": "recipient"}},
                    "required": ["to"]}

    async def execute(self, params, ctx):
        SENT.append(dict(params, key=ctx.idempotency_key))
        GATE["started"].set()
        await GATE["open"].wait()
        return {"paid": params["to"]}


class SlowTools(Tools):
    REACH_PLUGIN_NAME = "bank-slow"

    @hookimpl
    def reach_register_tools(self, register):
        super().reach_register_tools(register)
        register(SlowPay())


@pytest.fixture(autouse=True)
def _clear():
    SENT.clear()
    GATE["open"], GATE["started"] = asyncio.Event(), asyncio.Event()


@pytest.fixture(params=["sqlite", "postgres"])
async def reach(request, tmp_path):
    """A Reach on its SQLite file, or on a PostgreSQL schema of its own (the store of several instances)."""
    config: dict = {"plugins": {"reach-confirm": {"ttl_seconds": 600}}}
    schema = None
    if request.param == "postgres":
        base = os.environ.get("REACH_TEST_POSTGRES_URL")
        if not base:
            if os.environ.get("REACH_REQUIRE_SERVICES"):
                pytest.fail("REACH_TEST_POSTGRES_URL is not set (source /work/services.env)")
            pytest.skip("set REACH_TEST_POSTGRES_URL (scripts/start-postgres.sh) for the PostgreSQL store")
        schema = f"reach_confirm_t{uuid.uuid4().hex[:10]}"
        config["reach"] = {"store": f"{base}{'&' if '?' in base else '?'}schema={schema}"}
    r = make_reach(("reach-confirm", confirm_plugin), SlowTools(), config=config, data_dir=tmp_path)
    yield r
    await r.aclose()
    if schema is not None:
        import psycopg

        from reach_core.stores.postgres import _split_url

        with psycopg.connect(_split_url(base)[0], autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _call(arguments, call_id="c1"):
    return {"id": call_id, "name": "send_money", "arguments": arguments}


# how the caller repeats the call: the same key given again, or the same run and call id
KEYED = {"key": {"idempotency_key": "order-42"}, "run": {"run_id": "run-7"}}

# the arguments of the first ask, then of the repeat: the same call in other spellings
SPELLINGS = [
    ({"to": "alice", "amount": 10}, {"to": "alice", "amount": 10}),
    ({"to": "alice", "amount": 10}, {"amount": 10, "to": "alice"}),
    ({"to": "alice", "amount": 10}, json.dumps({"to": "alice", "amount": 10})),
    (json.dumps({"amount": 10, "to": "alice"}), {"to": "alice", "amount": 10}),
    ({"to": "ünïcødé 名前", "amount": 1000}, json.dumps({"amount": 1000, "to": "ünïcødé 名前"}, ensure_ascii=True)),
    ({"to": "a" * 5000, "amount": 10}, {"amount": 10, "to": "a" * 5000}),
]

# the same call for a person (``10`` and ``10.0``), another for the ledger (it hashes the JSON as sent):
# the repeat is refused by the ledger's key check, and still nothing runs twice and nobody is asked
NUMERIC = [
    ({"to": "alice", "amount": 10}, {"to": "alice", "amount": 10.0}),
    (json.dumps({"amount": 10.0, "to": "alice"}), {"to": "alice", "amount": 10}),
    ({"to": "alice", "amount": 1e3}, json.dumps({"amount": 1000, "to": "alice"})),
]


async def _approve_then_repeat(reach, how, first, again, agent):
    asked = await reach.invoke(_call(first), agent=agent, **KEYED[how])
    cid = asked.meta["confirmation_id"]
    q = queue_for(reach)
    done = await q.approve(cid, by="person:ann")
    assert done.ok and len(SENT) == 1
    repeats = [await reach.invoke(_call(again), agent=agent, **KEYED[how]) for _ in range(3)]
    assert len(SENT) == 1
    assert [c.id for c in await q.list(None)] == [cid]  # nobody was asked again
    return done, repeats


@pytest.mark.parametrize("how", list(KEYED))
@pytest.mark.parametrize("first,again", SPELLINGS)
@pytest.mark.parametrize("agent", [None, "support"])
async def test_a_repeat_of_an_approved_call_gets_its_receipt_and_runs_nothing(reach, how, first, again, agent):
    done, repeats = await _approve_then_repeat(reach, how, first, again, agent)
    for repeat in repeats:
        assert repeat.ok, repeat.error
        assert repeat.content == done.content


@pytest.mark.parametrize("how", list(KEYED))
@pytest.mark.parametrize("first,again", NUMERIC)
async def test_a_repeat_spelt_with_other_numbers_runs_nothing_and_asks_nobody(reach, how, first, again):
    _, repeats = await _approve_then_repeat(reach, how, first, again, None)
    for repeat in repeats:
        assert not repeat.ok and repeat.error.code == "denied", repeat


@pytest.mark.parametrize("how", list(KEYED))
async def test_a_repeat_while_the_approved_call_runs_does_not_run_it_again(reach, how):
    asked = await reach.invoke({"id": "c1", "name": "slow_pay", "arguments": {"to": "bob"}}, **KEYED[how])
    cid = asked.meta["confirmation_id"]
    q = queue_for(reach)
    approving = asyncio.create_task(q.approve(cid, by="person:ann"))
    await GATE["started"].wait()
    repeat = await reach.invoke({"id": "c1", "name": "slow_pay", "arguments": {"to": "bob"}}, **KEYED[how])
    assert not repeat.ok and repeat.error.code == "outcome_unknown", repeat  # never "needs_confirmation" again
    GATE["open"].set()
    assert (await approving).ok
    assert len(SENT) == 1
    assert [c.id for c in await q.list(None)] == [cid]


# the positive controls: what is another call is still put to a person
OTHER = [
    ("another key", {"idempotency_key": "order-43"}, {"to": "alice", "amount": 10}, None),
    ("another call id", {"run_id": "run-7", "call_id": "c2"}, {"to": "alice", "amount": 10}, None),
    ("another run", {"run_id": "run-8"}, {"to": "alice", "amount": 10}, None),
    ("no key", {}, {"to": "alice", "amount": 10}, None),
    ("other arguments", {"idempotency_key": "order-42"}, {"to": "alice", "amount": 11}, None),
    ("another agent", {"idempotency_key": "order-42"}, {"to": "alice", "amount": 10}, "support"),
]


@pytest.mark.parametrize("what,keyed,args,agent", OTHER, ids=[o[0] for o in OTHER])
async def test_positive_control_another_call_still_asks_a_person(reach, what, keyed, args, agent):
    first = {"idempotency_key": "order-42"} if "idempotency_key" in keyed or not keyed else {"run_id": "run-7"}
    cid = (await reach.invoke(_call({"to": "alice", "amount": 10}), **first)).meta["confirmation_id"]
    await queue_for(reach).approve(cid, by="person:ann")
    keyed = dict(keyed)
    call_id = keyed.pop("call_id", "c1")
    other = await reach.invoke(_call(args, call_id), agent=agent, **keyed)
    assert other.error is not None and other.error.code == "needs_confirmation", other
    assert other.meta["confirmation_id"] != cid
    assert len(SENT) == 1
