"""When the writer is woken: by the first record not yet committed (so a quiet period's
record is written within ``flush_interval_ms``) and by each full batch (written at once,
without waiting the interval). The call hook and ``enqueue`` compare the count with one
number the writer keeps (``_kick_at``); these tests hold that number to the rule, for
every batch size and any order of records and commits."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import reach_audit
from reach_audit.audit import get_audit
from reach_audit.redact import Redactor
from reach_audit.writer import AuditWriter

from reach_core import connector


def _rule(n: int, batch: int) -> tuple[bool, bool]:
    """(woken, at once) for the record that makes ``n`` records not yet committed."""
    return n == 1 or n % batch == 0, n >= batch


class _Row:
    seq = None


def _recording(writer: AuditWriter) -> list[tuple[int, bool]]:
    """Replace the writer's wake-up with a record of (records not committed, full)."""
    woken: list[tuple[int, bool]] = []
    writer._kick = lambda *, full: woken.append((writer._enqueued - writer._written, full))  # type: ignore[method-assign]
    return woken


@pytest.mark.parametrize("batch", [1, 2, 3, 7, 64, 1000])
@pytest.mark.parametrize("seed", range(4))
def test_wake_ups_follow_the_rule_whatever_the_order_of_records_and_commits(tmp_path: Path, batch: int,
                                                                           seed: int) -> None:
    rng = random.Random(seed)
    writer = AuditWriter(store=None, redactor=Redactor(), batch_size=batch)  # type: ignore[arg-type]
    woken = _recording(writer)
    expected: list[tuple[int, bool]] = []
    for _ in range(3000):
        if rng.random() < 0.9 or not writer._pending:
            writer.enqueue(("record",))
            n = writer._enqueued - writer._written
            wake, full = _rule(n, batch)
            if wake:
                expected.append((n, full))
        else:  # the writer commits some of the oldest records (at most a batch)
            k = rng.randint(1, min(len(writer._pending), batch))
            writer._committed([_Row() for _ in range(k)], k)  # type: ignore[misc]
    assert woken == expected


@connector(risk="read")
async def double(x: int) -> int:
    """Double an integer. Use for arithmetic."""
    return 2 * x


@pytest.mark.parametrize("batch", [1, 3, 10])
async def test_the_call_hook_wakes_the_writer_by_the_same_rule(make_reach: Any, batch: int) -> None:
    """Calls of an async tool that never waits: nothing runs between them, so every record
    stays pending and only the count decides the wake-ups."""
    reach = make_reach(batch_size=batch)
    reach.register(double)
    audit = get_audit(reach)
    assert audit is not None
    writer = audit.writer
    woken = _recording(writer)
    for i in range(25):
        res = await reach.invoke({"id": f"c{i}", "name": "double", "arguments": {"x": i}})
        assert res.ok
    assert woken == [(n, n >= batch) for n in range(1, 26) if _rule(n, batch)[0]]
    del writer._kick  # the real one again: every record is written, in order
    await reach_audit.flush(reach)
    assert writer.pending == 0 and writer._written == 25
