"""The bridge tests' real parts (weather service, scripted model server, a Reach with
this bridge) live in plugins/bridge_testing.py, shared by the three bridges."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import reach_openai_agents.plugin as bridge_plugin

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # plugins/: bridge_testing.py

from bridge_testing import make_reach, saver, scripted, weather_service  # noqa: E402,F401 - fixtures

API_KEY = "sk-scripted-openai-agents"


@pytest.fixture
def bridge() -> tuple[str, object, str]:
    return "reach-openai-agents", bridge_plugin, API_KEY
