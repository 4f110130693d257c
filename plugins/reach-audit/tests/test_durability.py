"""Nothing acknowledged is lost on kill -9, and the log stays intact."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from reach_audit.query import verify_sync
from reach_audit.storage import LocalStore

SCRIPT = Path(__file__).parent / "scripts" / "audit_stream.py"


def _start(data_dir: Path, mode: str, tag: str = "k") -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(data_dir), mode, tag],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def _run_and_kill(data_dir: Path, mode: str, want: int, proc: subprocess.Popen | None = None) -> set[str]:
    proc = proc or _start(data_dir, mode)
    acked: set[str] = set()
    deadline = time.monotonic() + 40
    try:
        assert proc.stdout is not None
        while len(acked) < want:
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"the writer died early: {proc.stderr.read() if proc.stderr else ''}")
            acked.update(line.split())
            assert time.monotonic() < deadline, "too slow to acknowledge records"
        proc.send_signal(signal.SIGKILL)  # mid-stream: calls are still running
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return acked


def _check(data_dir: Path, acked: set[str]) -> int:
    db = data_dir / "reach.db"
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {row[0] for row in conn.execute("SELECT call_id FROM audit_log")}
    finally:
        conn.close()
    missing = acked - stored
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    store = LocalStore(db)
    try:
        report = verify_sync(store)
    finally:
        store.close()
    assert report.ok, report
    return report.checked


@pytest.mark.parametrize("mode", ["batched", "sync"])
def test_kill_9_loses_nothing_acknowledged(tmp_path, mode):
    data_dir = tmp_path / "data"
    acked = _run_and_kill(data_dir, mode, want=300)
    checked = _check(data_dir, acked)
    assert checked >= len(acked)


def test_two_processes_share_one_linear_chain(tmp_path):
    """A CLI next to a server: both append to one log; the chain stays linear."""
    data_dir = tmp_path / "data"
    first = _start(data_dir, "batched", "p")
    second = _start(data_dir, "batched", "q")
    acked = _run_and_kill(data_dir, "batched", 150, first) | _run_and_kill(data_dir, "batched", 150, second)
    checked = _check(data_dir, acked)
    assert checked >= 300 and any(a.startswith("p") for a in acked) and any(a.startswith("q") for a in acked)


def test_a_script_that_never_closes_still_leaves_its_records(tmp_path):
    data_dir = tmp_path / "data"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    subprocess.run([sys.executable, str(SCRIPT.parent / "forget_close.py"), str(data_dir), "40"],
                   check=True, env=env, timeout=60)
    conn = sqlite3.connect(data_dir / "reach.db")
    ids = [row[0] for row in conn.execute("SELECT call_id FROM audit_log ORDER BY seq")]
    conn.close()
    assert sorted(ids) == sorted([f"f{i}" for i in range(40)] + [f"f{i}" for i in range(20)])
    assert len(ids) == 60  # each record once, even though the first loop died mid-stream


def test_a_batch_whose_commit_was_not_acknowledged_is_not_written_twice(tmp_path):
    from reach_audit.record import Captured, build_row
    from reach_audit.redact import Redactor
    from reach_audit.storage import append_rows, create_schema

    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    create_schema(conn)
    rows = [build_row(Captured("step", 1.0 + i, None, "r", None, "a", None, step={"index": i}), Redactor(), 64)
            for i in range(3)]
    conn.execute("BEGIN")
    append_rows(conn, rows)
    conn.execute("ROLLBACK")  # the first attempt failed: nothing landed
    conn.execute("BEGIN")
    assert append_rows(conn, rows)[0] == 3
    conn.execute("COMMIT")  # ... the second landed, but say its caller never heard back
    conn.execute("BEGIN")
    assert append_rows(conn, rows)[0] == 0  # the retry sees them and adds nothing
    conn.execute("COMMIT")
    assert conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0] == 3
