"""Lazy public names for packages (PEP 562).

``reach plugins`` imports every plugin's entry-point module, and with it the
plugin's package: a package that imported its public classes up front would make
listing plugins pay for pydantic, httpx, SQLAlchemy... So a plugin's
``__init__`` names its exports and where they live, and each is imported on
first use::

    from reach_core.lazy import exports

    __getattr__ = exports(__name__, {"Database": "database", "SqlSettings": "settings"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["exports"]


def exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``names`` maps a public name to the
    submodule that defines it (relative to ``package``; a leading dot is optional). A name is imported once and
    then kept in the package's namespace."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module if module.startswith(".") else f".{module}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
