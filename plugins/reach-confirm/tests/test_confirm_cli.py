"""``reach confirm`` as a person uses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_cli_list_show_approve(tmp_path):
    (tmp_path / "reach.toml").write_text('[reach]\ndata_dir = "state"\n[plugins]\nload = ["reach-confirm"]\n')
    env = {**os.environ, "PYTHONPATH": os.path.dirname(__file__)}
    setup = """
import asyncio, json
from test_confirm import _reach, _ask
from pathlib import Path
async def main():
    r = _reach(Path('state'))
    res = await _ask(r)
    print(res.meta['confirmation_id'])
    await r.aclose()
asyncio.run(main())
"""
    cid = subprocess.run([sys.executable, "-c", setup], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    run = lambda *a: subprocess.run([sys.executable, "-m", "reach_core.cli", *a], cwd=tmp_path, env=env,  # noqa: E731
                                    capture_output=True, text=True, timeout=60)
    listed = json.loads(run("confirm", "list", "--json").stdout)
    assert [c["id"] for c in listed] == [cid] and listed[0]["summary"] == "send 10 EUR to alice"
    shown = run("confirm", "show", cid)
    assert '"amount": 10' in shown.stdout
    bad = run("confirm", "approve", "cf_nope")
    assert bad.returncode != 0 and "no confirmation request" in bad.stderr


HIDDEN_IN_CLI = ["\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\U000e0041", "\ufe0f\ufe0f", "\x1b[2K", "\x9b",
                 "\x85", "\u2028", "\ue000", "\u00ad"]


def test_cli_shows_hidden_characters_as_the_console_does(tmp_path, monkeypatch):
    """``reach confirm list`` and ``show`` spell every hidden character ``⟨U+XXXX⟩`` (the
    console's marking, reach_core.reveal), in the summary and the arguments; nothing hidden
    reaches the terminal. (In-process: the commands are the same, without interpreter starts.)"""
    import asyncio

    from click.testing import CliRunner
    from test_confirm import _ask, _reach

    from reach_core.cli import cli
    from reach_core.reveal import hidden, reveal_text

    monkeypatch.chdir(tmp_path)
    (tmp_path / "reach.toml").write_text('[reach]\ndata_dir = "state"\n[plugins]\nload = ["reach-confirm"]\n')

    async def ask_all() -> list[str]:
        r = _reach(tmp_path / "state")
        ids = [(await _ask(r, amount=10 + i, to=f"mallory{p}alice")).meta["confirmation_id"]
               for i, p in enumerate(HIDDEN_IN_CLI)]
        await r.aclose()
        return ids

    ids = asyncio.run(ask_all())
    run = CliRunner().invoke
    listed = run(cli, ["--config", "reach.toml", "confirm", "list"]).output
    shown = run(cli, ["--config", "reach.toml", "confirm", "show", ids[0]]).output
    assert ids[0] in listed and "mallory" in shown, (listed, shown)
    for out in (listed, shown):
        assert [ch for ch in out if ch != "\n" and hidden(ch)] == [], repr(out)
    for payload in HIDDEN_IN_CLI:
        # SendMoney's own summary, whose whitespace (NEL, U+2028 too) is collapsed to one space
        marked = reveal_text(" ".join(f"mallory{payload}alice".split()), one_line=True)
        assert marked in listed, (payload, marked)
    assert shown.count(reveal_text("mallory\u202ealice")) == 2  # the summary and the arguments
    assert len(listed.strip().splitlines()) == len(HIDDEN_IN_CLI)  # a separator does not start a line
