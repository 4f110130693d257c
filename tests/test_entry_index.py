"""The store of installed ``reach`` entry points (``reach_core.entry_index``): an answer from it
is importlib_metadata's, and anything installed, removed or edited shows at once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from reach_core import entry_index
from reach_core.entry_index import EntryPointRef, entry_points

OLD = time.time() - 3600  # metadata older than RACY_NS: a store may be written


def _age(path) -> None:
    """Every file and directory under ``path`` as if installed an hour ago."""
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.utime(os.path.join(root, name), (OLD, OLD))
    os.utime(path, (OLD, OLD))


def _dist(where, name: str, version: str = "0.1.0", entry: str | None = None, *, age: bool = True):
    """A distribution ``name`` in ``where`` with a ``reach`` entry point (``entry``, default the module)."""
    module = name.replace("-", "_")
    (where / f"{module}.py").write_text("from reach_core import hookimpl\n\nMARK = 1\n")
    meta = where / f"{module}-{version}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nbody\n")
    (meta / "entry_points.txt").write_text(f"[console_scripts]\nx = y:z\n\n[reach]\n{name} = {entry or module}\n")
    if age:
        _age(meta)
    return meta


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A directory on ``sys.path`` holding one plugin, and a store of the test's own."""
    where = tmp_path / "site"
    where.mkdir()
    _dist(where, "reach-one")
    monkeypatch.syspath_prepend(str(where))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return where


def _names() -> dict[str, EntryPointRef]:
    return {e.name: e for e in entry_points(cache=True)}


def _from_store_only(monkeypatch) -> None:
    """Reading with importlib_metadata fails from now on: an answer must come from the store."""
    def no_read():
        raise AssertionError("read with importlib_metadata: the store was not used")
    monkeypatch.setattr(entry_index, "read", no_read)


def test_the_store_answers_as_importlib_metadata_reads(site, monkeypatch):
    fresh = entry_index.read()
    assert _names()["reach-one"] == EntryPointRef("reach-one", "reach_one", "reach-one", "0.1.0")
    store = entry_index.cache_file()
    assert store is not None and os.path.isfile(store)
    _from_store_only(monkeypatch)
    assert entry_points(cache=True) == fresh
    assert _names()["reach-one"].load().MARK == 1


def test_an_install_shows_at_once(site, monkeypatch):
    assert "reach-two" not in _names()
    _dist(site, "reach-two")  # installed an hour ago, as far as mtimes tell
    assert _names()["reach-two"].value == "reach_two"


def test_an_uninstall_shows_at_once(site):
    two = _dist(site, "reach-two")
    assert "reach-two" in _names()
    shutil.rmtree(two)
    _age(site)
    assert "reach-two" not in _names()


def test_an_upgrade_and_an_edit_in_place_show_at_once(site):
    assert _names()["reach-one"].version == "0.1.0"
    shutil.rmtree(site / "reach_one-0.1.0.dist-info")
    _dist(site, "reach-one", "0.2.0")
    assert _names()["reach-one"].version == "0.2.0"
    points = site / "reach_one-0.2.0.dist-info" / "entry_points.txt"
    points.write_text("[reach]\nreach-one = reach_one:MARK\n")
    os.utime(points, (OLD + 1, OLD + 1))
    assert _names()["reach-one"].value == "reach_one:MARK"
    assert _names()["reach-one"].load() == 1


def test_a_change_of_sys_path_is_a_miss(site, tmp_path, monkeypatch):
    assert "reach-other" not in _names()
    other = tmp_path / "other"
    other.mkdir()
    _dist(other, "reach-other")
    monkeypatch.syspath_prepend(str(other))
    assert "reach-other" in _names()


def test_metadata_changed_just_now_is_not_stored(site):
    _dist(site, "reach-new", age=False)  # a second change within the same clock tick would not show
    assert "reach-new" in _names()
    assert not os.path.exists(entry_index.cache_file())


def test_another_distribution_finder_turns_the_store_off(site, monkeypatch):
    class Finder:
        @staticmethod
        def find_spec(*args):
            return None

        @staticmethod
        def find_distributions(*args, **kwargs):
            return iter(())

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert entry_index.fingerprint() is None
    assert "reach-one" in _names()
    assert not os.path.exists(entry_index.cache_file())


def test_a_broken_or_unwritable_store_is_ignored(site, tmp_path, monkeypatch):
    _names()
    store = entry_index.cache_file()
    with open(store, "w") as f:
        f.write("{not json")
    assert "reach-one" in _names()
    assert json.load(open(store))["entry_points"]  # written again
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert "reach-one" in _names()


def test_load_follows_importlib_metadata():
    assert EntryPointRef("x", "os.path : join", None, None).load() is os.path.join
    assert EntryPointRef("x", "os:path.join [extra]", None, None).load() is os.path.join
    with pytest.raises(ValueError, match="Invalid object reference"):
        EntryPointRef("x", "not valid!", None, None).load()


def test_reach_plugins_from_the_store_blocks_and_sees_installs(tmp_path):
    """Through the command: the second run answers from the store, a blocked plugin is still not
    imported, and a plugin installed after it shows on the next run."""
    site = tmp_path / "site"
    site.mkdir()
    _dist(site, "reach-one")
    mark = tmp_path / "imported"
    (site / "reach_one.py").write_text(textwrap.dedent(f"""
        import pathlib
        pathlib.Path({str(mark)!r}).write_text("yes")
    """))
    _age(site)
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "REACH_DISABLE_PLUGINS": "reach-one"}

    def run() -> dict[str, dict]:
        out = subprocess.run([sys.executable, "-m", "reach_core", "plugins", "--json"], capture_output=True,
                             text=True, env=env, cwd=tmp_path, timeout=60)
        assert out.returncode == 0, out.stderr
        return {p["name"]: p for p in json.loads(out.stdout)}

    first = run()
    assert os.listdir(tmp_path / "cache" / "reach")
    assert run() == first and first["reach-one"]["status"] == "blocked" and not mark.exists()
    _dist(site, "reach-two")
    assert run()["reach-two"]["status"] == "loaded"
