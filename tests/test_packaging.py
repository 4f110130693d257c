"""Wheels of reach-core and a plugin, installed into an empty venv: the plugin is
found by its entry point, exactly as ``pip install reach-core reach-sample`` would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*cmd, **kw):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kw)
    assert out.returncode == 0, f"{cmd}: {out.stdout}\n{out.stderr}"
    return out


PROJECTS = [ROOT, *sorted(p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml"))]
SAMPLE = ROOT / "tests/fixtures/reach-sample"


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """Every distribution's wheel, built once for the module as ``nox -s build`` makes
    them (uv build; pip wheel where uv is absent), plus the sample plugin's."""
    dist = tmp_path_factory.mktemp("dist")
    uv = shutil.which("uv")
    for project in (*PROJECTS, SAMPLE):
        if uv:
            _run(uv, "build", "-q", "--wheel", "-o", dist, project)
        else:
            _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, project)
    return dist


def _wheels(dist: Path, *names: str) -> list[Path]:
    """The wheels of the named distributions (each exactly once)."""
    found = {w.name.split("-")[0].replace("_", "-"): w for w in dist.glob("*.whl")}
    return [found[name] for name in names]


def test_wheels_install_and_plugin_found_by_entry_point(dist, tmp_path):
    wheels = _wheels(dist, "reach-core", "reach-sample")
    venv = tmp_path / "venv"
    uv = shutil.which("uv")
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


def _metadata(wheel: Path) -> str:
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return zf.read(name).decode()


def test_every_distribution_carries_release_metadata(dist):
    """What PyPI shows and what a licence check reads: a README, classifiers, URLs, the
    licence file, and a version written in one place (reach-core's comes from __init__)."""
    import reach_core

    wheels = _wheels(dist, *(tomllib.loads((p / "pyproject.toml").read_text())["project"]["name"] for p in PROJECTS))
    assert len(set(wheels)) == len(PROJECTS)
    for wheel in wheels:
        meta = _metadata(wheel)
        headers = [line.split(": ", 1) for line in meta.split("\n\n", 1)[0].splitlines() if ": " in line]
        keys = Counter(k for k, _ in headers)
        assert keys["Classifier"] >= 5, wheel.name
        assert {v.split(",")[0] for k, v in headers
                if k == "Project-URL"} >= {"Homepage", "Source", "Issues"}, wheel.name
        assert ("License-Expression", "Apache-2.0") in [tuple(h) for h in headers], wheel.name
        assert ("License-File", "LICENSE") in [tuple(h) for h in headers], wheel.name
        assert ("Description-Content-Type", "text/markdown") in [tuple(h) for h in headers], wheel.name
        assert len(meta.split("\n\n", 1)[1]) > 100, f"{wheel.name}: no README as long description"
        if wheel.name.startswith("reach_core-"):
            assert ("Version", reach_core.__version__) in [tuple(h) for h in headers]


def test_pip_install_find_links_dist_installs_core_and_plugins(dist, tmp_path):
    """The install path the docs give until the packages are published:
    ``nox -s build`` then ``pip install --find-links dist reach-core reach-weather reach-audit``."""
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    _run(venv / "bin/python", "-m", "pip", "install", "-q", "--find-links", dist,
         "reach-core", "reach-weather", "reach-audit")
    rows = json.loads(_run(venv / "bin/reach", "plugins", "--json", cwd=tmp_path).stdout)
    assert {(r["name"], r["status"]) for r in rows} == {("reach-weather", "loaded"), ("reach-audit", "loaded")}
