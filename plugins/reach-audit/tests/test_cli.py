"""``reach audit tail | stats | export | verify`` through the real ``reach`` CLI."""

from __future__ import annotations

import csv
import io
import json
import os
import queue
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import reach_audit
from click.testing import CliRunner

from reach_core.cli import cli


@pytest.fixture
def config_file(tmp_path: Path, data_dir: Path) -> Path:
    path = tmp_path / "reach.toml"
    path.write_text(
        f'[reach]\ndata_dir = "{data_dir.as_posix()}"\n\n[plugins]\nload = ["reach-audit"]\n'
        '\n[plugins.reach-audit]\nlog = "off"\n',
        encoding="utf-8",
    )
    return path


@pytest.fixture
async def filled(make_reach):
    """A log with 5 calls by two agents and one failure."""
    reach = make_reach()
    for i in range(3):
        await reach.invoke({"id": f"a{i}", "name": "add", "arguments": {"a": i, "b": 1}}, agent="alpha")
    await reach.invoke({"id": "r1", "name": "refuse", "arguments": {"reason": "x"}}, agent="beta")
    await reach.invoke({"id": "l1", "name": "login", "arguments": {"user": "u", "password": "pw-123456"}}, agent="beta")
    await reach_audit.flush(reach)
    return reach


def run(config_file: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--config", str(config_file), "audit", *args], catch_exceptions=False)
    return result.exit_code, result.stdout if result.exit_code != 2 else result.output


async def test_tail_json_filters_and_orders(filled, config_file):
    code, out = run(config_file, "tail", "--json")
    assert code == 0
    recs = [json.loads(line) for line in out.splitlines()]
    assert [r["call_id"] for r in recs] == ["a0", "a1", "a2", "r1", "l1"]
    assert all(r["hash"] and r["seq"] for r in recs)
    assert recs[-1]["args"]["password"] == "[REDACTED]"
    _, out = run(config_file, "tail", "--json", "--agent", "beta", "-n", "1")
    assert [json.loads(line)["call_id"] for line in out.splitlines()] == ["l1"]
    _, out = run(config_file, "tail", "--json", "--tool", "add")
    assert len(out.splitlines()) == 3
    _, out = run(config_file, "tail")
    assert "execution_failed" in out and "refuse" in out and "agent=beta" in out


async def test_stats_human_and_json(filled, config_file):
    code, out = run(config_file, "stats", "--since", "1h", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["calls"] == 5 and data["tools"]["add"]["success_rate"] == 1.0
    assert data["agents"]["beta"]["errors"] == {"execution_failed": 1}
    code, out = run(config_file, "stats")
    assert code == 0 and "5 calls" in out and "refuse" in out
    code, out = run(config_file, "stats", "--since", "someday")
    assert code == 2 and "must look like" in out


async def test_export_jsonl_and_csv(filled, config_file, tmp_path):
    code, out = run(config_file, "export", "--format", "jsonl")
    assert code == 0 and len(out.splitlines()) == 5
    target = tmp_path / "audit.csv"
    code, _ = run(config_file, "export", "--format", "csv", "-o", str(target))
    rows = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
    assert code == 0 and [r["call_id"] for r in rows] == ["a0", "a1", "a2", "r1", "l1"]
    assert rows[3]["status"] == "execution_failed" and json.loads(rows[0]["args"]) == {"a": 0, "b": 1}


async def test_verify_reports_the_first_broken_link(filled, config_file, data_dir):
    code, out = run(config_file, "verify")
    assert code == 0 and out.startswith("ok: 5 records")
    conn = sqlite3.connect(data_dir / "reach.db")
    conn.execute("DROP TRIGGER audit_log_no_update")
    conn.execute("UPDATE audit_log SET record = replace(record, 'alpha', 'gamma') WHERE seq = 2")
    conn.commit()
    conn.close()
    code, out = run(config_file, "verify")
    assert code == 1 and "BROKEN at record #2" in out
    code, out = run(config_file, "verify", "--json")
    assert json.loads(out)["broken_at"] == 2


def _write_calls(data_dir: Path, *ids: str) -> None:
    """Another process's view: a Reach that makes calls and acknowledges them."""
    import asyncio

    import reach_audit.plugin as audit_plugin

    from reach_core import Reach, connector

    @connector(risk="read")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def go() -> None:
        reach = Reach({"reach": {"data_dir": str(data_dir)}, "plugins": {"reach-audit": {"log": "off"}}},
                      plugins=[audit_plugin])
        reach.register(add)
        for call_id in ids:
            await reach.invoke({"id": call_id, "name": "add", "arguments": {"a": 1, "b": 1}})
        await reach.aclose()

    asyncio.run(go())


def test_tail_follow_prints_new_records(config_file, data_dir):
    _write_calls(data_dir, "first")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen(
        [sys.executable, "-c", "from reach_core.cli import main; main()", "--config", str(config_file),
         "audit", "tail", "--follow", "--json", "--interval", "0.05"],
        stdout=subprocess.PIPE, text=True, env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def next_record() -> dict:
        # a follower that died or went quiet fails the test in 30 s instead of hanging the suite
        try:
            return json.loads(lines.get(timeout=30))
        except queue.Empty:
            raise AssertionError(f"`audit tail --follow` printed nothing in 30 s (exit code {proc.poll()})") from None

    try:
        assert next_record()["call_id"] == "first"
        _write_calls(data_dir, "second", "third")
        assert next_record()["call_id"] == "second"
        assert next_record()["call_id"] == "third"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("filters", [[], ["--agent", "nobody"], ["--tool", "nothing"], ["--kind", "step"]])
async def test_tail_says_when_there_is_nothing(filled, config_file, filters):
    code, out = run(config_file, "tail", *filters)
    if not filters:
        assert code == 0 and out.strip().count("\n") >= 4  # the filled log
        return
    assert code == 0
    assert out.strip().startswith("no audit records matching ")
    assert filters[1] in out
    code, out = run(config_file, "tail", "--json", *filters)
    assert code == 0 and out == ""  # JSON lines: nothing is nothing


def test_tail_of_an_empty_log_says_so(config_file):
    code, out = run(config_file, "tail")
    assert code == 0 and out.strip() == "no audit records yet"
