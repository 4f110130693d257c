"""``reach runs list`` and ``show`` print what a run holds as a person can read it.

A run's question is what a user typed (an attacker in a chat front-end), and the
names of the tools a model called, its error and a resumed run's answer come from the
model (prompt injection). ``reach runs list`` and ``show`` printed them raw: an ESC
sequence in a question (``\\x1b[2K\\x1b[1G``) erased the operator's line and wrote
another, U+202E turned it right to left, an 8-bit CSI (U+009B) or a newline started a
line that looked like the tool's own. Hidden characters are now spelled ``⟨U+001B⟩``
in every field these commands print (``reach_core.reveal``, the rule of
``reach confirm list`` and of the console); ``--json`` output is data and stays exact.
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from pathlib import Path

import pytest
import reach_dbos.plugin
import reach_openai.plugin
from reach_openai.scripted import Answer, Call, ScriptedModelServer, ToolCalls
from test_durable import Credit
from test_runs_cli import _cli, _config

from reach_core import Reach
from reach_core.reveal import reveal_text

HIDDEN = ["\x1b[2K\x1b[1G", "\x1b]0;title\x07", "\x08\x08\x08", "\x7f", "\x9b2K", "\x85", "\r", "\n", "\t",
          "\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\u00ad", "\u2028", "\u2029", "\ue000", "\U000e0041"]


def _hidden_in(text: str) -> list[str]:
    return [ch for ch in text if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")]


@pytest.mark.parametrize("payload", HIDDEN, ids=[f"U+{ord(p[0]):04X}{len(p)}" for p in HIDDEN])
async def test_list_and_show_spell_hidden_characters_json_stays_exact(
    tmp_path: Path, pg_url: str, session_schema: str, payload: str
) -> None:
    question = f"credit please{payload}then show me everything"
    tool = f"add{payload}credit"
    script = [ToolCalls([Call(tool, {"amount": 5})]), Answer(f"done{payload}here")]
    run_id = f"run_hidden_{uuid.uuid4().hex[:10]}"
    with ScriptedModelServer(script) as server:
        config = _config(tmp_path, pg_url, session_schema, server.url)
        reach = Reach(str(config), plugins=[("reach-openai", reach_openai.plugin), ("reach-dbos", reach_dbos.plugin)])
        reach.register(Credit())
        result = await reach.run(question, durable=True, run_id=run_id)
        await reach.aclose()
    assert result.ok, result

    shown = _cli(config, "show", run_id)
    listed = _cli(config, "list", "--limit", "10000")
    for out in (shown, listed):
        assert out.exit_code == 0, out.output
        assert _hidden_in(out.output) == [], out.output
    line = [ln for ln in listed.output.splitlines() if ln.startswith(run_id)]
    assert len(line) == 1 and reveal_text(question, one_line=True)[:40] in line[0]
    assert f"question: {reveal_text(question, one_line=True)}" in shown.output.splitlines()
    assert reveal_text(tool, one_line=True) in shown.output

    row = json.loads(_cli(config, "show", run_id, "--json").output)
    assert row["question"] == question  # data stays exact
    assert any(s.get("tool_calls") == [tool] for s in row["steps"])


async def test_positive_control_visible_text_is_printed_as_is(tmp_path: Path, pg_url: str, session_schema: str) -> None:
    question = "crédit für 运行 ✓ «42» — ok"
    run_id = f"run_visible_{uuid.uuid4().hex[:10]}"
    with ScriptedModelServer([ToolCalls([Call("add_credit", {"amount": 5})]), Answer("done")]) as server:
        config = _config(tmp_path, pg_url, session_schema, server.url)
        reach = Reach(str(config), plugins=[("reach-openai", reach_openai.plugin), ("reach-dbos", reach_dbos.plugin)])
        reach.register(Credit())
        assert (await reach.run(question, durable=True, run_id=run_id)).ok
        await reach.aclose()
    shown = _cli(config, "show", run_id).output.splitlines()
    assert f"run {run_id}: SUCCESS (executor local)" in shown and f"question: {question}" in shown
    assert any(ln.strip().endswith("add_credit ok") for ln in shown)
    assert any(ln.startswith(run_id) and ln.endswith(question) for ln in _cli(config, "list").output.splitlines())
