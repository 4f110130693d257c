"""reach-sql: read-only queries, guarded writes and schema for SQLAlchemy databases.

The guards live in the database: SQLite reads use a read-only file handle and
an authorizer, PostgreSQL reads a SELECT-only role in a READ ONLY transaction
with a statement timeout. See docs/plugins/reach-sql.md.
"""

from .database import Database
from .settings import SqlSettings

__all__ = ["Database", "SqlSettings"]
