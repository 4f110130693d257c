"""``reach run QUESTION --durable``: the CLI's run is a durable run, in a real process that then exits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from reach_openai.scripted import Answer, Call, ScriptedModelServer, ToolCalls


def test_reach_run_durable_checkpoints_the_run_and_the_process_exits(
    tmp_path: Path, pg_url: str, dbos_schema: str
) -> None:
    script = [ToolCalls([Call("append_note", {"content": "durable note"})]), Answer("saved {append_note[id]}")]
    with ScriptedModelServer(script) as server:
        config = tmp_path / "reach.toml"
        config.write_text(
            f'[reach]\ndata_dir = "{tmp_path / "data"}"\n'
            f'[plugins]\nload = ["reach-openai", "reach-dbos", "reach-notes"]\n'
            f'[plugins.reach-openai]\nbase_url = "{server.url}"\napi_key = "k"\nmodel = "m"\nmax_retries = 0\n'
            f'[plugins.reach-dbos]\ndatabase_url = "{pg_url}"\nschema = "{dbos_schema}"\n'
            f'[plugins.reach-notes]\npath = "{tmp_path / "notes.jsonl"}"\n'
        )
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "reach_core.cli", "--config", str(config)]
        done = subprocess.run([*cmd, "run", "note it", "--durable", "--run-id", "run_cli_durable", "--json"],
                              capture_output=True, env=env, timeout=180)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        result = json.loads(done.stdout)
        assert result["outcome"] == "answered" and result["run_id"] == "run_cli_durable"
        shown = subprocess.run([*cmd, "runs", "show", "run_cli_durable", "--json"], capture_output=True, env=env,
                               timeout=180)
        assert shown.returncode == 0, shown.stderr.decode()[-3000:]
        row = json.loads(shown.stdout)
        assert row["status"] == "SUCCESS" and [s["kind"] for s in row["steps"]] == [
            "reach.model", "reach.tools", "reach.model"]
        assert row["tokens"] == result["usage"]
    assert len((tmp_path / "notes.jsonl").read_text().splitlines()) == 1
