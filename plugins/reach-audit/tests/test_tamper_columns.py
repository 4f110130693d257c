"""Tamper evidence over every column of a row: an edit of any one column of any row
(first, middle, last), a deleted, reordered or inserted row is named by ``verify``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import reach_audit

COLUMNS = ("seq", "ts", "kind", "agent", "tool", "status", "elapsed_ms", "run_id", "call_id", "record", "hash")

# (column, SET clause): each changes exactly one column of one row
EDITS = [
    ("seq", "seq = seq + 1000"),
    ("seq", "seq = -seq"),
    ("seq", "seq = seq + 100000000"),
    ("ts", "ts = ts + 3600"),
    ("ts", "ts = ts - 86400 * 365"),
    ("ts", "ts = ts + 0.0000003"),  # one float step: still the same microsecond
    ("ts", "ts = ts - 0.0000004"),
    ("ts", "ts = CAST(ts AS INTEGER)"),
    ("ts", "ts = 'yesterday'"),
    ("kind", "kind = 'step'"),
    ("kind", "kind = 'CALL'"),
    ("agent", "agent = 'default'"),
    ("agent", "agent = 'Mallory'"),
    ("agent", "agent = NULL"),
    ("agent", "agent = ' mallory'"),
    ("agent", "agent = 'mallory' || char(0)"),
    ("tool", "tool = 'other'"),
    ("tool", "tool = NULL"),
    ("tool", "tool = 'add '"),
    ("status", "status = CASE status WHEN 'ok' THEN 'execution_failed' ELSE 'ok' END"),
    ("status", "status = NULL"),
    ("elapsed_ms", "elapsed_ms = elapsed_ms + 1"),
    ("elapsed_ms", "elapsed_ms = elapsed_ms + 0.0001"),
    ("elapsed_ms", "elapsed_ms = NULL"),
    ("elapsed_ms", "elapsed_ms = 'fast'"),
    ("run_id", "run_id = 'another-run'"),
    ("run_id", "run_id = NULL"),
    ("call_id", "call_id = 'c-forged'"),
    ("call_id", "call_id = NULL"),
    ("record", "record = replace(record, '\"agent\":\"mallory\"', '\"agent\":\"default\"')"),
    ("record", "record = record || ' '"),
    ("record", "record = replace(record, '{', '{ ')"),
    ("hash", "hash = upper(hash)"),
    ("hash", "hash = substr(hash, 2) || '0'"),
    ("hash", "hash = '0000000000000000000000000000000000000000000000000000000000000000'"),
]


def test_every_column_has_edits() -> None:
    assert {column for column, _ in EDITS} == set(COLUMNS)


def _attack(path: Path, *statements: str) -> None:
    """What an intruder with file access does: drop the guards, then edit rows."""
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER IF EXISTS audit_log_no_update")
    conn.execute("DROP TRIGGER IF EXISTS audit_log_no_delete")
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


async def _log_of_ten(make_reach: Any) -> Any:
    """Ten records by agent mallory, in one run: ok calls and failures, every column set."""
    reach = make_reach()
    for i in range(10):
        if i % 3 == 2:
            await reach.invoke({"id": f"c{i}", "name": "refuse", "arguments": {"reason": f"r{i}"}},
                               agent="mallory", run_id="run-1")
        else:
            await reach.invoke({"id": f"c{i}", "name": "add", "arguments": {"a": i, "b": 1}},
                               agent="mallory", run_id="run-1")
    await reach_audit.flush(reach)
    report = await reach_audit.verify(reach)
    assert report.ok and report.checked == 10
    return reach


@pytest.mark.parametrize("where", [1, 5, 10])
@pytest.mark.parametrize(("column", "change"), EDITS, ids=[f"{c}:{s[:40]}" for c, s in EDITS])
async def test_an_edit_of_any_column_of_any_row_is_caught(make_reach, data_dir, column, change, where):
    reach = await _log_of_ten(make_reach)
    db = data_dir / "reach.db"
    before = sqlite3.connect(db).execute(f"SELECT {column} FROM audit_log WHERE seq = ?", (where,)).fetchone()
    _attack(db, f"UPDATE audit_log SET {change} WHERE seq = {where}")
    conn = sqlite3.connect(db)
    changed = conn.execute(f"SELECT count(*) FROM audit_log WHERE seq = {where}").fetchone()[0] == 0 or (
        conn.execute(f"SELECT {column} FROM audit_log WHERE seq = ?", (where,)).fetchone() != before)
    conn.close()
    assert changed, "the edit must change the row (else this variant tests nothing)"
    report = await reach_audit.verify(reach)
    assert not report.ok, f"{change} on row {where} went unnoticed"
    assert report.broken_at is not None and report.reason


async def test_mallory_renamed_to_default_is_caught(make_reach, data_dir):
    """The issue's case: the agent column changed from mallory to default."""
    reach = await _log_of_ten(make_reach)
    _attack(data_dir / "reach.db", "UPDATE audit_log SET agent = 'default' WHERE seq = 4")
    report = await reach_audit.verify(reach)
    assert (report.ok, report.broken_at) == (False, 4)
    assert "agent" in report.reason


DELETES = [
    ("first", "DELETE FROM audit_log WHERE seq = 1", 2),
    ("middle", "DELETE FROM audit_log WHERE seq = 5", 6),
    ("two", "DELETE FROM audit_log WHERE seq IN (3, 4)", 5),
    ("all but last", "DELETE FROM audit_log WHERE seq < 10", 10),
]


@pytest.mark.parametrize(("label", "sql", "broken"), DELETES, ids=[d[0] for d in DELETES])
async def test_a_deleted_row_is_caught(make_reach, data_dir, label, sql, broken):
    reach = await _log_of_ten(make_reach)
    _attack(data_dir / "reach.db", sql)
    report = await reach_audit.verify(reach)
    assert (report.ok, report.broken_at) == (False, broken)


async def test_cutting_the_tail_changes_the_head_to_anchor(make_reach, data_dir):
    """Rows cut off the end leave a valid shorter chain: only the anchored head tells."""
    reach = await _log_of_ten(make_reach)
    anchored = (await reach_audit.verify(reach)).head
    _attack(data_dir / "reach.db", "DELETE FROM audit_log WHERE seq = 10")
    report = await reach_audit.verify(reach)
    assert report.head != anchored and report.checked == 9


REORDERS = [
    ("swap contents 3,4", [
        "CREATE TEMP TABLE t AS SELECT * FROM audit_log WHERE seq IN (3, 4)",
        "UPDATE audit_log SET ts = (SELECT ts FROM t WHERE seq = 4), kind = (SELECT kind FROM t WHERE seq = 4),"
        " agent = (SELECT agent FROM t WHERE seq = 4), tool = (SELECT tool FROM t WHERE seq = 4),"
        " status = (SELECT status FROM t WHERE seq = 4), elapsed_ms = (SELECT elapsed_ms FROM t WHERE seq = 4),"
        " run_id = (SELECT run_id FROM t WHERE seq = 4), call_id = (SELECT call_id FROM t WHERE seq = 4),"
        " record = (SELECT record FROM t WHERE seq = 4), hash = (SELECT hash FROM t WHERE seq = 4) WHERE seq = 3",
        "UPDATE audit_log SET ts = (SELECT ts FROM t WHERE seq = 3), kind = (SELECT kind FROM t WHERE seq = 3),"
        " agent = (SELECT agent FROM t WHERE seq = 3), tool = (SELECT tool FROM t WHERE seq = 3),"
        " status = (SELECT status FROM t WHERE seq = 3), elapsed_ms = (SELECT elapsed_ms FROM t WHERE seq = 3),"
        " run_id = (SELECT run_id FROM t WHERE seq = 3), call_id = (SELECT call_id FROM t WHERE seq = 3),"
        " record = (SELECT record FROM t WHERE seq = 3), hash = (SELECT hash FROM t WHERE seq = 3) WHERE seq = 4",
    ]),
    ("swap seq 3,4", ["UPDATE audit_log SET seq = 100 WHERE seq = 3", "UPDATE audit_log SET seq = 3 WHERE seq = 4",
                      "UPDATE audit_log SET seq = 4 WHERE seq = 100"]),
    ("first to end", ["UPDATE audit_log SET seq = 11 WHERE seq = 1"]),
    ("last to front", ["UPDATE audit_log SET seq = 0 WHERE seq = 10"]),
    ("renumber all", ["UPDATE audit_log SET seq = seq + 100"]),
    ("last renumbered", ["UPDATE audit_log SET seq = 50 WHERE seq = 10"]),
    ("reverse", ["UPDATE audit_log SET seq = 100 - seq"]),
]


@pytest.mark.parametrize(("label", "sql"), REORDERS, ids=[r[0] for r in REORDERS])
async def test_reordered_rows_are_caught(make_reach, data_dir, label, sql):
    reach = await _log_of_ten(make_reach)
    _attack(data_dir / "reach.db", *sql)
    report = await reach_audit.verify(reach)
    assert not report.ok, label


def _copy_row(seq_from: int, seq_to: int) -> str:
    cols = "ts, kind, agent, tool, status, elapsed_ms, run_id, call_id, record, hash"
    return f"INSERT INTO audit_log (seq, {cols}) SELECT {seq_to}, {cols} FROM audit_log WHERE seq = {seq_from}"


INSERTS = [
    ("replay last at end", [_copy_row(10, 11)]),
    ("replay middle at end", [_copy_row(5, 11)]),
    ("copy before first", [_copy_row(1, 0)]),
    ("forged at end", ["INSERT INTO audit_log (seq, ts, kind, agent, tool, status, record, hash) VALUES "
                       "(11, 1.0, 'call', 'mallory', 'add', 'ok', '{\"kind\":\"call\"}', 'ab')"]),
    ("copy in the middle", ["UPDATE audit_log SET seq = seq + 100 WHERE seq >= 6",
                            "UPDATE audit_log SET seq = seq - 99 WHERE seq >= 100",
                            _copy_row(5, 6)]),
]


@pytest.mark.parametrize(("label", "sql"), INSERTS, ids=[i[0] for i in INSERTS])
async def test_inserted_rows_are_caught(make_reach, data_dir, label, sql):
    reach = await _log_of_ten(make_reach)
    _attack(data_dir / "reach.db", *sql)
    report = await reach_audit.verify(reach)
    assert not report.ok, label


async def test_a_chain_written_by_two_reaches_in_turn_still_verifies(make_reach, data_dir):
    """seq is hashed: a second writer on the same database continues the numbering."""
    one = make_reach()
    await one.invoke("add", {"a": 1, "b": 2})
    await reach_audit.flush(one)
    two = make_reach()
    await two.invoke("add", {"a": 3, "b": 4})
    await reach_audit.flush(two)
    await one.invoke("add", {"a": 5, "b": 6})  # its writer's head is stale now: re-chained
    await reach_audit.flush(one)
    report = await reach_audit.verify(one)
    assert report.ok and report.checked == 3
