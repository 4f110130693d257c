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


def _run_and_kill(data_dir: Path, mode: str, want: int) -> set[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(data_dir), mode],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
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
    acked = _run_and_kill(data_dir, mode, want=600)
    checked = _check(data_dir, acked)
    assert checked >= len(acked)
