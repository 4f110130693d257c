"""``[plugins.reach-sql]`` settings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class SqlSettings(BaseModel):
    """How reach-sql reaches its database and how much it hands back.

    ``url`` is the SQLAlchemy URL used for writes (and for reads on SQLite,
    reopened read-only). ``read_url`` is the account reads use; on PostgreSQL
    point it at a role with SELECT rights only. Without ``url`` the plugin uses
    a SQLite file ``reach-sql.sqlite3`` in the reach data directory.
    """

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, description="SQLAlchemy URL, e.g. postgresql+psycopg://app@db/shop")
    read_url: str | None = Field(default=None, description="URL of a SELECT-only account for sql_query/sql_schema")
    default_limit: int = Field(default=50, ge=1, description="rows returned when the call gives no limit")
    max_rows: int = Field(default=500, ge=1, description="the largest limit a call may ask for")
    max_cell_chars: int = Field(default=500, ge=16, description="longer text values are cut with a marker")
    count_more_rows_up_to: int = Field(default=10_000, ge=0, description="stop counting hidden rows here")
    max_value_bytes: int = Field(
        default=64 * 1024, ge=1024, description="a longer value is cut before it is fetched (per value)"
    )
    max_result_bytes: int = Field(
        default=8 * 1024 * 1024, ge=4096, description="values past this many bytes in one result are not fetched"
    )
    max_write_value_bytes: int = Field(
        default=16 * 1024 * 1024, ge=1024,
        description="sql_execute: the longest value one statement may write (SQLite: may build)",
    )
    max_write_bytes: int = Field(
        default=64 * 1024 * 1024, ge=65536,
        description="sql_execute: how much one statement may grow the tables it writes",
    )
    statement_timeout: float = Field(default=10.0, gt=0, description="seconds one statement may run")
    admin_tool: bool = Field(
        default=False, description="register sql_admin (risk dangerous) for DDL and unbounded changes"
    )

    @field_validator("url", "read_url")
    @classmethod
    def _file_not_memory(cls, value: str | None) -> str | None:
        """An in-memory SQLite database has no second, read-only connection to the same data."""
        if value and value.lower().startswith("sqlite") and (
            value.rstrip("/").endswith(":") or ":memory:" in value or value.rstrip().endswith("sqlite://")
        ):
            raise ValueError("reach-sql needs a SQLite file, e.g. sqlite:////srv/app/shop.sqlite3; "
                             "in-memory is not supported")
        return value
