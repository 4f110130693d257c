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
