"""reach-sql hook implementations: settings, tools, clean shutdown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from pathlib import Path

    from .database import Database
    from .settings import SqlSettings

# Only reach_core.hookimpl is imported with this module (``reach plugins`` imports it);
# SQLAlchemy, the connectors and the pydantic settings load when a Reach starts the plugin.

REACH_PLUGIN_NAME = "reach-sql"  # the name when the module is passed to Reach(plugins=[...]) directly
DEFAULT_FILE = "reach-sql.sqlite3"


@hookimpl
def reach_plugin_settings() -> type[SqlSettings]:
    from .settings import SqlSettings

    return SqlSettings


def database_for(settings: SqlSettings, data_dir: Path) -> Database:
    """The configured database, or a SQLite file in the data directory (created empty)."""
    from pathlib import Path

    from .database import Database

    url = settings.url
    create_missing = url is None
    if url is None:
        url = f"sqlite:///{Path(data_dir) / DEFAULT_FILE}"
    return Database(
        url,
        settings.read_url,
        count_cap=settings.count_more_rows_up_to,
        create_missing=create_missing,
        max_value_bytes=settings.max_value_bytes,
        max_result_bytes=settings.max_result_bytes,
        max_chars=settings.max_cell_chars,
        max_write_value_bytes=settings.max_write_value_bytes,
        max_write_bytes=settings.max_write_bytes,
    )


@hookimpl
def reach_register_tools(register: Any, settings: SqlSettings | None, reach: Any) -> None:
    from .connectors import SqlAdmin, SqlExecute, SqlQuery, SqlSchema
    from .settings import SqlSettings

    settings = settings or SqlSettings()
    db = database_for(settings, reach.data_dir)
    register(SqlSchema(db, settings))
    register(SqlQuery(db, settings))
    register(SqlExecute(db, settings))
    if settings.admin_tool:
        register(SqlAdmin(db, settings))


@hookimpl
def reach_shutdown(reach: Any) -> None:
    """Close pooled connections; the engines are reopened if the tools run again."""
    from .connectors import _SqlConnector

    seen: set[int] = set()
    for conn in reach.connectors():
        if isinstance(conn, _SqlConnector) and id(conn.db) not in seen:
            seen.add(id(conn.db))
            conn.db.dispose()
