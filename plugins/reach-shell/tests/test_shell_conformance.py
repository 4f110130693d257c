"""The core's conformance checks and the tool through the real invoke pipeline."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import reach_shell.plugin as shell_plugin
from shell_procs import wait_gone

from reach_core.testing import ConnectorConformance, make_reach


def shell_config(tmp_path: Path, **agent: Any) -> dict[str, Any]:
    (tmp_path / "work").mkdir(exist_ok=True)
    return {
        "plugins": {
            "reach-shell": {
                "root": str(tmp_path / "work"),
                "commands": {"echo": {"description": "print its arguments"}},
            }
        },
        "agents": {"default": agent} if agent else {},
    }


class TestShellConformance(ConnectorConformance):
    plugin = "reach-shell"

    def config(self, tmp_path: Path) -> dict[str, Any]:
        # Running a dangerous tool needs the operator's explicit say-so.
        return {**super().config(tmp_path), **shell_config(tmp_path, auto_tier="dangerous")}

    def example_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [("run_command", {"command": "echo", "args": ["hello; rm -rf /"]})]


async def test_dangerous_by_default_so_the_default_agent_cannot_run_it(tmp_path: Path) -> None:
    reach = make_reach(
        ("reach-shell", shell_plugin), config=shell_config(tmp_path), data_dir=tmp_path / "d"
    )
    result = await reach.invoke("run_command", {"command": "echo", "args": ["hi"]})
    assert not result.ok
    assert result.error.code in ("denied", "needs_confirmation")
    assert reach.get("run_command").risk == "dangerous"


async def test_through_the_pipeline_results_and_refusals_reach_the_model(tmp_path: Path) -> None:
    reach = make_reach(
        ("reach-shell", shell_plugin),
        config=shell_config(tmp_path, auto_tier="dangerous"),
        data_dir=tmp_path / "d",
    )
    ok = await reach.invoke("run_command", {"command": "echo", "args": ["$(id)", "*"]})
    assert ok.ok, ok.error
    assert ok.content == {"exit_code": 0, "stdout": "$(id) *\n", "stderr": ""}
    unknown = await reach.invoke("run_command", {"command": "sh", "args": ["-c", "id"]})
    assert unknown.error.code == "invalid_arguments"
    decl = reach.tools()[0]["function"]
    assert decl["parameters"]["properties"]["command"]["enum"] == ["echo"]
    assert "echo: print its arguments" in decl["description"]


def test_no_commands_no_tool(tmp_path: Path) -> None:
    reach = make_reach(("reach-shell", shell_plugin), config={}, data_dir=tmp_path / "d")
    assert reach.tools() == []


async def test_a_shorter_core_deadline_still_ends_in_our_kill_not_a_bare_timeout(
    tmp_path: Path,
) -> None:
    config = shell_config(tmp_path, auto_tier="dangerous")
    config["plugins"]["reach-shell"]["commands"]["python"] = {"path": sys.executable}
    config["plugins"]["reach-shell"]["timeout"] = 30
    config["connectors"] = {"run_command": {"timeout": 1.5}}
    reach = make_reach(("reach-shell", shell_plugin), config=config, data_dir=tmp_path / "d")
    code = "import subprocess, time\nprint(subprocess.Popen(['sleep', '60']).pid, flush=True)\ntime.sleep(60)"
    started = time.monotonic()
    result = await reach.invoke("run_command", {"command": "python", "args": ["-c", code]})
    assert time.monotonic() - started < 3
    assert result.ok and result.content["timed_out"] is True
    assert wait_gone(int(result.content["stdout"].split()[0]))
