"""``reach plugins`` lists plugins without starting a ``Reach`` (``reach_core.plugins.inventory``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from reach_core import ConfigError, PluginError
from reach_core.plugins import inventory


def _run(code: str, tmp_path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=tmp_path, timeout=60)


def _cli(*args: str, cwd, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reach_core.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=60)


def test_inventory_matches_a_started_reach(tmp_path):
    from reach_core import Reach

    config = {"reach": {"data_dir": str(tmp_path)}, "plugins": {"load": ["reach-sample", "reach-broken"]}}
    listed = [p.to_dict() for p in inventory(config).plugin_info]
    started = [p.to_dict() for p in Reach(config).plugin_info]
    assert listed == started
    by = {p["name"]: p for p in listed}
    assert by["reach-sample"]["version"] and by["reach-sample"]["distribution"] == "reach-sample"
    assert by["reach-broken"]["status"] == "failed"


def _light_plugin(where) -> None:
    """A distribution with a ``reach`` entry point written into ``where`` (put on PYTHONPATH):
    the shape a plugin following docs/plugin-authors.md has, independent of what is installed."""
    (where / "reach_light.py").write_text(textwrap.dedent("""
        from reach_core import hookimpl

        @hookimpl
        def reach_plugin_settings():
            from pydantic import BaseModel  # only when a Reach validates settings

            class Settings(BaseModel):
                greeting: str = "hi"
            return Settings
    """))
    meta = where / "reach_light-0.1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: reach-light\nVersion: 0.1.0\n\nA body.\n")
    (meta / "entry_points.txt").write_text("[console_scripts]\nx = y:z\n\n[reach]\nreach-light = reach_light\n")


def test_inventory_imports_neither_pydantic_nor_the_pipeline(tmp_path):
    _light_plugin(tmp_path)
    out = _run("""
        import json, sys
        from reach_core.plugins import inventory
        found = inventory({"plugins": {"load": ["reach-light", "reach-broken"]}})
        print(json.dumps({p.name: [p.status, p.version] for p in found.plugin_info}))
        print(json.dumps(sorted(m for m in ("pydantic", "reach_core.reach", "reach_core.pipeline", "httpx")
                                if m in sys.modules)))
    """, tmp_path, env={"PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    statuses, heavy = (json.loads(line) for line in out.stdout.splitlines()[:2])
    assert statuses["reach-light"] == ["loaded", "0.1.0"] and statuses["reach-broken"][0] == "failed"
    assert heavy == []


def test_entry_points_come_from_importlib_metadata_first_on_the_path_wins(tmp_path, monkeypatch):
    """Entry points, name and version as the standard library reads them; of two copies of one
    distribution on ``sys.path``, the first wins (the one ``import`` would use)."""
    from importlib.metadata import entry_points

    from reach_core.plugins import _entry_points

    later = tmp_path / "later"
    later.mkdir()
    _light_plugin(later)
    (later / "reach_light-0.1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: reach-light\nVersion: 0.0.1\n")
    (later / "reach_light-0.1.0.dist-info" / "entry_points.txt").write_text("[reach]\nreach-light = stale\n")
    first = tmp_path / "first"
    first.mkdir()
    _light_plugin(first)
    monkeypatch.syspath_prepend(str(later))
    monkeypatch.syspath_prepend(str(first))
    for cached in (False, True, True):  # read, then from the store (reach_core.entry_index) as read
        found = {e.name: e for e in _entry_points(cached=cached)}
        assert found["reach-light"].value == "reach_light"
        assert (found["reach-light"].distribution, found["reach-light"].version) == ("reach-light", "0.1.0")
        assert {n for n in found} == {e.name for e in entry_points(group="reach")}


def test_blocked_plugin_is_not_imported_by_reach_plugins(tmp_path):
    mark = tmp_path / "mark"
    (tmp_path / "reach.toml").write_text('[plugins]\ndisable = ["reach-sample"]\n')
    out = _cli("plugins", "--json", cwd=tmp_path, env={"REACH_SAMPLE_IMPORT_MARK": str(mark)})
    assert out.returncode == 0, out.stderr
    by = {p["name"]: p for p in json.loads(out.stdout)}
    assert by["reach-sample"]["status"] == "blocked" and not mark.exists()


def test_invalid_selection_gives_the_validation_error(tmp_path):
    with pytest.raises(ConfigError, match=r"\[plugins\] load"):
        inventory({"plugins": {"load": "reach-sample"}})
    (tmp_path / "reach.toml").write_text('[plugins]\nload = "reach-sample"\n')
    out = _cli("plugins", cwd=tmp_path)
    assert out.returncode != 0 and "[plugins] load" in out.stderr and "Traceback" not in out.stderr


def test_strict_raises_for_a_broken_plugin():
    with pytest.raises(PluginError, match="reach-broken"):
        inventory({"reach": {"strict": True}, "plugins": {"load": ["reach-broken"]}})


def test_check_reports_set_up_problems(tmp_path):
    (tmp_path / "reach.toml").write_text(
        '[reach]\ndata_dir = "state"\n[plugins]\nload = ["reach-sample"]\n[plugins.reach-sample]\noffset = "x"\n'
    )
    fast = _cli("plugins", "--json", cwd=tmp_path)
    assert fast.returncode == 0, fast.stderr
    by = {p["name"]: p for p in json.loads(fast.stdout)}
    assert by["reach-sample"]["status"] == "loaded"  # not started: settings not validated
    checked = _cli("plugins", "--check", cwd=tmp_path)
    assert checked.returncode != 0 and "[plugins.reach-sample] offset" in checked.stderr


BRIDGES = {"reach-langchain": ("reach_langchain", "langchain_core"),
           "reach-openai-agents": ("reach_openai_agents", "agents"),
           "reach-pydantic-ai": ("reach_pydantic_ai", "pydantic_ai")}


def test_importing_the_bridges_adds_nothing_to_reach(tmp_path):
    """The bridges are functions that take a ``Reach`` (``reach_langchain.tools(reach)``): importing
    them (package, entry point, bridge module when its SDK is installed) leaves ``Reach`` as it was."""
    out = _run(f"""
        import importlib, importlib.util, json, sys
        sys.path[:0] = {[str(ROOT / "plugins" / name) for name in BRIDGES]!r}
        from reach_core import Reach
        before = set(dir(Reach))
        imported = []
        for package, sdk in {list(BRIDGES.values())!r}:
            modules = [package, package + ".plugin"]
            if importlib.util.find_spec(sdk) is not None:
                modules.append(package + ".bridge")
            for module in modules:
                importlib.import_module(module)
                imported.append(module)
        bare = Reach({{"reach": {{"data_dir": "d"}}}}, plugins=[])
        print(json.dumps({{"added": sorted(set(dir(Reach)) - before), "imported": imported,
                          "bare": [a for a in dir(bare) if a.startswith("as_")]}}))
    """, tmp_path)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["added"] == [] and found["bare"] == []
    assert {f"{p}.plugin" for p, _ in BRIDGES.values()} <= set(found["imported"])


FIRST_PARTY = ["reach-audit", "reach-confirm", "reach-files", "reach-http", "reach-langchain", "reach-mcp",
               "reach-notes", "reach-notify", "reach-openai", "reach-openai-agents", "reach-preselect",
               "reach-pydantic-ai", "reach-serve", "reach-shape", "reach-shell", "reach-sql", "reach-weather"]
HEAVY = ("pydantic", "structlog", "httpx", "sqlalchemy", "starlette", "mcp", "numpy", "reach_core.reach",
         "reach_core.config", "reach_core.pipeline")


ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", FIRST_PARTY)
def test_entry_point_module_is_light(tmp_path, name):
    """``reach plugins`` imports every entry-point module: each imports only what finding its hooks needs.

    Read from the source tree (``plugins/NAME``), so it runs whether or not the plugin
    is installed here: an entry module that imported its dependencies at the top would
    fail to import in the core-only test venv, and that is a failure too.
    """
    import tomllib

    src = ROOT / "plugins" / name
    module = tomllib.loads((src / "pyproject.toml").read_text())["project"]["entry-points"]["reach"][name]
    out = _run(f"""
        import importlib, json, sys
        importlib.import_module({module.partition(":")[0]!r})
        print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
    """, tmp_path, env={"PYTHONPATH": str(src)})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
