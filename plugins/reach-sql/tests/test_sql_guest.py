"""reach-sql is a guest: classifying a statement sqlglot can only read as an opaque ``Command``
neither prints sqlglot's warning (Python's last-resort handler would, on the host's stderr,
with the model's SQL in it) nor changes the ``sqlglot`` logger, which is the host's too."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from reach_sql.classify import classify

# statements sqlglot 30 reads as a Command (it logs "contains unsupported syntax" for each)
COMMANDS = [
    ("sqlite", "REINDEX t"), ("sqlite", "SAVEPOINT a"), ("sqlite", "RELEASE a"),
    ("sqlite", "REPLACE INTO t VALUES (1)"), ("mysql", "SAVEPOINT a"), ("mysql", "RELEASE a"),
    ("mysql", "LOCK TABLES t WRITE"), ("mysql", "CREATE VIRTUAL TABLE v USING fts5(a)"),
    ("mysql", "REPLACE INTO t VALUES (1)"), ("mysql", "UPDATE t SET a = 'x\\' -- ' WHERE id = 1"),
]


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.parametrize(("dialect", "sql"), COMMANDS)
def test_a_command_fallback_is_classified_quietly(dialect: str, sql: str, capfd: Any) -> None:
    sqlglot = logging.getLogger("sqlglot")
    kept = _Kept()
    level = sqlglot.level
    sqlglot.setLevel(logging.INFO)  # the host's choice for the sqlglot it uses too
    state = (sqlglot.level, list(sqlglot.handlers), list(sqlglot.filters), sqlglot.propagate, sqlglot.disabled)
    logging.getLogger().addHandler(kept)  # a host listening to everything
    try:
        verdict = classify(sql, dialect)
        after = (sqlglot.level, sqlglot.handlers, sqlglot.filters, sqlglot.propagate, sqlglot.disabled)
    finally:
        logging.getLogger().removeHandler(kept)
        sqlglot.setLevel(level)
    assert verdict.kind in ("write", "dangerous")  # a verdict, whatever it is: the statement was read
    assert after == state
    assert [r.getMessage() for r in kept.records if r.name.startswith("sqlglot")] == []
    assert capfd.readouterr() == ("", "")


def test_the_hosts_own_sqlglot_logging_is_untouched(capfd: Any) -> None:
    """A host that uses sqlglot itself still gets sqlglot's warnings after reach classified."""
    import sqlglot

    classify("SAVEPOINT a", "sqlite")
    kept = _Kept()
    logger = logging.getLogger("sqlglot")
    logger.addHandler(kept)
    try:
        sqlglot.parse("SAVEPOINT a", read="sqlite")
    finally:
        logger.removeHandler(kept)
    assert [r.levelno for r in kept.records] == [logging.WARNING]
