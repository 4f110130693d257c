"""Sessions: tests (core, then each plugin in a venv of its own), demo, bench, lint, typing.

Each plugin is tested in a virtual environment holding only reach-core, that
plugin and its declared dependencies (plus the plugins its tests name in
``[tool.reach.dev] test-plugins``), so an undeclared dependency fails here
rather than on a user's machine.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).parent
PLUGINS = sorted(p.parent for p in ROOT.glob("plugins/*/pyproject.toml"))
FIXTURES = [str(ROOT / "tests/fixtures/reach-sample"), str(ROOT / "tests/fixtures/reach-broken")]
# Cross-plugin tests that need several plugins and real servers, run in a venv of their own.
INTEGRATION = [str(ROOT / "tests/scaleout")]
INTEGRATION_PLUGINS = ["reach-serve", "reach-audit", "reach-confirm"]
PYTEST = ["pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")]


def _meta(plugin: Path) -> dict:
    return tomllib.loads((plugin / "pyproject.toml").read_text())


def _test_plugins(plugin: Path) -> list[str]:
    names = _meta(plugin).get("tool", {}).get("reach", {}).get("dev", {}).get("test-plugins", [])
    return [str(ROOT / "plugins" / n) for n in names]


def _has_extra(plugin: Path, extra: str) -> bool:
    return extra in _meta(plugin).get("project", {}).get("optional-dependencies", {})


def _plugin_venv(session: nox.Session, plugin: Path) -> str:
    """A fresh venv for one plugin; returns its python."""
    venv = ROOT / ".nox" / f"plugin-{plugin.name}"
    py = venv / "bin" / "python"
    if not py.exists():
        session.run("uv", "venv", "-q", "--python", sys.executable, str(venv), external=True)
    spec = f"{plugin}[test]" if _has_extra(plugin, "test") else str(plugin)
    session.run("uv", "pip", "install", "-q", "--python", str(py), "-e", str(ROOT) + "[test]",
                "-e", spec, *[x for p in _test_plugins(plugin) for x in ("-e", p)], external=True)
    return str(py)


@nox.session
def tests(session: nox.Session) -> None:
    """Core tests, then every plugin's tests in its own venv. Pass plugin names to run only those."""
    wanted = set(session.posargs)
    failed: list[str] = []

    def step(name: str, fn) -> None:  # run every suite, report all failures at the end
        try:
            fn()
        except nox.command.CommandFailed:
            failed.append(name)

    if not wanted or "core" in wanted:
        session.install("-e", ".[test]", *[x for f in FIXTURES for x in ("-e", f)])
        step("core", lambda: session.run(*PYTEST, "tests", *[f"--ignore={d}" for d in INTEGRATION]))
    if not wanted or "integration" in wanted:
        session.log("=== integration: several instances on PostgreSQL and Redis ===")

        def run_integration() -> None:
            venv = ROOT / ".nox" / "integration"
            py = venv / "bin" / "python"
            if not py.exists():
                session.run("uv", "venv", "-q", "--python", sys.executable, str(venv), external=True)
            session.run("uv", "pip", "install", "-q", "--python", str(py), "-e", str(ROOT) + "[test]",
                        *[x for n in INTEGRATION_PLUGINS for x in ("-e", str(ROOT / "plugins" / n))],
                        external=True)
            session.run(str(py), "-m", *PYTEST, *INTEGRATION, external=True)

        step("integration", run_integration)
    for plugin in PLUGINS:
        if wanted and plugin.name not in wanted:
            continue
        session.log(f"=== {plugin.name}: own venv with reach-core only ===")

        def run_plugin(plugin: Path = plugin) -> None:
            py = _plugin_venv(session, plugin)
            session.run(py, "-m", *PYTEST, str(plugin / "tests"), external=True,
                        env={"REACH_TEST_PACKAGING": "1"})

        step(plugin.name, run_plugin)
    if failed:
        session.error(f"test suites failed: {', '.join(failed)}")


@nox.session
def demo(session: nox.Session) -> None:
    """The offline demo: a scripted model, the real OpenAI SDK, real weather and notes tools."""
    session.install("-e", ".", *[f"-e{ROOT / 'plugins' / n}" for n in ("reach-openai", "reach-weather", "reach-notes")],
                    "rich")
    session.run("reach", "demo", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Every benchmark under bench/; each prints its figures."""
    session.install("-e", ".[test]", *[x for p in PLUGINS for x in ("-e", str(p))])
    session.install("-r", "bench/requirements.txt")
    scripts = session.posargs or sorted(str(p) for p in (ROOT / "bench").glob("bench_*.py"))
    for script in scripts:
        session.log(f"=== {Path(script).name} ===")
        session.run("python", script, env={"PYTHONHASHSEED": "0"})


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", ".")


@nox.session
def typing(session: nox.Session) -> None:
    session.install("-e", ".", "mypy")
    session.run("mypy", "reach_core")


if os.environ.get("CI"):
    nox.options.reuse_existing_virtualenvs = False
