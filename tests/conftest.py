"""Shared fixtures for reach-core's own tests."""

from __future__ import annotations

import pytest
from reach_test_support import GetWeather, add

from reach_core.testing import make_reach


@pytest.fixture
def reach(tmp_path):
    r = make_reach(data_dir=tmp_path / "data")
    r.register(add)
    r.register(GetWeather())
    return r


@pytest.fixture(autouse=True, scope="session")
def _entry_point_store(tmp_path_factory):
    """``reach plugins`` remembers the installed entry points in ``$XDG_CACHE_HOME/reach``
    (``reach_core.entry_index``): the suite's runs, in process and in subprocesses, keep
    theirs in a directory of the session, not in the home directory."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    yield
    mp.undo()
