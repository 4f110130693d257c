"""SQLite: a WHERE written after a non-ASCII space is part of a name, not a clause.

sqlglot skips every character ``str.isspace()`` accepts (U+00A0, U+2028, U+3000 ...);
SQLite's tokenizer reads every non-ASCII character as part of an identifier. So
``DELETE FROM t AS x<NBSP>WHERE<NBSP>archived`` was a DELETE *with* a WHERE clause to
the classifier and, to SQLite, a DELETE aliased ``x<NBSP>WHERE<NBSP>archived`` with
none: every row went through ``sql_execute``. The same holds for the alias of an
``UPDATE … FROM (subquery) AS s`` and under a CTE. Such characters are refused
outside quotes and comments; inside them (text, quoted names) they stay allowed.
"""

from __future__ import annotations

import pytest
from reach_sql.classify import classify

# Every character Python (and so sqlglot) calls a space but SQLite does not.
FOREIGN_SPACES = ["\x85", "\xa0", "\u1680", "\u2000", "\u2003", "\u2007", "\u200a", "\u2028", "\u2029",
                  "\u202f", "\u205f", "\u3000", "\x0b", "\x1c", "\x1f"]

TEMPLATES = [
    "DELETE FROM {t} AS x{s}WHERE{s}owner",
    "delete from {t} as x{s}where{s}owner",
    "DELETE FROM {t} AS x{s}WHERE{s}owner RETURNING id",
    "DELETE FROM {t} AS x {s}WHERE{s}owner",
    "WITH d AS (SELECT 1) DELETE FROM {t} AS y{s}WHERE{s}owner",
    "UPDATE {t} SET balance = '0' FROM (SELECT 1) AS s{s}WHERE{s}owner",
    "UPDATE {t} SET balance = '0' FROM (SELECT 1 WHERE 1) AS s{s}WHERE{s}balance",
    "UPDATE OR IGNORE {t} SET balance = '0' FROM (SELECT 1) AS s{s}WHERE{s}owner",
]

CASES = [tpl.replace("{s}", s) for tpl in TEMPLATES for s in FOREIGN_SPACES]


@pytest.mark.parametrize("sql", CASES)
def test_classifier_refuses_a_foreign_space_outside_quotes(sql: str) -> None:
    verdict = classify(sql.format(t="accounts"), "sqlite")
    assert verdict.kind == "dangerous", (sql, verdict)
    assert "outside quotes" in verdict.reason or "could not be parsed" in verdict.reason, verdict.reason


# end to end: one template per character, and every template with NBSP
E2E = sorted({*(TEMPLATES[i % len(TEMPLATES)].replace("{s}", s) for i, s in enumerate(FOREIGN_SPACES)),
              *(tpl.replace("{s}", "\xa0") for tpl in TEMPLATES)})


@pytest.mark.parametrize("sql", E2E)
async def test_sqlite_changes_nothing(sqlite_backend, sql: str) -> None:
    backend = sqlite_backend
    before = backend.snapshot()
    result = await backend.reach.invoke("sql_execute", {"sql": sql.format(t=backend.table)})
    assert not result.ok, f"ran: {sql!r} -> {result.content}"
    assert result.error.code == "execution_failed"
    assert "sql_admin" in result.error.message or "refused" in result.error.message
    assert backend.snapshot() == before


def test_the_control_sqlite_itself_reads_the_alias() -> None:
    """Why this is a hole: SQLite runs the statement as an unbounded DELETE."""
    import sqlite3

    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (id INTEGER, archived INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, 0)", [(1,), (2,), (3,)])
    assert con.execute("DELETE FROM t AS x\xa0WHERE\xa0archived").rowcount == 3


ALLOWED = [
    ("UPDATE {t} SET owner = 'a\xa0b' WHERE id = 1", 1),  # inside a string
    ("UPDATE {t} SET owner = 'it''s\u3000ok' WHERE id = 1", 1),
    ("UPDATE {t} SET owner = 'x' WHERE id = 1 -- note\xa0here", 1),  # inside comments
    ("UPDATE {t} SET owner = 'x' /* \u2028 */ WHERE id = 2", 1),
    ("UPDATE {t} SET owner = \"owner\" WHERE id = 1 AND 'x\xa0' = 'x\xa0'", 1),
    ("INSERT INTO {t} VALUES (9, '\xa0\u3000', '1')", 1),
    ("UPDATE [{t}] SET [owner] = '\u2003' WHERE [id] = 3", 1),
    ("UPDATE {t} SET owner = 'x'\tWHERE\fid = 1\r\n", 1),  # SQLite's own spaces
]


@pytest.mark.parametrize(("sql", "rows"), ALLOWED)
async def test_foreign_spaces_inside_quotes_and_comments_still_run(sqlite_backend, sql: str, rows: int) -> None:
    result = await sqlite_backend.reach.invoke("sql_execute", {"sql": sql.format(t=sqlite_backend.table)})
    assert result.ok, (sql, result.error)
    assert result.content["rows_changed"] == rows


def test_refusal_names_the_character() -> None:
    reason = classify("DELETE FROM t AS x\u3000WHERE\u3000a", "sqlite").reason
    assert "U+3000" in reason and "plain spaces" in reason


# A look-alike WHERE (fullwidth, Cyrillic, Greek, Cherokee letters, combining marks, invisible
# characters inside) is a name to every engine and to the classifier alike: never a WHERE.
LOOKALIKE_WHERE = ["ＷＨＥＲＥ", "WНERE", "WHЕRE", "wһere", "ᎳHERE", "WHERE\u0301", "W\u200bHERE", "WH\u00adERE",
                   "WHΕRE", "ｗｈｅｒｅ"]
LOOKALIKE_TEMPLATES = ["DELETE FROM t {w} id = 1", "DELETE FROM t AS x {w} id = 1", "UPDATE t SET a = 1 {w} id = 1",
                       "DELETE FROM t AS x {w} archived", "UPDATE t SET a = b {w} c"]


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mysql"])
@pytest.mark.parametrize("sql", [t.format(w=w) for t in LOOKALIKE_TEMPLATES for w in LOOKALIKE_WHERE])
def test_a_look_alike_where_is_no_where(dialect: str, sql: str) -> None:
    assert classify(sql, dialect).kind == "dangerous", sql
