"""reach-sql: read-only queries, guarded writes and schema for SQLAlchemy databases.

The guards live in the database: SQLite reads use a read-only file handle and
an authorizer, PostgreSQL reads a SELECT-only role in a READ ONLY transaction
with a statement timeout. See docs/plugins/reach-sql.md.
"""

from typing import TYPE_CHECKING, Any

# Public names and their modules, imported on first access (PEP 562): the entry
# point (reach_sql.plugin) imports this package, and listing plugins must not pay for them.
_EXPORTS = {
    "Database": "database", "SqlSettings": "settings",
}

if TYPE_CHECKING:
    from .database import Database
    from .settings import SqlSettings


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reach_sql' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = ["Database", "SqlSettings"]
