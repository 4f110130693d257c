"""Tamper evidence: the hash chain and the append-only table."""

from __future__ import annotations

import json
import sqlite3

import pytest
import reach_audit
from reach_audit.chain import GENESIS, canonical_json, link_hash


async def _ten_calls(reach) -> None:
    for i in range(10):
        await reach.invoke({"id": f"c{i}", "name": "add", "arguments": {"a": i, "b": 1}})
    await reach_audit.flush(reach)


def _attack(path, *statements: str) -> None:
    """What an intruder with file access does: drop the guards, then edit rows."""
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER audit_log_no_update")
    conn.execute("DROP TRIGGER audit_log_no_delete")
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


async def test_each_hash_links_to_the_previous_record(make_reach, db_rows):
    reach = make_reach()
    await _ten_calls(reach)
    prev = GENESIS
    for _seq, record, stored in db_rows():
        assert record == canonical_json(json.loads(record))
        prev = link_hash(prev, record)
        assert stored == prev
    report = await reach_audit.verify(reach)
    assert report.ok and report.checked == 10 and report.head == prev


async def test_the_table_refuses_updates_and_deletes(make_reach, data_dir):
    reach = make_reach()
    await _ten_calls(reach)
    conn = sqlite3.connect(data_dir / "reach.db")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE audit_log SET status = 'ok' WHERE seq = 1")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM audit_log WHERE seq = 1")
    conn.close()


async def test_an_edited_record_is_the_first_broken_link(make_reach, data_dir):
    reach = make_reach()
    await _ten_calls(reach)
    _attack(
        data_dir / "reach.db",
        "UPDATE audit_log SET record = replace(record, '\"result\":5', '\"result\":6') WHERE seq = 5",
    )
    report = await reach_audit.verify(reach)
    assert not report.ok
    assert report.broken_at == 5 and report.checked == 4
    assert "hash mismatch" in report.reason


async def test_a_deleted_record_breaks_the_next_link(make_reach, data_dir):
    reach = make_reach()
    await _ten_calls(reach)
    _attack(data_dir / "reach.db", "DELETE FROM audit_log WHERE seq = 3")
    report = await reach_audit.verify(reach)
    assert (report.ok, report.broken_at) == (False, 4)


async def test_an_edited_index_column_is_caught(make_reach, data_dir):
    reach = make_reach()
    await _ten_calls(reach)
    _attack(data_dir / "reach.db", "UPDATE audit_log SET status = 'ok', tool = 'other' WHERE seq = 7")
    report = await reach_audit.verify(reach)
    assert report.broken_at == 7 and "column" in report.reason


async def test_a_rewritten_chain_from_the_edit_on_is_still_caught_by_the_anchor(make_reach, data_dir):
    """Re-hashing everything after an edit passes verify; the anchored head hash does not match."""
    reach = make_reach()
    await _ten_calls(reach)
    anchored = (await reach_audit.verify(reach)).head
    conn = sqlite3.connect(data_dir / "reach.db")
    conn.execute("DROP TRIGGER audit_log_no_update")
    rows = conn.execute("SELECT seq, record FROM audit_log ORDER BY seq").fetchall()
    prev = GENESIS
    for seq, record in rows:
        if seq == 2:
            record = record.replace('"result":2', '"result":99')
        prev = link_hash(prev, record)
        conn.execute("UPDATE audit_log SET record = ?, hash = ? WHERE seq = ?", (record, prev, seq))
    conn.commit()
    conn.close()
    report = await reach_audit.verify(reach)
    assert report.ok and report.head != anchored
