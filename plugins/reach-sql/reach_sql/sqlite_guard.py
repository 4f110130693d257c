"""SQLite authorizers: the engine itself decides what a statement may touch.

``PRAGMA query_only`` alone is no guard, since the query can switch it off
again. An authorizer is consulted by SQLite while it *compiles* each
statement, for every table read, every function called, every pragma, so a
denial holds whatever the SQL text looks like (CTEs, triggers, subqueries).

Read connections are additionally opened with ``mode=ro``; the authorizer
covers what read-only files do not: TEMP tables, ATTACH (which can create
files), ``load_extension`` and pragmas that change the connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

Authorizer = Callable[[int, str | None, str | None, str | None, str | None], int]

# Functions no model needs and some attackers want. load_extension is off in
# Python's sqlite3 unless enabled, but the authorizer makes that independent of
# build options; fts3_tokenizer's two-argument form can hand SQLite a pointer.
DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"})

# Pragmas that only describe the schema; SQLAlchemy's inspector needs them for
# sql_schema. Their argument is a table or index name, never a new value.
INTROSPECTION_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
)
# Pragmas read (never set) by SQLAlchemy when it first connects.
READ_SETTING_PRAGMAS = frozenset({"read_uncommitted"})

_READ_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
)
_ROW_WRITE_ACTIONS = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})


def _system_table(name: str | None) -> bool:
    """SQLite's own tables (``sqlite_sequence``, ``sqlite_stat1`` ...): the name is reserved
    for them, in any case. Rewriting ``sqlite_sequence`` makes AUTOINCREMENT hand out ids
    again; forged ``sqlite_stat*`` rows steer the query planner. SQLite's own bookkeeping
    (an AUTOINCREMENT insert) is not a statement the authorizer is asked about."""
    return (name or "").lower().startswith("sqlite_")


def _function_allowed(name: str | None) -> bool:
    return (name or "").lower() not in DENIED_FUNCTIONS


def _pragma_allowed(name: str | None, value: str | None) -> bool:
    name = (name or "").lower()
    return name in INTROSPECTION_PRAGMAS or (name in READ_SETTING_PRAGMAS and value is None)


def read_only_authorizer(
    action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None
) -> int:
    """Allow SELECT, reading columns, recursive CTEs and ordinary functions; deny all else."""
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_OK if _function_allowed(arg2) else sqlite3.SQLITE_DENY
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and _pragma_allowed(arg1, arg2):
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def write_authorizer(*, admin: bool) -> Authorizer:
    """Row changes for ``sql_execute``; schema changes too when ``admin`` (``sql_admin``).

    Both refuse ATTACH/DETACH, savepoints, COMMIT/ROLLBACK sent by the model
    (the tool owns the transaction) and the denied functions; ``sql_execute`` also
    refuses row changes in SQLite's system tables (``sqlite_sequence``, ``sqlite_stat*``),
    as it refuses system-catalog writes on PostgreSQL. ``BEGIN`` stays
    allowed because Python's sqlite3 module issues it implicitly before a DML
    statement, inside the same authorizer window.
    """

    def authorize(
        action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None
    ) -> int:
        if action == sqlite3.SQLITE_FUNCTION:
            return sqlite3.SQLITE_OK if _function_allowed(arg2) else sqlite3.SQLITE_DENY
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_SAVEPOINT):
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_TRANSACTION:
            return sqlite3.SQLITE_OK if (arg1 or "").upper() == "BEGIN" else sqlite3.SQLITE_DENY
        if action in _ROW_WRITE_ACTIONS and not admin and _system_table(arg1):
            return sqlite3.SQLITE_DENY
        if admin or action in _READ_ACTIONS or action in _ROW_WRITE_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA and _pragma_allowed(arg1, arg2):
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    return authorize
