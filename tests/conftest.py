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
