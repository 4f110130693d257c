"""reach-sql: read-only queries, guarded writes and schema for SQLAlchemy databases.

The guards live in the database: SQLite reads use a read-only file handle and
an authorizer, PostgreSQL reads a SELECT-only role in a READ ONLY transaction
with a statement timeout. See docs/plugins/reach-sql.md.
"""

from typing import TYPE_CHECKING

from reach_core.lazy import exports

# Public names and their modules, imported on first access (PEP 562): the entry
# point (reach_sql.plugin) imports this package, and listing plugins must not pay for them.
_EXPORTS = {
    "Database": "database", "SqlSettings": "settings",
}

if TYPE_CHECKING:
    from .database import Database
    from .settings import SqlSettings


__getattr__ = exports(__name__, _EXPORTS)


__all__ = ["Database", "SqlSettings"]
