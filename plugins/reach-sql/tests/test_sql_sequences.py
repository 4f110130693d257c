"""PostgreSQL: ``setval`` is ``ALTER SEQUENCE … RESTART`` written as a function.

``ALTER SEQUENCE s RESTART`` is refused to ``sql_execute`` as a schema change, but
``SELECT setval('s', 1, false)`` did the same and ran: the sequence behind an id
column handed out ids it already gave. Refused now in every spelling and call site;
``nextval`` (what an INSERT with a serial column does) still runs.
"""

from __future__ import annotations

import pytest
from reach_sql.classify import classify

CALLS = ["setval('s', 1)", "setval('s', 1, false)", "setval('s'::regclass, 1)", "setval(CAST('s' AS regclass), 1)"]


def _spellings(call: str) -> list[str]:
    rest = call.split("(", 1)[1]
    return [call, f"pg_catalog.{call}", f'"setval"({rest}', f"SETVAL({rest}", f'U&"setv\\0061l"({rest}',
            f'PG_CATALOG."setval"({rest}', f"SetVal ({rest}"]


SITES = ["SELECT {f}", "UPDATE t SET a = ({f})::text WHERE id = 1", "INSERT INTO t VALUES (({f})::int)",
         "DELETE FROM t WHERE id = ({f})", "WITH c AS (SELECT {f} AS v) SELECT * FROM c",
         "SELECT * FROM ROWS FROM ({f}) AS r",
         "INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET a = ({f})::text"]

CASES = sorted({site.format(f=s) for call in CALLS for s in _spellings(call) for site in SITES[:2]}
               | {site.format(f=call) for call in CALLS for site in SITES})


@pytest.mark.parametrize("sql", CASES)
def test_setval_is_refused_on_the_write_path(sql: str) -> None:
    verdict = classify(sql, "postgresql")
    assert verdict.kind == "dangerous" and "not allowed" in verdict.reason, (sql, verdict)


@pytest.mark.parametrize("sql", ["SELECT nextval('s')", "INSERT INTO t VALUES (nextval('s'))",
                                 "SELECT currval('s')", "SELECT lastval()", "SELECT 'setval'"])
def test_nextval_and_friends_still_run(sql: str) -> None:
    assert classify(sql, "postgresql").kind == "write"


@pytest.mark.parametrize("call", ["setval('{s}', 1, false)", "pg_catalog.setval('{s}'::regclass, 1)",
                                  'U&"setv\\0061l"(\'{s}\', 1)'])
@pytest.mark.parametrize("site", ["select", "inside_update"])
async def test_the_sequence_stays_where_it_was(postgresql_backend, call: str, site: str) -> None:
    backend = postgresql_backend
    seq = f"{backend.table}_seq"
    backend.owner_exec(f"CREATE SEQUENCE {seq}")
    try:
        backend.owner_exec(f"SELECT nextval('{seq}'), nextval('{seq}')")
        c = call.format(s=seq)
        sql = f"SELECT {c}" if site == "select" else f"UPDATE {backend.table} SET owner = 'x' WHERE id = ({c})"
        result = await backend.reach.invoke("sql_execute", {"sql": sql})
        assert not result.ok, (sql, result.content)
        assert "not allowed" in result.error.message
        assert backend.owner_exec(f"SELECT last_value FROM {seq}") == [(2,)]
    finally:
        backend.owner_exec(f"DROP SEQUENCE {seq}")
