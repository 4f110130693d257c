"""The design card's line, as a user would live it: build the wheels of reach-core,
reach-weather and reach-audit, install only those (and their declared
dependencies from the registry) into an empty venv, call the weather tool against
the local demo service, and find that call in ``reach audit tail --json``.

Slow-ish (builds and installs, ~30 s): run it with ``-m packaging``, or with the
rest of the suite with ``REACH_TEST_PACKAGING=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.packaging

REPO = Path(__file__).resolve().parents[3]
PROJECTS = [REPO, REPO / "plugins" / "reach-weather", REPO / "plugins" / "reach-audit"]


def _run(*cmd: str | Path, cwd: Path | None = None, env: dict | None = None, timeout: float = 300) -> str:
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def _clean_env(**extra: str) -> dict[str, str]:
    """The user's shell: no PYTHONPATH pointing at the source tree, no virtualenv leaking in."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "REACH_CONFIG")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("packaging")
    dist = root / "dist"
    uv = shutil.which("uv")
    for project in PROJECTS:
        if uv:
            _run(uv, "build", "--wheel", "--out-dir", dist, project, env=_clean_env())
        else:
            _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dist, project, env=_clean_env())
    wheels = sorted(dist.glob("*.whl"))
    names = {w.name.split("-")[0] for w in wheels}
    assert names == {"reach_core", "reach_weather", "reach_audit"}, wheels
    env_dir = root / "venv"
    if uv:
        _run(uv, "venv", "--python", sys.executable, env_dir, env=_clean_env())
        _run(uv, "pip", "install", "--python", env_dir / "bin" / "python", *wheels, env=_clean_env())
    else:
        _run(sys.executable, "-m", "venv", env_dir)
        _run(env_dir / "bin" / "python", "-m", "pip", "install", "-q", *wheels, env=_clean_env())
    return env_dir


@pytest.fixture
def weather_service(venv: Path, tmp_path: Path):
    """`reach weather serve-demo` from the installed wheel, on a free port."""
    proc = subprocess.Popen(
        [str(venv / "bin" / "reach"), "weather", "serve-demo", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_clean_env(),
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        url = next((w for w in banner.split() if w.startswith("http://127.0.0.1:")), None)
        if url is None:
            proc.kill()
            pytest.fail(f"the demo service did not start: {banner}{proc.stderr.read() if proc.stderr else ''}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_a_weather_call_is_found_in_the_audit_tail(venv: Path, weather_service: str, tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "reach.toml").write_text(
        "[plugins.reach-weather]\n"
        f'geocoding_url = "{weather_service}"\n'
        f'forecast_url = "{weather_service}"\n',
        encoding="utf-8",
    )
    reach = str(venv / "bin" / "reach")
    env = _clean_env()
    plugins = json.loads(_run(reach, "plugins", "--json", cwd=project, env=env))
    assert {p["name"] for p in plugins if p["status"] == "loaded"} == {"reach-weather", "reach-audit"}

    out = _run(reach, "call", "get_weather", "--args", '{"city":"Beijing"}', "--json", cwd=project, env=env)
    result = json.loads(out)
    assert result["ok"], result

    tail = _run(reach, "audit", "tail", "--json", cwd=project, env=env)
    records = [json.loads(line) for line in tail.splitlines() if line.strip()]
    calls = [r for r in records if r.get("tool") == "get_weather"]
    assert len(calls) == 1, records
    (rec,) = calls
    assert rec["status"] == "ok"
    assert rec["plugin"] == "reach-weather" and rec["risk"] == "read"
    assert rec["args"]["city"] == "Beijing"  # the validated arguments (defaults filled in)
    assert rec["call_id"] == result["call_id"] and rec["trace_id"] == result["trace_id"]
    assert rec["hash"]
    verify = _run(reach, "audit", "verify", cwd=project, env=env)
    assert verify.startswith("ok: 1 records")
    assert (project / ".reach" / "reach.db").exists()
