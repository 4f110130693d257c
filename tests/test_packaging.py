"""Wheels of reach-core and a plugin, installed into an empty venv: the plugin is
found by its entry point, exactly as ``pip install reach-core reach-sample`` would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*cmd, **kw):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kw)
    assert out.returncode == 0, f"{cmd}: {out.stdout}\n{out.stderr}"
    return out


def test_wheels_install_and_plugin_found_by_entry_point(tmp_path):
    dist = tmp_path / "dist"
    uv = shutil.which("uv")
    for project in (ROOT, ROOT / "tests/fixtures/reach-sample"):
        if uv:
            _run(uv, "build", "-q", "--wheel", "-o", dist, project)
        else:
            _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, project)
    wheels = sorted(dist.glob("*.whl"))
    assert {w.name.split("-")[0] for w in wheels} == {"reach_core", "reach_sample"}
    venv = tmp_path / "venv"
    if uv:
        _run(uv, "venv", "-q", "--python", sys.executable, venv)
        _run(uv, "pip", "install", "-q", "--python", venv / "bin/python", *wheels)
    else:
        _run(sys.executable, "-m", "venv", venv)
        _run(venv / "bin/python", "-m", "pip", "install", "-q", *wheels)
    rows = json.loads(_run(venv / "bin/reach", "plugins", "--json", cwd=tmp_path).stdout)
    assert [(r["name"], r["status"], r["distribution"]) for r in rows] == [("reach-sample", "loaded", "reach-sample")]
    out = _run(venv / "bin/reach", "call", "add_numbers", "--args", '{"a": 20, "b": 22}', cwd=tmp_path)
    assert out.stdout.strip() == "42"
