"""MySQL and MariaDB: the classifier must read a statement the way the server may.

**Executable comments.** MySQL and MariaDB run the text of ``/*! … */``; the classifier must not skip it.

sqlglot (like any SQL parser) reads ``/*! … */`` as a comment. MySQL runs its text
as part of the statement (``/*!50000 … */`` from that server version on; MariaDB also
``/*M! … */``). So ``/*!50000 DROP TABLE t */`` was an empty statement (kind
``write``) to ``sql_execute`` and a DROP TABLE to the server; ``… WHERE id = 1 /*! OR
1=1 */`` a bounded DELETE to the classifier and an unbounded one to MySQL. Such
comments are refused on the MySQL family; on SQLite and PostgreSQL they are plain
comments and change nothing.

**Backslashes.** Whether ``\\'`` ends a string depends on the server's ``sql_mode``
(``NO_BACKSLASH_ESCAPES``), which reach cannot see: ``SET owner = 'x\\' -- ' WHERE id = 1``
has a WHERE with backslash escapes and none without. A statement holding a backslash
must pass both readings.
"""

from __future__ import annotations

import pytest
from reach_sql.classify import classify

OPENERS = ["/*!", "/*!50000", "/*!80000 ", "/*!999999", "/*M!", "/*m!", "/*M!100000", "/*!\n", "/*!\t"]
TEMPLATES = [
    "{o} DROP TABLE accounts */",
    "{o} DROP TABLE accounts */ SELECT 1",
    "SELECT 1 {o} INTO OUTFILE '/tmp/reach-x' */",
    "DELETE FROM accounts WHERE id = 1 {o} OR 1=1 */",
    "UPDATE accounts SET owner = 'x' WHERE id = 1 {o} OR 1=1 */",
    "UPDATE accounts SET owner = 'x' {o} , balance = 0 */ WHERE id = 1",
    "INSERT INTO accounts VALUES (9, 'x', 1) {o} ON DUPLICATE KEY UPDATE balance = 0 */",
    "UPDATE accounts SET owner = 'x' WHERE id = 1 {o}; DROP TABLE accounts */",
    "{o} */ DELETE FROM accounts WHERE id = 1",
    "DELETE FROM accounts WHERE owner = '{o} x */'",  # inside a string too: values go as parameters
]
CASES = [t.format(o=o) for t in TEMPLATES for o in OPENERS]


@pytest.mark.parametrize("dialect", ["mysql", "mariadb"])
@pytest.mark.parametrize("sql", CASES)
def test_executable_comments_are_refused(dialect: str, sql: str) -> None:
    verdict = classify(sql, dialect)
    assert verdict.kind == "dangerous", (sql, verdict)
    assert "/*!" in verdict.reason


@pytest.mark.parametrize("dialect", ["mysql", "mariadb"])
@pytest.mark.parametrize("sql", ["UPDATE accounts SET owner = 'x' /* a note */ WHERE id = 1",
                                 "UPDATE accounts SET owner = 'x' WHERE id = 1 -- done",
                                 "UPDATE accounts SET owner = 'x' WHERE id = 1 # done",
                                 "UPDATE /*+ NO_INDEX_MERGE(accounts) */ accounts SET owner = 'x' WHERE id = 1",
                                 "DELETE FROM accounts WHERE owner = '!*/'"])
def test_ordinary_comments_still_pass(dialect: str, sql: str) -> None:
    assert classify(sql, dialect).kind == "write"


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_elsewhere_a_bang_comment_is_a_comment(dialect: str) -> None:
    assert classify("UPDATE accounts SET owner = 'x' /*! note */ WHERE id = 1", dialect).kind == "write"
    assert classify("DELETE FROM accounts /*! WHERE id = 1 */", dialect).kind == "dangerous"


@pytest.mark.parametrize("sql", ["UPDATE {t} SET owner = 'x' /*! note */ WHERE id = 1",
                                 "UPDATE {t} SET owner = 'x' WHERE id = 1 /*!50000 note */"])
async def test_a_bang_comment_still_runs_on_sqlite_and_postgres(backend, sql: str) -> None:
    r = await backend.reach.invoke("sql_execute", {"sql": sql.format(t=backend.table)})
    assert r.ok, r.error
    assert r.content["rows_changed"] == 1


BACKSLASH_TRICKS = [
    "UPDATE accounts SET owner = 'x\\' -- ' WHERE id = 1",
    "UPDATE accounts SET owner = 'x\\' # ' WHERE id = 1",
    "UPDATE accounts SET owner = 'x\\' /* ' WHERE id = 1 -- */",
    "DELETE FROM accounts WHERE owner = 'x\\' OR 'a' = 'a' -- ' AND id = 1",
    "UPDATE accounts SET owner = 'x\\'; DROP TABLE accounts; -- ' WHERE id = 1",
    "UPDATE accounts SET owner = \"x\\\" -- \" WHERE id = 1",
    "UPDATE accounts SET owner = 'a\\\\\\' -- ' WHERE id = 1",
    "DELETE FROM accounts WHERE owner = 'it\\'s' -- ' AND id = 1",
]


@pytest.mark.parametrize("dialect", ["mysql", "mariadb"])
@pytest.mark.parametrize("sql", BACKSLASH_TRICKS)
def test_a_where_only_backslash_escapes_keep_is_refused(dialect: str, sql: str) -> None:
    verdict = classify(sql, dialect)
    assert verdict.kind == "dangerous", (sql, verdict)


@pytest.mark.parametrize("dialect", ["mysql", "mariadb"])
@pytest.mark.parametrize("sql", ["UPDATE accounts SET owner = 'a\\\\b' WHERE id = 1",  # a\\b: same either way
                                 "UPDATE accounts SET owner = 'it''s' WHERE id = 1",
                                 "UPDATE accounts SET owner = 'C:\\\\temp' WHERE id = 1",
                                 "DELETE FROM accounts WHERE owner LIKE 'a\\_b' AND id = 1"])
def test_backslashes_that_read_the_same_either_way_pass(dialect: str, sql: str) -> None:
    assert classify(sql, dialect).kind == "write", classify(sql, dialect)
