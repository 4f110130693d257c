"""The tools: sql_schema, sql_query, sql_execute and the optional sql_admin.

Each wraps one :class:`~reach_sql.database.Database` operation, runs it in a
worker thread (the drivers are synchronous) with a timeout that never
exceeds the call's deadline, and turns the outcome into model-ready JSON.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from reach_core import BusinessError, Connector, RetryableError, ToolFailure

from .classify import classify
from .database import Database, Rows, SqlProblem, SqlTimeout, SqlUnavailable
from .pg_session import Abort
from .render import render_rows
from .settings import SqlSettings

_PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "values for :name placeholders in the SQL, e.g. {\"city\": \"Oslo\"}",
    "additionalProperties": {"type": ["string", "number", "integer", "boolean", "null"]},
}

_DIALECT_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mysql": "MySQL", "mssql": "SQL Server"}


class _SqlConnector(Connector):
    """Shared plumbing: the database, the settings and the deadline arithmetic."""

    tags = ("database", "sql")

    def __init__(self, db: Database, settings: SqlSettings) -> None:
        self.db = db
        self.settings = settings

    @property
    def dialect_name(self) -> str:
        return _DIALECT_NAMES.get(self.db.dialect, self.db.dialect)

    def _timeout(self, ctx: Any) -> float:
        """The statement timeout: the configured one, or less when the call's deadline is nearer."""
        timeout = self.settings.statement_timeout
        deadline = getattr(ctx, "deadline", None)
        if deadline is not None:
            remaining = deadline - asyncio.get_running_loop().time()
            timeout = min(timeout, max(0.05, remaining - 0.05))
        return timeout

    async def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a database operation on the database's own threads.

        When the awaiting task is cancelled (the core's deadline passed first), the
        statement is cancelled on the server too, not left running in its thread."""
        abort = Abort()
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.db.executor(), lambda: fn(*args, abort=abort, **kwargs))
        try:
            return await future
        except asyncio.CancelledError:
            abort.fire()
            raise
        except SqlTimeout as exc:
            raise ToolFailure(str(exc), code="timeout") from exc
        except SqlUnavailable as exc:
            raise RetryableError(str(exc)) from exc
        except SqlProblem as exc:
            raise BusinessError(str(exc)) from exc

    def _rows_payload(self, rows: Rows, limit: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "columns": rows.columns,
            "rows": render_rows(rows.rows, self.settings.max_cell_chars),
        }
        notes = []
        if rows.more_rows:
            more = f"at least {rows.more_rows}" if rows.more_rows_capped else str(rows.more_rows)
            out["more_rows"] = rows.more_rows
            if rows.result_full and not rows.cut_values:  # whole rows held back by the byte cap
                notes.append(
                    f"{more} more rows not shown: the answer reached max_result_bytes "
                    f"({self.settings.max_result_bytes} bytes); select fewer columns, or narrow the query "
                    "with WHERE/GROUP BY"
                )
            else:
                notes.append(
                    f"{more} more rows not shown (limit {limit}); narrow the query with WHERE/GROUP BY, "
                    f"or pass a larger limit (at most {self.settings.max_rows})"
                )
        if rows.cut_values:
            out["cut"] = True
            out["cut_values"] = rows.cut_values
            notes.append(
                f"{rows.cut_values} values were cut before fetching: a value may hold at most "
                f"{self.settings.max_value_bytes} bytes and a result {self.settings.max_result_bytes} bytes; "
                "select shorter columns (left(col, 200), length(col)) or fewer rows"
            )
        if notes:
            out["note"] = "; ".join(notes)
        return out


class SqlSchema(_SqlConnector):
    name = "sql_schema"
    risk = "read"
    lint_ignore = ("verb_noun",)  # the name users and prompts know; it reads as "the SQL schema"

    def __init__(self, db: Database, settings: SqlSettings) -> None:
        super().__init__(db, settings)
        self.description = (
            f"List the tables of the {self.dialect_name} database: columns with types, primary and "
            "foreign keys, and row counts. Use when you need to know which tables and columns exist, "
            "before writing SQL for sql_query or sql_execute."
        )
        self.input_schema = {  # type: ignore[misc]
            "type": "object",
            "properties": {"table": {"type": "string", "description": "describe only this table or view"}},
            "additionalProperties": False,
        }

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> Any:
        return await self._run(self.db.schema, params.get("table"), self._timeout(ctx))


class SqlQuery(_SqlConnector):
    name = "sql_query"
    risk = "read"

    def __init__(self, db: Database, settings: SqlSettings) -> None:
        super().__init__(db, settings)
        self.description = (
            f"Run one read-only SELECT on the {self.dialect_name} database and get column names and rows. "
            "Use when the user asks about data stored in the database. "
            "Put values in params and refer to them as :name (WHERE city = :city). "
            f"At most {settings.max_rows} rows come back; the answer says how many more there were."
        )
        self.input_schema = {  # type: ignore[misc]
            "type": "object",
            "properties": {
                "sql": {"type": "string", "minLength": 1,
                        "description": "one SELECT, WITH … SELECT or VALUES statement"},
                "params": _PARAMS_SCHEMA,
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": settings.max_rows,
                    "description": f"rows to return (default {settings.default_limit})",
                },
            },
            "required": ["sql"],
            "additionalProperties": False,
        }

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> Any:
        limit = int(params.get("limit") or self.settings.default_limit)
        rows = await self._run(self.db.query, params["sql"], params.get("params"), limit, self._timeout(ctx))
        return self._rows_payload(rows, limit)


class SqlExecute(_SqlConnector):
    name = "sql_execute"
    risk: Literal["read", "write", "dangerous"] = "write"  # sql_admin below is "dangerous"

    def __init__(self, db: Database, settings: SqlSettings) -> None:
        super().__init__(db, settings)
        self.description = (
            f"Change rows in the {self.dialect_name} database with one INSERT, UPDATE or DELETE "
            "(use when the user asks to add, correct or remove records) "
            "(UPDATE and DELETE need a WHERE clause). Put values in params as :name. Returns the number "
            "of rows changed, and the rows of a RETURNING clause. Schema changes are refused."
        )
        self.input_schema = {  # type: ignore[misc]
            "type": "object",
            "properties": {
                "sql": {"type": "string", "minLength": 1, "description": "one INSERT, UPDATE or DELETE statement"},
                "params": _PARAMS_SCHEMA,
            },
            "required": ["sql"],
            "additionalProperties": False,
        }

    admin = False

    def _check(self, sql: str) -> None:
        verdict = classify(sql, self.db.dialect)
        if verdict.statements == 0:
            raise BusinessError("the SQL is empty; send one INSERT, UPDATE or DELETE statement")
        if verdict.statements > 1:
            raise BusinessError("send exactly one SQL statement per call (no `;` between statements)")
        if verdict.kind == "dangerous" and not self.admin:
            where = (
                "sql_admin can run it after a person confirms"
                if self.settings.admin_tool
                else "an operator can enable sql_admin ([plugins.reach-sql] admin_tool = true) for such statements"
            )
            raise BusinessError(
                f"sql_execute refused this statement: {verdict.reason}. It only changes rows with "
                f"INSERT, or UPDATE/DELETE restricted by WHERE; {where}."
            )

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> Any:
        sql = params["sql"]
        self._check(sql)
        limit = self.settings.max_rows
        rows = await self._run(
            self.db.execute, sql, params.get("params"), admin=self.admin, limit=limit, timeout=self._timeout(ctx)
        )
        out: dict[str, Any] = {
            "rows_changed": rows.rowcount if rows.rowcount is not None and rows.rowcount >= 0 else None
        }
        if rows.columns:
            out.update(self._rows_payload(rows, limit))
        return out


class SqlAdmin(SqlExecute):
    name = "sql_admin"
    risk = "dangerous"

    admin = True

    def __init__(self, db: Database, settings: SqlSettings) -> None:
        super().__init__(db, settings)
        self.description = (
            f"Run one schema-changing or table-wide statement on the {self.dialect_name} database "
            "(CREATE, ALTER, DROP, TRUNCATE, DELETE/UPDATE without WHERE). Use only when the user asks "
            "to change the schema or every row of a table; a person confirms each call. "
            "Use sql_execute for ordinary row changes."
        )
        self.input_schema = {  # type: ignore[misc]
            "type": "object",
            "properties": {
                "sql": {"type": "string", "minLength": 1, "description": "one SQL statement"},
                "params": _PARAMS_SCHEMA,
            },
            "required": ["sql"],
            "additionalProperties": False,
        }
