"""The core's conformance checks, on reach-http loaded through its entry point."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_testserver import Server

from reach_core.testing import ConnectorConformance

PETSTORE3 = Path(__file__).parent / "data" / "petstore3" / "openapi.json"


class TestReachHttpConformance(ConnectorConformance):
    plugin = "reach-http"
    port = 0

    @pytest.fixture(autouse=True)
    def _server(self) -> Iterator[None]:
        server = Server()
        type(self).port = server.port
        yield
        server.stop()

    def config(self, tmp_path: Path) -> dict[str, Any]:
        base = f"http://127.0.0.1:{self.port}"
        return {
            "reach": {"data_dir": str(tmp_path / "data"), "retry_backoff": 0.01},
            "plugins": {"reach-http": {"services": {
                "demo": {"base_url": base, "allow_private": True, "description": "local echo service"},
                "pets": {"openapi": str(PETSTORE3), "base_url": base + "/v3", "allow_private": True},
            }}},
        }

    def example_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("http_get", {"service": "demo", "path": "/echo", "query": {"q": "hello"}}),
            ("http_request", {"service": "demo", "method": "POST", "path": "/echo", "json": {"a": 1}}),
            ("getPetById", {"petId": 1}),
            ("findPetsByStatus", {"status": "available"}),
            ("addPet", {"body": {"name": "Nemo", "photoUrls": []}}),
        ]
