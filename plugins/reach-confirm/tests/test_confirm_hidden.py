"""The summary a person approves shows every character of the arguments.

``reach confirm list`` printed the summary raw: an argument holding ESC sequences
(``\\x1b[2K\\x1b[1G``) erased the line and wrote another in its place ("send 10 EUR
to alice" over a transfer to someone else), U+202E turned the rest of the line
right to left, zero-width characters hid text. The person approved what the
terminal showed, not what would run. Hidden characters (control, format,
private-use, surrogate, line/paragraph separators) are now spelled ``⟨U+202E⟩`` in
the summary, the console's marking (reach_core.reveal), and so in the
``needs_confirmation`` message and notifications;
the arguments that run are unchanged.
"""

from __future__ import annotations

import json
import unicodedata

import pytest
import reach_confirm.plugin as confirm_plugin
from reach_confirm.plugin import queue_for
from test_confirm import SENT, SendMoney, Tools

from reach_core import Connector, hookimpl
from reach_core.reveal import reveal_text
from reach_core.testing import make_reach

HIDDEN = ["\x1b[2K\x1b[1G", "\x1b]0;title\x07", "\x08\x08\x08", "\x7f", "\x9b2K", "\x00", "\u202e", "\u202d",
          "\u2066", "\u2067", "\u2068", "\u2069", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\ufeff",
          "\u00ad", "\u2060", "\ue000", "\U000e0041", "\u061c", "\u180e"]


class Wipe(Connector):
    """No summarize of its own: the default summary (name + arguments)."""

    name = "wipe"
    description = "Wipe a target. Use when the user asks to delete something for good."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {"target": {"type": "string", "description": "what"}},
                    "required": ["target"]}

    async def execute(self, params, ctx):
        SENT.append(dict(params))
        return "wiped"


class MoreTools(Tools):
    REACH_PLUGIN_NAME = "bank-and-wipe"

    @hookimpl
    def reach_register_tools(self, register):
        register(SendMoney())
        register(Wipe())


@pytest.fixture(autouse=True)
def _clear():
    SENT.clear()


def _reach(tmp_path):
    return make_reach(("reach-confirm", confirm_plugin), MoreTools(),
                      config={"plugins": {"reach-confirm": {"ttl_seconds": 60, "summary_chars": 400}}},
                      data_dir=tmp_path)


def _hidden_in(text: str) -> list[str]:
    return [ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")]


def _args(tool: str, payload: str) -> dict:
    if tool == "send_money":
        return {"to": f"mallory{payload}send 10 EUR to alice", "amount": 9000}
    return {"target": f"/srv/prod{payload}/tmp/cache"}


@pytest.mark.parametrize("tool", ["send_money", "wipe"])
@pytest.mark.parametrize("payload", HIDDEN)
async def test_hidden_characters_are_shown_as_escapes(tmp_path, tool: str, payload: str) -> None:
    if "\x00" in payload and tool == "send_money":
        payload = payload.replace("\x00", "\x01")
    reach = _reach(tmp_path)
    args = _args(tool, payload)
    res = await reach.invoke({"id": "c1", "name": tool, "arguments": json.dumps(args)})
    assert res.error.code == "needs_confirmation"
    c = (await queue_for(reach).list())[0]
    assert _hidden_in(c.summary) == [], repr(c.summary)
    assert _hidden_in(res.error.message) == [], repr(res.error.message)
    # a marker shows where it was: ⟨U+202E⟩ (the console's too), or JSON's own escape for a C0
    # control (\u001b, \b for a backspace), which the console shows the same way
    value = args["to" if tool == "send_money" else "target"]
    shown = json.dumps(value, ensure_ascii=False) if tool == "wipe" else " ".join(value.split())
    assert reveal_text(shown) in c.summary
    assert any(e in c.summary for e in ("⟨U+", "\\u00", "\\b", "\\f", "\\n", "\\r", "\\t"))
    assert c.arguments == args  # what runs is what was asked, unchanged
    result = await queue_for(reach).approve(c.id, by="person:ann")
    assert result.ok and len(SENT) == 1
    assert SENT[0]["to" if tool == "send_money" else "target"] == args["to" if tool == "send_money" else "target"]


@pytest.mark.parametrize("text", ["Zoë", "北京", "Łódź", "💶 100", "naïve café", "ελληνικά", "עברית", "العربية"])
async def test_visible_text_is_kept(tmp_path, text: str) -> None:
    reach = _reach(tmp_path)
    res = await reach.invoke({"id": "c1", "name": "wipe", "arguments": {"target": text}})
    assert res.error.code == "needs_confirmation"
    assert (await queue_for(reach).list())[0].summary == f'wipe: target="{text}"'  # quoted as JSON


@pytest.mark.parametrize("tool", ["send_money", "wipe"])
@pytest.mark.parametrize("hidden_run", ["\u202e", "\u200b\u200b", "\U000e0041", "\u202e" * 12])
async def test_a_cut_summary_never_ends_inside_a_marker(tmp_path, tool: str, hidden_run: str) -> None:
    """Wherever the summary is cut, a marker is whole or left out: ``⟨U+20…`` names nothing."""
    reach = _reach(tmp_path)
    q = queue_for(reach)
    for pad in range(370, 420):
        args = _args(tool, "x" * pad + hidden_run * 3)
        res = await reach.invoke({"id": f"c{pad}", "name": tool, "arguments": json.dumps(args)})
        assert res.error.code == "needs_confirmation"
    summaries = [c.summary for c in await q.list()]
    assert len(summaries) == 50
    for summary in summaries:
        assert len(summary) <= 400
        assert summary.count("⟨") == summary.count("⟩"), summary[-40:]
