"""Red team: idempotency keys.

* A key is one agent's: another agent that sends the same key (guessed, leaked,
  or the same well-known "order-1") must be denied, not handed the first agent's
  recorded result, and must not learn whether the arguments matched.
* A key is 1-512 printable characters: an empty key, control characters, a key
  that does not fit a log line, a non-string, are ``invalid_arguments`` and nothing runs.
"""

from __future__ import annotations

import pytest

from reach_core import BusinessError, Connector, Reach


def _writer():
    sent: list[tuple[str, str | None]] = []

    class Send(Connector):
        name = "send_email"
        description = "Send an email. Use when the user asks to send one."
        risk = "write"
        input_schema = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}

        async def execute(self, params, ctx):
            if params["to"] == "fail@x.org":
                raise BusinessError(f"mailbox full for {ctx.agent}")
            sent.append((params["to"], ctx.idempotency_key))
            return {"sent_to": params["to"], "secret_receipt": f"receipt-for-{ctx.agent}"}

    return Send(), sent


@pytest.fixture
def made(tmp_path):
    tool, sent = _writer()
    # "alice " and "alice\n" call without a table of their own (config refuses such table names:
    # tests/test_config_name_typos.py), so they act with `default`'s rights, still not alice's keys
    agents = {name: {"allow": ["send_email"]} for name in ("alice", "bob", "Alice", "bob2")}
    reach = Reach({"reach": {"data_dir": str(tmp_path / "d"), "log_calls": False}, "agents": agents}, plugins=[])
    reach.register(tool)
    yield reach, sent
    if reach.runtime.store_ is not None:
        reach.runtime.store_.close_sync()


# (first agent, second agent): every pair is two different agents
_OTHER_AGENTS = [
    ("alice", "bob"), ("bob", "alice"), ("alice", "Alice"), ("alice", "alice "), ("alice", "alice\n"),
    ("alice", None), (None, "alice"), ("alice", "default"), ("alice", "bob2"), ("alice", "mallory"),
]


@pytest.mark.parametrize("same_args", [True, False], ids=["same-args", "other-args"])
@pytest.mark.parametrize(("first", "second"), _OTHER_AGENTS)
async def test_other_agents_key_is_denied_not_replayed(made, first, second, same_args):
    reach, sent = made
    one = await reach.invoke("send_email", {"to": "a@x.org"}, agent=first, idempotency_key="order-17")
    assert one.ok
    args = {"to": "a@x.org"} if same_args else {"to": "evil@x.org"}
    two = await reach.invoke("send_email", args, agent=second, idempotency_key="order-17")
    assert not two.ok and two.error.code == "denied"
    assert "receipt" not in two.meta and two.content is None
    assert "receipt-for" not in two.to_json()
    # the denial reads the same whether or not the arguments matched (no oracle)
    assert "different arguments" not in two.error.message
    assert len(sent) == 1


@pytest.mark.parametrize(("first", "second"), [("alice", "alice"), (None, None), (None, "default"),
                                               ("default", None), ("bob", "bob")])
async def test_same_agents_key_is_a_receipt(made, first, second):
    """Positive control: the same agent retrying gets its own receipt."""
    reach, sent = made
    one = await reach.invoke("send_email", {"to": "a@x.org"}, agent=first, idempotency_key="k-1")
    two = await reach.invoke("send_email", {"to": "a@x.org"}, agent=second, idempotency_key="k-1")
    assert one.ok and two.ok and two.meta["receipt"] is True and two.content == one.content
    assert len(sent) == 1


async def test_other_agents_recorded_failure_is_not_replayed(made):
    reach, sent = made
    one = await reach.invoke("send_email", {"to": "fail@x.org"}, agent="alice", idempotency_key="f-1")
    assert one.error.code == "execution_failed"
    two = await reach.invoke("send_email", {"to": "fail@x.org"}, agent="bob", idempotency_key="f-1")
    assert two.error.code == "denied" and "alice" not in two.to_json()
    again = await reach.invoke("send_email", {"to": "fail@x.org"}, agent="alice", idempotency_key="f-1")
    assert again.error.code == "execution_failed" and again.meta.get("receipt") is True  # alice's own


_BAD_KEYS = [
    "", "\n", "key\n", "\nkey", "a\x00b", "a\x1bb", "a\rb", "a\tb", "\x7f", "k\u200b", "\u200e",
    "k\u2028", "k\u2029", "\ufeffk", "k\u0085", "k\ud800", "k" * 513, "k" * 10_000, "é" * 513,
]
_NOT_STR = [0, 17, 1.5, True, b"key", ["key"], {"k": "v"}, ("k",)]


@pytest.mark.parametrize("key", _BAD_KEYS, ids=lambda k: repr(k)[:20])
@pytest.mark.parametrize("where", ["keyword", "call"])
async def test_bad_key_refused_and_nothing_runs(made, key, where):
    reach, sent = made
    if where == "keyword":
        result = await reach.invoke("send_email", {"to": "a@x.org"}, idempotency_key=key)
    else:
        result = await reach.invoke({"id": "c1", "name": "send_email", "arguments": {"to": "a@x.org"},
                                     "idempotency_key": key})
    assert not result.ok and result.error.code == "invalid_arguments"
    assert "idempotency key" in result.error.message
    assert sent == []
    assert len(result.error.message) < 400  # a huge key is not echoed back


@pytest.mark.parametrize("key", _NOT_STR, ids=repr)
async def test_non_string_key_in_call_refused(made, key):
    reach, sent = made
    result = await reach.invoke({"id": "c1", "name": "send_email", "arguments": {"to": "a@x.org"},
                                 "idempotency_key": key})
    assert not result.ok and result.error.code == "invalid_arguments"
    assert sent == []


_GOOD_KEYS = ["k", "k" * 512, "order 17", "run-1:call_2", "ключ-1", "订单-17", "a/b+c=d", "é" * 512, "~!@#$%^&*()"]


@pytest.mark.parametrize("key", _GOOD_KEYS, ids=lambda k: k[:12])
async def test_good_keys_run_once(made, key):
    """Positive control: legitimate keys (spaces, Unicode, 512 characters) work."""
    reach, sent = made
    one = await reach.invoke("send_email", {"to": "a@x.org"}, idempotency_key=key)
    two = await reach.invoke("send_email", {"to": "a@x.org"}, idempotency_key=key)
    assert one.ok and two.ok and two.meta["receipt"] is True
    assert sent == [("a@x.org", key)]
