"""The core's connector conformance checks, against the demo server over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reach_core.testing import ConnectorConformance


class TestMcpConformance(ConnectorConformance):
    plugin = "reach-mcp"
    url = ""

    @pytest.fixture(autouse=True)
    def _server(self, demo_http: str) -> None:
        type(self).url = demo_http

    def config(self, tmp_path: Path) -> dict[str, Any]:
        return {
            "reach": {"data_dir": str(tmp_path / "data"), "log_calls": False},
            "plugins": {"load": ["reach-mcp"], "reach-mcp": {"servers": {"demo": {"url": self.url}}}},
        }

    def example_calls(self) -> list[tuple[str, dict[str, Any]]]:
        # (not demo__echo: ConnectorConformance json-decodes to_json(), and a str result is sent as is)
        return [("demo__weather", {"city": "Lima"}), ("demo__create_note", {"title": "t"})]
