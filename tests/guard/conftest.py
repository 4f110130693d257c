"""Fixtures for the guard-rail tests: a Reach with no plugins and a fast backoff,
and the fault-injecting HTTP server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SERVERS = Path(__file__).resolve().parents[1] / "servers"
if str(SERVERS) not in sys.path:  # imported by path: a top-level "tests" package may be someone else's
    sys.path.insert(0, str(SERVERS))

from faulty import FaultyHTTPServer  # noqa: E402

from reach_core import Reach  # noqa: E402


@pytest.fixture
def make_reach(tmp_path):
    """``make_reach(*connectors, **config_sections)`` -> Reach with data in tmp_path."""
    made: list[Reach] = []

    def make(*connectors, data_dir=None, **sections):
        cfg = {k: dict(v) for k, v in sections.items()}
        reach_cfg = cfg.setdefault("reach", {})
        reach_cfg.setdefault("data_dir", str(data_dir or tmp_path / "data"))
        reach_cfg.setdefault("retry_backoff", 0.02)
        reach_cfg.setdefault("log_calls", False)
        r = Reach(cfg, plugins=[])
        for c in connectors:
            r.register(c)
        made.append(r)
        return r

    yield make
    for r in made:
        if r.runtime.store_ is not None:
            r.runtime.store_.close_sync()


@pytest.fixture(scope="module")
def faulty():
    with FaultyHTTPServer() as srv:
        yield srv
