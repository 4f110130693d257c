"""PostgreSQL calls a function without the call syntax: ``(value).f`` and ``alias.f``.

When a name after a value is no field of it, PostgreSQL reads it as a call of the
function of that name with the value as its only argument (attribute notation):
``SELECT (42::bigint).pg_advisory_lock`` takes an advisory lock, and with a scalar
function in FROM (``FROM CAST(16400 AS oid) AS g``, ``FROM unnest(...) AS g``) the alias
is that value, so ``g.lo_unlink`` deletes a large object. The parse tree holds an
``A_Indirection`` or a ``ColumnRef`` there, no ``FuncCall``, so the refused-function
check never saw them: through ``sql_execute`` (the owner role) they ran, and
``sql_query`` relied on the read role's rights alone. Refused now in both notations,
every spelling, every place a value can stand; ordinary columns and composite fields
still read.
"""

from __future__ import annotations

import pytest
from reach_sql.classify import classify, read_refusal

# one-argument functions from the refused list and families
FUNCTIONS = {
    "pg_advisory_lock": "424242::bigint", "pg_try_advisory_lock": "424242::bigint",
    "pg_advisory_xact_lock": "424242::bigint", "pg_advisory_unlock": "424242::bigint",
    "pg_advisory_lock_shared": "424242::bigint", "pg_cancel_backend": "pg_backend_pid()",
    "pg_terminate_backend": "pg_backend_pid()", "lo_unlink": "1::oid", "lo_create": "0::oid", "lo_creat": "-1",
    "lo_get": "1::oid", "setseed": "0.5::float8", "ts_stat": "'SELECT 1'::text", "pg_read_file": "'/etc/passwd'::text",
    "pg_ls_dir": "'.'::text", "pg_stat_file": "'x'::text", "pg_import_snapshot": "'x'::text",
    "dblink_connect": "'dbname=x'::text", "dblink_exec": "'DELETE FROM t'::text",
    "pg_stat_reset_single_table_counters": "1::oid",
}


def _indirections(fn: str, arg: str) -> list[str]:
    return [f"({arg}).{fn}", f'({arg})."{fn}"', f"({arg}).{fn.upper()}", f"( {arg} ) . {fn}",
            f"(({arg})).{fn}", f"(SELECT {arg}).{fn}", f"(CAST({arg.split('::')[0]} AS text)).{fn}",
            f"({arg}).\n/* c */ {fn}", f"({arg}).U&\"{_escaped(fn)}\""]


def _escaped(fn: str) -> str:
    return "".join(f"\\{ord(c):04x}" if c == "_" else c for c in fn)


def _aliases(fn: str, arg: str) -> list[str]:
    """``alias.fn`` with a scalar function in FROM; the template's ``{from}`` gets the FROM item."""
    return [f"g.{fn}|CAST({arg} AS text) AS g", f'g."{fn}"|unnest(ARRAY[{arg}]) AS g',
            f"G.{fn.upper()}|generate_series(1, 1) AS g", f'"g".{fn}|ROWS FROM (lower({arg}::text)) AS g']


READ_SITES = ["SELECT {e}", "SELECT 1 WHERE {e} IS NOT NULL", "WITH c AS (SELECT {e} AS v) SELECT * FROM c",
              "SELECT * FROM (SELECT {e}) AS s", "SELECT 1 ORDER BY {e}", "VALUES ({e})"]
WRITE_SITES = ["SELECT {e}", "UPDATE t SET a = ({e})::text WHERE id = 1", "INSERT INTO t VALUES (({e})::text)",
               "DELETE FROM t WHERE id = 1 RETURNING {e}",
               "INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET a = ({e})::text"]

INDIRECT = [e for fn, arg in FUNCTIONS.items() for e in _indirections(fn, arg)]
ALIASED = [e for fn, arg in FUNCTIONS.items() for e in _aliases(fn, arg)]
READ_CASES = sorted({site.format(e=e) for e in INDIRECT for site in READ_SITES[:2]}
                    | {site.format(e=e) for e in INDIRECT[:9] for site in READ_SITES}
                    | {f"SELECT {e.split('|')[0]} FROM {e.split('|')[1]}" for e in ALIASED}
                    | {f"SELECT 1 FROM t, {e.split('|')[1]} WHERE {e.split('|')[0]} IS NULL" for e in ALIASED})
WRITE_CASES = sorted({site.format(e=e) for e in INDIRECT for site in WRITE_SITES[:2]}
                     | {site.format(e=e) for e in INDIRECT[:9] for site in WRITE_SITES}
                     | {f"UPDATE t SET a = ({e.split('|')[0]})::text FROM {e.split('|')[1]} WHERE t.id = 1"
                        for e in ALIASED}
                     | {f"SELECT {e.split('|')[0]} FROM {e.split('|')[1]}" for e in ALIASED})


@pytest.mark.parametrize("sql", READ_CASES)
def test_attribute_calls_are_refused_on_the_read_path(sql: str) -> None:
    why = read_refusal(sql)
    assert why is not None and "not allowed" in why, sql


@pytest.mark.parametrize("sql", WRITE_CASES)
def test_attribute_calls_are_refused_on_the_write_path(sql: str) -> None:
    verdict = classify(sql, "postgresql")
    assert verdict.kind == "dangerous" and "not allowed" in verdict.reason, (sql, verdict)


HONEST = [
    "SELECT t.owner, t.balance FROM accounts AS t WHERE t.id = 1",
    "SELECT accounts.owner FROM accounts",
    "SELECT public.accounts.owner FROM public.accounts",
    "SELECT (p).x FROM (SELECT point(1, 2) AS p) s",
    "SELECT (ROW(1, 'a')::record) IS NOT NULL",
    "SELECT (information_schema._pg_expandarray(ARRAY[1])).n",
    "SELECT g.g FROM generate_series(1, 3) AS g",
    "SELECT lo_bound FROM ranges",
    "SELECT (a).lower FROM x",
    "SELECT s.advisory_lock_count FROM stats s",
]


@pytest.mark.parametrize("sql", HONEST)
def test_columns_and_fields_still_read(sql: str) -> None:
    assert read_refusal(sql) is None
    assert classify(sql, "postgresql").kind == "write"


def test_the_refusal_says_how_to_name_a_column() -> None:
    why = read_refusal("SELECT t.lo_unlink FROM t")
    assert why is not None and "without the alias" in why


def test_control_the_server_runs_attribute_calls(postgresql_backend) -> None:
    """Why this family exists: both notations reach the function on a real server."""
    b = postgresql_backend
    (oid,), = b.owner_exec("SELECT lo_from_bytea(0, 'x')")
    b.owner_exec(f"SELECT g.lo_unlink FROM CAST({oid} AS oid) AS g")
    assert b.owner_exec(f"SELECT count(*) FROM pg_largeobject_metadata WHERE oid = {oid}") == [(0,)]
    import os

    import psycopg

    dsn = os.environ["REACH_TEST_POSTGRES_URL"].replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute("SELECT (424243::bigint).pg_advisory_lock")
        held = con.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 424243").fetchone()
    assert held == (1,)


LIVE = ["SELECT ({o}::oid).lo_unlink", "SELECT g.lo_unlink FROM CAST({o} AS oid) AS g",
        'SELECT (({o})::oid)."lo_unlink"', "SELECT u.LO_UNLINK FROM unnest(ARRAY[{o}::oid]) AS u",
        "UPDATE {t} SET owner = (({o}::oid).lo_unlink)::text WHERE id = 1",
        "DELETE FROM {t} WHERE id = 99 OR id = (SELECT g.lo_unlink FROM CAST({o} AS oid) AS g)"]


@pytest.mark.parametrize("tool", ["sql_execute", "sql_query"])
@pytest.mark.parametrize("template", LIVE)
async def test_a_large_object_survives_attribute_calls(postgresql_backend, tool: str, template: str) -> None:
    b = postgresql_backend
    (oid,), = b.owner_exec("SELECT lo_from_bytea(0, 'the original')")
    try:
        before = b.snapshot()
        result = await b.reach.invoke(tool, {"sql": template.format(o=oid, t=b.table)})
        assert not result.ok, (template, result.content)
        assert result.error.code == "execution_failed"
        assert b.owner_exec(f"SELECT lo_get({oid})") == [(b"the original",)]
        assert b.snapshot() == before
    finally:
        b.owner_exec(f"SELECT lo_unlink(oid) FROM pg_largeobject_metadata WHERE oid = {oid}")


LOCKS = ["SELECT (424244::bigint).pg_advisory_lock", "SELECT g.pg_advisory_lock FROM CAST(424244 AS bigint) AS g",
         "SELECT (SELECT 424244::bigint).pg_try_advisory_lock", "SELECT (424244::bigint).pg_advisory_xact_lock",
         "SELECT 1 FROM {t} WHERE (424244::bigint).pg_advisory_lock_shared IS NULL"]


@pytest.mark.parametrize("template", LOCKS)
async def test_no_advisory_lock_through_attribute_calls(postgresql_backend, template: str) -> None:
    """The owner role keeps the advisory-lock functions (reach's store needs them): only the
    parser stands between sql_execute and a lock that makes other sessions wait."""
    b = postgresql_backend
    result = await b.reach.invoke("sql_execute", {"sql": template.format(t=b.table)})
    assert not result.ok, result.content
    assert "not allowed" in result.error.message and "advisory_" in result.error.message


async def test_honest_qualified_columns_still_run(postgresql_backend) -> None:
    b = postgresql_backend
    r = await b.reach.invoke("sql_query", {"sql": f"SELECT a.owner FROM {b.table} AS a WHERE a.id = 1"})
    assert r.ok and r.content["rows"] == [["ada"]]
    r = await b.reach.invoke("sql_execute", {"sql": f"UPDATE {b.table} AS a SET owner = 'ada' WHERE a.id = 1"})
    assert r.ok and r.content["rows_changed"] == 1
