"""The write path's statement classifier (see reach_sql.classify for why it exists)."""

from __future__ import annotations

import pytest
from reach_sql.classify import classify


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO t VALUES (1)",
        "UPDATE t SET a = 1 WHERE id = 2",
        "delete from t where id in (select id from u)",
        "INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET a = 2",
        "INSERT INTO t VALUES ('; DROP TABLE t; --')",
        "WITH d AS (DELETE FROM t WHERE a = 1 RETURNING *) SELECT * FROM d",
        "UPDATE t SET a = $$ where $$ WHERE id = 1;",
    ],
)
def test_plain_data_changes_are_writes(sql: str) -> None:
    assert classify(sql).kind == "write"


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("DELETE FROM t", "DELETE without a WHERE"),
        ("UPDATE t SET a = 1 -- WHERE id = 1", "UPDATE without a WHERE"),
        ("UPDATE t SET a = 1 /* WHERE id = 1 */", "UPDATE without a WHERE"),
        ("UPDATE t SET a = 'WHERE'", "UPDATE without a WHERE"),
        ("UPDATE t SET a = (SELECT b FROM u WHERE u.id = 1)", "UPDATE without a WHERE"),
        ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "DELETE without a WHERE"),
        ("DROP TABLE t", "DROP"),
        ("create index i on t(a)", "CREATE"),
        ("TRUNCATE t", "TRUNCATE"),
        ("DO $$ BEGIN DELETE FROM t; END $$", "DO"),
        ("UPDATE t SET a = 1 WHERE id = 1; DROP TABLE t", "more than one statement"),
    ],
)
def test_dangerous_statements_name_the_reason(sql: str, reason: str) -> None:
    verdict = classify(sql)
    assert verdict.kind == "dangerous" and reason in verdict.reason
