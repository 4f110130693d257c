"""The core's conformance checks for reach-files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reach_core.testing import ConnectorConformance


class TestFilesConformance(ConnectorConformance):
    plugin = "reach-files"

    def config(self, tmp_path: Path) -> dict[str, Any]:
        root = tmp_path / "root"
        (root / "docs").mkdir(parents=True, exist_ok=True)
        (root / "docs" / "a.md").write_text("# A\nhello\n")
        return {"reach": {"data_dir": str(tmp_path / "data")}, "plugins": {"reach-files": {"roots": [str(root)]}}}

    def example_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("list_dir", {}),
            ("read_file", {"path": "docs/a.md"}),
            ("search_files", {"pattern": "*.md", "text": "hello"}),
            ("write_file", {"path": "docs/b.md", "content": "# B\n"}),
        ]
