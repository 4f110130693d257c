"""The public API has one source: ``reach_core._EXPORTS``. ``__all__``, the lazy imports and
the TYPE_CHECKING imports (what type checkers and IDEs read) must all say the same."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import reach_core

INIT = Path(reach_core.__file__)


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    names: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1, ast.dump(node)
        for alias in node.names:
            names[alias.asname or alias.name] = str(node.module)
    return names


def test_type_checking_imports_are_the_export_table():
    assert _type_checking_imports() == reach_core._EXPORTS


def test_all_is_the_export_table():
    assert sorted(reach_core.__all__) == sorted([*reach_core._EXPORTS, "__version__"])
    assert len(set(reach_core.__all__)) == len(reach_core.__all__)


def test_every_exported_name_imports_from_its_module():
    for name, module in reach_core._EXPORTS.items():
        value = getattr(reach_core, name)
        assert value is getattr(importlib.import_module(f"reach_core.{module}"), name), name
