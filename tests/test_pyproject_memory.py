"""``reach plugins`` remembers a ``pyproject.toml`` without ``[tool.reach]`` by its stat
(``reach_core.configfile._WithoutReach``) and never answers from a stale memory.

Each test reads the config twice or more as ``reach plugins`` does (``read_config(None,
remember=True)``) and counts the parses. A change of any kind between two reads must be
seen: an edit that keeps the size and the mtime, a replace, a ``[tool.reach]`` added, the
file made invalid; a store that cannot be used is ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reach_core import ConfigError, configfile, entry_index
from reach_core.configfile import read_config


class _Project(type(Path())):  # type: ignore[misc]
    """The project folder, with the list of files parsed (``parses``)."""

    parses: list[str]


PLAIN = "[project]\nname = 'demo'\nversion = '1.0'\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder as the working directory, a store of its own, every change trusted at
    once (``RACY_NS = 0``: the racy rule has a test of its own), and the parses counted."""
    work = _Project(tmp_path / "work")
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("REACH_CONFIG", raising=False)
    monkeypatch.setattr(entry_index, "RACY_NS", 0)
    parses: list[str] = []
    real = configfile.read_file

    def counting(path):
        parses.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(configfile, "read_file", counting)
    work.parses = parses
    return work


def _read():
    return read_config(None, remember=True)


def _write_keeping_stat(path, text: str) -> None:
    """Rewrite ``path`` in place (same inode) and put its mtime back: only ctime shows the edit."""
    st = os.stat(path)
    with open(path, "r+", encoding="utf-8") as f:
        f.write(text)
        f.truncate()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_file_without_reach_config_is_parsed_once(project):
    (project / "pyproject.toml").write_text(PLAIN)
    assert _read() == ({}, None)
    assert _read() == ({}, None)
    assert _read() == ({}, None)
    assert project.parses == ["pyproject.toml"]


def test_reach_itself_never_uses_the_memory(project):
    """``Reach`` (``remember`` off) parses every time and leaves no file in the home."""
    (project / "pyproject.toml").write_text(PLAIN)
    for _ in range(3):
        assert read_config(None) == ({}, None)
    assert project.parses == ["pyproject.toml"] * 3
    assert not (project.parent / "cache").exists()


CHANGES = {
    "reach config added": PLAIN + "[tool.reach.plugins]\nload = []\n",
    "same size, reach config": "[tool.reach.plugins]\nload=[] # xx\n"[: len(PLAIN)].ljust(len(PLAIN)),
    "spaced table name": PLAIN + "[ tool . reach . reach ]\nstrict = true\n",
    "quoted table name": PLAIN + '["tool"."reach".reach]\nstrict = true\n',
    "dotted keys": PLAIN + "[tool]\nreach.reach.strict = true\n",
    "inline table": "tool = { reach = { reach = { strict = true } } }\n",
    "escaped name": PLAIN + '[tool."\\u0072each".reach]\nstrict = true\n',
}


@pytest.mark.parametrize("how", ["rewrite", "in place, stat kept", "replace", "replace, stat kept"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_is_seen(project, change, how):
    path = project / "pyproject.toml"
    path.write_text(PLAIN)
    assert _read() == ({}, None)
    assert _read() == ({}, None)
    text = CHANGES[change]
    if how == "rewrite":
        path.write_text(text)
    elif how == "in place, stat kept":
        _write_keeping_stat(path, text)
    else:
        st = os.stat(path)
        other = project / "new.toml"
        other.write_text(text)
        if how == "replace, stat kept":
            os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(other, path)
    data, where = _read()
    assert where is not None and where.name == "pyproject.toml"
    assert data and set(data) <= {"plugins", "reach"}
    assert project.parses == ["pyproject.toml", "pyproject.toml"]


@pytest.mark.parametrize("broken", ["[project\n", "x = \n", "a = 1\na = 2\n", "\x00", "[tool.reach]\n[tool.reach]\n"])
@pytest.mark.parametrize("keep_stat", [False, True])
def test_a_file_made_invalid_is_an_error_again(project, broken, keep_stat):
    path = project / "pyproject.toml"
    path.write_text(PLAIN)
    _read()
    text = broken.ljust(len(PLAIN)) if keep_stat else broken
    if keep_stat:
        _write_keeping_stat(path, text)
    else:
        path.write_text(text)
    with pytest.raises(ConfigError, match="not valid TOML"):
        _read()


def test_an_invalid_file_is_never_remembered(project):
    (project / "pyproject.toml").write_text("[project\n")
    for _ in range(3):
        with pytest.raises(ConfigError):
            _read()
    assert project.parses == ["pyproject.toml"] * 3


@pytest.mark.parametrize("table", ["[tool.reach]\n", "[tool.reach.plugins]\nload = []\n"])
def test_a_file_with_reach_config_is_read_every_time(project, table):
    (project / "pyproject.toml").write_text(PLAIN + table)
    for _ in range(3):
        _read()
    if table == "[tool.reach]\n":  # an empty table is no config (``{}, None``): remembered as such
        assert project.parses == ["pyproject.toml"]
        return
    assert project.parses == ["pyproject.toml"] * 3
    store = project.parent / "cache" / "reach" / configfile._WithoutReach.NAME
    assert not store.exists()


def test_reach_toml_and_reach_config_come_first(project, monkeypatch, tmp_path):
    (project / "pyproject.toml").write_text(PLAIN)
    _read()
    (project / "reach.toml").write_text("[reach]\nstrict = true\n")
    assert _read()[0] == {"reach": {"strict": True}}
    (project / "reach.toml").unlink()
    other = tmp_path / "elsewhere.toml"
    other.write_text("[plugins]\nload = []\n")
    monkeypatch.setenv("REACH_CONFIG", str(other))
    assert _read()[0] == {"plugins": {"load": []}}


def test_a_file_changed_just_now_is_not_remembered(project, monkeypatch):
    """The racy rule: a second edit in the same clock tick, same size, would not show."""
    monkeypatch.setattr(entry_index, "RACY_NS", 3_000_000_000)
    (project / "pyproject.toml").write_text(PLAIN)
    _read()
    _read()
    assert project.parses == ["pyproject.toml", "pyproject.toml"]


@pytest.mark.parametrize("store", ["not json {", "[1, 2]", '"text"', "null", '{"x": 1}', "", "\udcff"])
def test_a_store_that_cannot_be_used_is_ignored(project, store):
    (project / "pyproject.toml").write_text(PLAIN)
    path = project.parent / "cache" / "reach" / configfile._WithoutReach.NAME
    path.parent.mkdir(parents=True)
    path.write_text(store, encoding="utf-8", errors="surrogateescape")
    assert _read() == ({}, None)
    assert _read() == ({}, None)
    assert project.parses == ["pyproject.toml"]  # the second read found the rewritten store


def test_a_store_that_cannot_be_written_is_ignored(project):
    (project / "pyproject.toml").write_text(PLAIN)
    (project.parent / "cache").mkdir()
    (project.parent / "cache" / "reach").write_text("a file where the folder should be")
    assert _read() == ({}, None)
    assert _read() == ({}, None)
    assert project.parses == ["pyproject.toml"] * 2


@pytest.mark.parametrize("home", ["relative", "./here"])
def test_no_home_no_memory(project, monkeypatch, home):
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", home)
    (project / "pyproject.toml").write_text(PLAIN)
    _read()
    _read()
    assert project.parses == ["pyproject.toml"] * 2


def test_the_store_keeps_the_most_recent_files(project, tmp_path):
    keep = configfile._WithoutReach.KEEP
    folders = []
    for i in range(keep + 5):
        folder = tmp_path / f"p{i}"
        folder.mkdir()
        (folder / "pyproject.toml").write_text(PLAIN)
        os.chdir(folder)
        _read()
        folders.append(folder)
    store = json.loads((tmp_path / "cache" / "reach" / configfile._WithoutReach.NAME).read_text())
    assert len(store) == keep
    assert str(folders[-1] / "pyproject.toml") in store and str(folders[0] / "pyproject.toml") not in store


def test_reach_plugins_reads_the_project_file_once(tmp_path):
    """Fails before: ``reach plugins`` parsed ./pyproject.toml on every run, twice."""
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text(PLAIN)
    probe = ("import sys\nsys.argv = ['reach', 'plugins']\nfrom reach_core import configfile, entry_index\n"
             "entry_index.RACY_NS = 0  # the file was written just now\n"
             "real = configfile.read_file\nn = []\n"
             "configfile.read_file = lambda p: (n.append(p), real(p))[1]\n"
             "from reach_core.__main__ import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
             "sys.stderr.write(f'parses={len(n)} tomllib={\"tomllib\" in sys.modules}')\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "REACH_PLUGINS": ""}
    env.pop("REACH_CONFIG", None)
    runs = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env,
                           timeout=60).stderr for _ in range(2)]
    assert runs[0].endswith("parses=1 tomllib=True"), runs[0]
    assert runs[1].endswith("parses=0 tomllib=False"), runs[1]
