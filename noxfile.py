"""Sessions: tests (core, then each plugin in a venv of its own), demo, build, bench, lint, typing.

Each plugin is tested in a virtual environment holding only reach-core, that
plugin and its declared dependencies (plus the plugins its tests name in
``[tool.reach.dev] test-plugins``), so an undeclared dependency fails here
rather than on a user's machine.

Nothing here expects more than Python and ``pip install nox``: uv, which builds
the per-plugin venvs, is installed into the session's own venv (nox falls back
to virtualenv for that venv when uv is not on PATH).
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
import xml.etree.ElementTree as ET
from collections import Counter
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
# The docs' code blocks, run in a venv holding reach-core and every plugin (the pages show them together).
DOCS = str(ROOT / "tests/docs")
# reach as a guest in its host's process, with every plugin installed (the docs' venv).
GUEST = str(ROOT / "tests/guest")
INTEGRATION_PLUGINS = ["reach-serve", "reach-audit", "reach-confirm"]
# What `nox -s demo` installs: the demo's model adapter, its connectors and the guard-rail plugins it shows.
DEMO_PLUGINS = ["reach-openai", "reach-weather", "reach-notes", "reach-confirm", "reach-audit", "reach-preselect"]
REPORTS = ROOT / ".nox" / "reports"
PYTEST = ["pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")]
# Test processes per suite (pytest-xdist): one per core, at most 4; REACH_TEST_WORKERS=1 runs
# each suite in one process. Files stay whole on one worker (module fixtures are built once).
# A suite of fewer than SMALL_SUITE test files runs in one process: starting workers costs more.
WORKERS = int(os.environ.get("REACH_TEST_WORKERS") or min(os.cpu_count() or 1, 4))
SMALL_SUITE = 6


def _uv(session: nox.Session) -> str:
    """The uv inside this session's venv, installed on first use (never expected on PATH)."""
    uv = Path(session.bin) / "uv"
    if not uv.exists():
        session.install("uv")
    return str(uv)


def _pytest(name: str, dist: str = "loadfile", parallel: bool = True) -> list[str]:
    """pytest with a JUnit report per suite (read back for the closing total) and a temp
    directory of its own under .nox (suites build deep trees; the shared one in /tmp is
    cleaned by recursion and breaks on them). ``dist``: how xdist shares the tests out
    (``loadfile`` keeps a file on one worker; ``loadscope`` keeps a class on one worker);
    ``parallel=False``: one process."""
    tmp = ROOT / ".nox" / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)  # pytest makes --basetemp itself, but not its parent
    workers = ["-n", str(WORKERS), "--dist", dist] if WORKERS > 1 and parallel else []
    return [*PYTEST, *workers, f"--junitxml={REPORTS / (name + '.xml')}", f"--basetemp={tmp / name}"]


def _summary(names: list[str]) -> tuple[Counter, Counter]:
    """Totals over the suites' JUnit reports, and the skip reasons grouped."""
    totals: Counter = Counter()
    reasons: Counter = Counter()
    for name in names:
        report = REPORTS / f"{name}.xml"
        if not report.exists():
            totals["suites without a report"] += 1
            continue
        try:
            root = ET.parse(report).getroot()
        except ET.ParseError:  # the suite died while writing it (its own output says why)
            totals["suites without a report"] += 1
            continue
        for case in root.iter("testcase"):
            kinds = {child.tag for child in case}
            if kinds & {"failure", "error"}:
                totals["failed"] += 1
            elif "skipped" in kinds:
                totals["skipped"] += 1
                skip = case.find("skipped")
                reasons[(skip.get("message") or "no reason given").strip()] += 1
            else:
                totals["passed"] += 1
    return totals, reasons


def _meta(plugin: Path) -> dict:
    return tomllib.loads((plugin / "pyproject.toml").read_text())


def _dev(plugin: Path) -> dict:
    """The plugin's ``[tool.reach.dev]`` table: ``test-plugins`` (installed for its tests)
    and ``test-workers`` (1: its tests must not run side by side)."""
    return _meta(plugin).get("tool", {}).get("reach", {}).get("dev", {})


def _test_plugins(plugin: Path) -> list[str]:
    return [str(ROOT / "plugins" / n) for n in _dev(plugin).get("test-plugins", [])]


def _has_extra(plugin: Path, extra: str) -> bool:
    return extra in _meta(plugin).get("project", {}).get("optional-dependencies", {})


def _venv(session: nox.Session, name: str) -> tuple[str, str]:
    """A venv of its own under .nox (kept between runs unless CI); returns (uv, its python)."""
    uv = _uv(session)
    venv = ROOT / ".nox" / name
    py = venv / "bin" / "python"
    if not py.exists():
        session.run(uv, "venv", "-q", "--python", sys.executable, str(venv), external=True)
    return uv, str(py)


def _every_plugin_venv(session: nox.Session) -> str:
    """The venv holding reach-core and every plugin (the docs' blocks and the guest suite use it)."""
    uv, py = _venv(session, "docs")
    specs = [f"{p}[test]" if _has_extra(p, "test") else str(p) for p in PLUGINS]
    session.run(uv, "pip", "install", "-q", "--python", py, "-e", str(ROOT) + "[test]",
                *[x for s in specs for x in ("-e", s)], external=True)
    return py


def _plugin_venv(session: nox.Session, plugin: Path) -> str:
    """A venv holding reach-core, one plugin and what its tests name; returns its python."""
    uv, py = _venv(session, f"plugin-{plugin.name}")
    spec = f"{plugin}[test]" if _has_extra(plugin, "test") else str(plugin)
    session.run(uv, "pip", "install", "-q", "--python", py, "-e", str(ROOT) + "[test]",
                "-e", spec, *[x for p in _test_plugins(plugin) for x in ("-e", p)], external=True)
    return py


@nox.session
def tests(session: nox.Session) -> None:
    """Core tests, then every plugin's tests in its own venv. Pass plugin names to run only those.

    Every suite runs even when one fails; the session ends with one total over all of
    them (and the skip reasons grouped), then fails if any suite failed. A suite that
    collects no test fails too (pytest's exit 5 is not a success here).
    """
    wanted = set(session.posargs)
    failed: list[str] = []
    ran: list[str] = []
    shutil.rmtree(REPORTS, ignore_errors=True)

    def step(name: str, fn) -> None:  # run every suite, report all failures at the end
        ran.append(name)
        try:
            fn()
        except nox.command.CommandFailed:
            failed.append(name)

    if not wanted or "core" in wanted:
        session.install("-e", ".[test]", *[x for f in FIXTURES for x in ("-e", f)])
        _uv(session)  # test_packaging builds wheels as `nox -s build` does, with uv
        others = [f"--ignore={d}" for d in (*INTEGRATION, DOCS, GUEST)]  # suites with venvs of their own
        step("core", lambda: session.run(*_pytest("core"), "tests", *others))
    if not wanted or "integration" in wanted:
        session.log("=== integration: several instances on PostgreSQL and Redis ===")

        def run_integration() -> None:
            uv, py = _venv(session, "integration")
            session.run(uv, "pip", "install", "-q", "--python", py, "-e", str(ROOT) + "[test]",
                        *[x for n in INTEGRATION_PLUGINS for x in ("-e", str(ROOT / "plugins" / n))],
                        external=True)
            session.run(py, "-m", *_pytest("integration", parallel=False), *INTEGRATION, external=True)

        step("integration", run_integration)
    if not wanted or "docs" in wanted:
        session.log("=== docs: every python and shell block of README.md and docs/ ===")

        def run_docs() -> None:
            py = _every_plugin_venv(session)
            session.run(py, "-m", *_pytest("docs", dist="loadscope"), DOCS, external=True)

        step("docs", run_docs)
    if not wanted or "guest" in wanted:
        session.log("=== guest: reach and every plugin in one host process, left as it was ===")

        def run_guest() -> None:
            py = _every_plugin_venv(session)
            session.run(py, "-m", *_pytest("guest", parallel=False), GUEST, external=True)

        step("guest", run_guest)
    for plugin in PLUGINS:
        if wanted and plugin.name not in wanted:
            continue
        session.log(f"=== {plugin.name}: own venv with reach-core only ===")

        def run_plugin(plugin: Path = plugin) -> None:
            py = _plugin_venv(session, plugin)
            files = len(list((plugin / "tests").glob("test_*.py")))
            parallel = files >= SMALL_SUITE and _dev(plugin).get("test-workers") != 1
            session.run(py, "-m", *_pytest(plugin.name, parallel=parallel), str(plugin / "tests"), external=True,
                        env={"REACH_TEST_PACKAGING": "1"})

        step(plugin.name, run_plugin)
    totals, reasons = _summary(ran)
    for reason, count in reasons.most_common():
        session.log(f"skipped {count}: {reason}")
    if failed:
        session.log(f"suites that failed: {', '.join(failed)}")
    session.log(f"total over {len(ran)} suites:")
    # the one closing line over every suite, alone on its line (CI reads it)
    print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped", flush=True)
    if failed:
        session.error(f"test suites failed: {', '.join(failed)}")


@nox.session
def demo(session: nox.Session) -> None:
    """The offline demo: a scripted model, the real OpenAI SDK, real local services, reach's guard rails."""
    session.install("-e", ".", *[f"-e{ROOT / 'plugins' / n}" for n in DEMO_PLUGINS], "rich")
    session.run("reach", "demo", *session.posargs)


@nox.session
def build(session: nox.Session) -> None:
    """Wheels and sdists of reach-core and every plugin in dist/.

    Until the packages are published, ``pip install --find-links dist reach-core
    reach-weather reach-audit`` installs from there.
    """
    uv = _uv(session)
    dist = ROOT / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    for project in (ROOT, *PLUGINS):
        session.run(uv, "build", "-q", "-o", str(dist), str(project), external=True)
    session.log(f"{len(list(dist.glob('*.whl')))} wheels in {dist}")


@nox.session
def screenshots(session: nox.Session) -> None:
    """The console screenshots in docs/plugins/img, taken by reach-serve's browser tests
    in Debian's chromium (apt-get install chromium; Playwright downloads no browser)."""
    shots = ROOT / ".nox" / "console-shots"  # not .nox/screenshots: that is this session's venv
    shutil.rmtree(shots, ignore_errors=True)
    py = _plugin_venv(session, ROOT / "plugins" / "reach-serve")
    browser_tests = ROOT / "plugins/reach-serve/tests/test_console_browser.py"
    session.run(py, "-m", *_pytest("screenshots", parallel=False), str(browser_tests), external=True,
                env={"REACH_CONSOLE_SCREENSHOTS": str(shots)})
    img = ROOT / "docs" / "plugins" / "img"
    for doc_png in sorted(img.glob("reach-serve-console-*.png")):  # refresh the ones the docs show
        shutil.copyfile(shots / doc_png.name.removeprefix("reach-serve-console-"), doc_png)
        session.log(f"updated {doc_png.relative_to(ROOT)}")


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
    """mypy over reach_core and every plugin's package, each plugin installed with its
    dependencies (so their types are checked, not taken as ``Any``)."""
    session.install("mypy", "-e", ".", *[x for p in PLUGINS for x in ("-e", str(p))])
    packages = [x for p in PLUGINS for pkg in sorted(p.glob("reach_*/__init__.py")) for x in ("-p", pkg.parent.name)]
    session.run("mypy", "-p", "reach_core", *packages)


if os.environ.get("CI"):
    nox.options.reuse_existing_virtualenvs = False
