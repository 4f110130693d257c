"""The core's conformance checks, with both tools pointed at the local servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reach_core.testing import ConnectorConformance


class TestNotifyConformance(ConnectorConformance):
    plugin = "reach-notify"

    @pytest.fixture(autouse=True)
    def _servers(self, receiver, smtp) -> None:
        self.receiver, self.smtp = receiver, smtp

    def config(self, tmp_path: Path) -> dict[str, Any]:
        return {
            **super().config(tmp_path),
            "plugins": {
                "reach-notify": {
                    "allow_recipients": ["example.com"],
                    "webhooks": {"ops": {"url": self.receiver.url("/ok")}},
                    "smtp": {
                        "host": "127.0.0.1",
                        "port": self.smtp.port,
                        "from": "reach@example.com",
                    },
                }
            },
        }

    def example_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("send_webhook", {"channel": "ops", "text": "conformance"}),
            ("send_email", {"to": "ops@example.com", "subject": "conformance", "body": "hello"}),
        ]

    def test_examples_really_arrived(self, tmp_path: Path) -> None:
        self.test_example_calls_succeed(tmp_path)
        assert [r.body for r in self.receiver.received] == [{"text": "conformance"}]
        assert [m.message["Subject"] for m in self.smtp.inbox.delivered] == ["conformance"]
