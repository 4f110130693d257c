"""A durable run id holds only characters a person can see.

The run id names the run in DBOS, in ``reach runs list`` and in the logs, and is the
first part of every idempotency key of the run's writes (``<run id>:<call id>``). The
ledger refuses a key holding a character a person cannot see (``checked_key``:
``str.isprintable``), so that no key can forge or hide a log line; but a run's keys are
derived, not checked, and ``reach.run(durable=True, run_id=...)`` refused only C0 controls
and DEL (its own rule said "no control characters" and missed the C1 ones: U+0085 NEL,
U+009B CSI). A run id holding them, U+202E, U+200B or U+2028 started, ran its writes under
keys holding them, and ``run_a`` and ``run_a`` + U+200B were two runs an operator could not
tell apart when cancelling or resuming one by the id read off the screen. Such an id is now
refused at once, before anything runs, by the ledger's rule for keys.
"""

from __future__ import annotations

import uuid

import pytest
from test_durable import make, server  # noqa: F401 - the fixtures of the in-process durable runs

HIDDEN = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\u2066", "\u061c",
          "\u00a0", "\u2007", "\u202f", "\u3000", "\u1680", "\u2028", "\u2029", "\ue000", "\U000f0000",
          "\U000e0041", "\u0378", "\x85", "\x9b"]


@pytest.mark.parametrize("where", ["start", "middle", "end"])
@pytest.mark.parametrize("hidden", HIDDEN, ids=[f"U+{ord(h):04X}" for h in HIDDEN])
async def test_a_run_id_with_a_hidden_character_is_refused_before_anything_runs(make, server, hidden, where):  # noqa: F811
    base = f"run_{uuid.uuid4().hex[:10]}"
    run_id = {"start": hidden + base, "middle": base[:4] + hidden + base[4:], "end": base + hidden}[where]
    reach = make()
    with pytest.raises(ValueError, match="cannot name a durable run"):
        await reach.run("give credit", durable=True, run_id=run_id)
    assert server.requests == []
    assert reach.credit.keys == []
    await reach.aclose()


@pytest.mark.parametrize("run_id", ["run id with spaces", "ран_юникод_运行", "emoji_\U0001f600", "é" * 200])
async def test_positive_control_a_printable_run_id_runs_and_writes_under_its_keys(make, server, run_id):  # noqa: F811
    run_id = f"{run_id}_{uuid.uuid4().hex[:8]}"
    reach = make()
    result = await reach.run("give credit", durable=True, run_id=run_id)
    assert result.ok and result.run_id == run_id, result
    # each write's key names the run (reach_core.guard.ledger.derived_key: agent, run id, call id)
    assert reach.credit.keys and all(f":{len(run_id)}:{run_id}:" in k for k in reach.credit.keys)
    await reach.aclose()
