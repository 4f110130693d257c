"""The core's conformance checks, against a seeded SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from reach_core.testing import ConnectorConformance


class TestSqlConformance(ConnectorConformance):
    plugin = "reach-sql"

    def config(self, tmp_path: Path) -> dict[str, Any]:
        path = tmp_path / "shop.sqlite3"
        with sqlite3.connect(path) as con:
            con.execute("CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, name TEXT)")
            con.execute("INSERT OR IGNORE INTO items VALUES (1, 'tea')")
        return {
            "reach": {"data_dir": str(tmp_path / "data")},
            "plugins": {"reach-sql": {"url": f"sqlite:///{path}", "admin_tool": True}},
        }

    def example_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("sql_schema", {}),
            ("sql_query", {"sql": "SELECT name FROM items WHERE id = :id", "params": {"id": 1}}),
            ("sql_execute", {"sql": "UPDATE items SET name = :n WHERE id = 1", "params": {"n": "茶"}}),
        ]
