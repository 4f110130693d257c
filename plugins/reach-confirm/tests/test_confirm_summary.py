"""The summary a person approves shows what will run: arguments in the schema's order,
each value quoted as JSON (no value can spell another argument), hidden characters
as escapes, every argument named even when values must be cut, and "… and N more"
when not even the names fit. Before, arguments came in the order the model sent
them, unquoted, and the line was cut at the end: a long harmless first argument
hid the recipient."""

from __future__ import annotations

import itertools
import json
import re

import pytest
import reach_confirm.plugin as confirm_plugin
from reach_confirm.plugin import queue_for

from reach_core import Connector, hookimpl
from reach_core.testing import make_reach

RAN: list[dict] = []
LIMIT = 200


class Wire(Connector):
    """No summarize of its own: the default summary."""

    name = "wire"
    description = "Wire money. Use when the user asks to pay someone."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {
        "to": {"type": "string"}, "amount": {"type": "number"}, "memo": {"type": "string"}},
        "required": ["to", "amount"], "additionalProperties": True}

    async def execute(self, params, ctx):
        RAN.append(dict(params))
        return "sent"


class Tools:
    REACH_PLUGIN_NAME = "wire-tools"

    @hookimpl
    def reach_register_tools(self, register):
        register(Wire())


@pytest.fixture
def reach(tmp_path):
    RAN.clear()
    return make_reach(("reach-confirm", confirm_plugin), Tools(),
                      config={"plugins": {"reach-confirm": {"ttl_seconds": 60, "summary_chars": LIMIT}}},
                      data_dir=tmp_path)


async def _summary(reach, args: dict) -> str:
    res = await reach.invoke({"id": "c1", "name": "wire", "arguments": json.dumps(args)})
    assert res.error.code == "needs_confirmation"
    pending = await queue_for(reach).list()
    assert len(pending) == 1
    assert pending[0].summary in res.error.message
    return pending[0].summary


_PAIR = re.compile(r'(?P<k>[^=,\s][^=]*?)=(?P<v>"(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)')


def _parse(summary: str) -> dict:
    """The summary read back the only way its format allows: name=JSON, comma-separated."""
    assert summary.startswith("wire: ")
    body = summary[len("wire: "):]
    out, pos = {}, 0
    while pos < len(body):
        m = _PAIR.match(body, pos)
        assert m is not None, (body, pos)
        out[m.group("k")] = json.loads(m.group("v"))
        pos = m.end()
    return out


@pytest.mark.parametrize("order", list(itertools.permutations(["to", "amount", "memo"])))
async def test_schema_order_whatever_order_the_model_sends(reach, order):
    args = {"to": "alice", "amount": 10, "memo": "rent"}
    summary = await _summary(reach, {k: args[k] for k in order})
    assert summary == 'wire: to="alice", amount=10, memo="rent"'


FORGERIES = [
    "alice, amount=1", 'alice", amount=1, memo="x', "alice\", amount=1", "alice\nwire: to=bob",
    "alice amount=1", "alice,amount=1", 'alice" amount="1', "alice\\", "alice\\\", amount=1",
    "alice\r\namount=1", "alice\u2028amount=1", "alice\u202e1=tnuoma ,", "=", ",", '"', "",
]


@pytest.mark.parametrize("to", FORGERIES, ids=repr)
async def test_a_value_cannot_spell_another_argument(reach, to):
    args = {"amount": 9000, "to": to}
    summary = await _summary(reach, args)
    parsed = _parse(summary)
    assert list(parsed) == ["to", "amount"]
    assert parsed["amount"] == 9000
    assert parsed["to"].encode("unicode_escape") == to.encode("unicode_escape") or "⟨U+" in summary


@pytest.mark.parametrize("pad", [170, 190, 400, 5000, 100_000])
@pytest.mark.parametrize("where", ["memo", "extra"])
async def test_a_long_value_does_not_hide_the_others(reach, pad, where):
    """A long first argument (sent first, or an extra one) is cut; `to` and `amount` stay named."""
    args = {where: "x" * pad, "to": "mallory", "amount": 9000}
    summary = await _summary(reach, args)
    assert len(summary) <= LIMIT
    assert 'to="mallory"' in summary and "amount=9000" in summary
    assert f"{where}=" in summary and "…" in summary


@pytest.mark.parametrize("extra", [10, 40, 200])
async def test_too_many_arguments_says_how_many_more(reach, extra):
    args = {"to": "mallory", "amount": 1, **{f"field_{i:03d}": "v" * 30 for i in range(extra)}}
    summary = await _summary(reach, args)
    assert len(summary) <= LIMIT
    assert summary.startswith('wire: to="mallory", amount=1')
    m = re.search(r"… and (\d+) more$", summary)
    assert m is not None, summary
    shown = len(re.findall(r"(?:^wire: |, )([a-z_0-9]+)=", summary))
    assert shown + int(m.group(1)) == len(args)


@pytest.mark.parametrize("key", ["to\u202e", "x\x1b[2K", "\u200bto", "a\nb"])
async def test_hidden_characters_in_extra_keys_are_visible(reach, key):
    summary = await _summary(reach, {"to": "alice", "amount": 1, key: "v"})
    assert all(ch.isprintable() for ch in summary), repr(summary)


@pytest.mark.parametrize("args", [{"to": "bob", "amount": 5}, {"to": "Zoë", "amount": 1.5, "memo": "北京"},
                                  {"to": "a b  c", "amount": 0}])
async def test_positive_control_short_summary_is_complete_and_runs(reach, args):
    summary = await _summary(reach, args)
    assert _parse(summary) == args
    c = (await queue_for(reach).list())[0]
    result = await queue_for(reach).approve(c.id, by="person:ann")
    assert result.ok and RAN == [args]


def test_default_summary_fits_any_limit():
    from reach_confirm.queue import default_summary

    args = {"to": "mallory", "amount": 9000, "memo": "m" * 1000}
    for limit in range(40, 300, 7):
        text = default_summary("wire", args, ["to", "amount", "memo"], limit)
        assert len(text) <= limit, (limit, text)
