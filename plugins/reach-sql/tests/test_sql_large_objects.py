"""PostgreSQL large objects: every ``lo_*`` function (and ``loread``/``lowrite``) is refused.

The list named ``lo_import``, ``lo_put``, ``lo_unlink`` ... but not ``lo_open``,
``lowrite``, ``lo_truncate``: ``SELECT lowrite(lo_open(oid, 131072), 'x')`` and
``SELECT lo_truncate(lo_open(oid, 131072), 0)`` rewrote or emptied a large object the
write role owns through ``sql_execute`` (a SELECT, so no WHERE rule applies), and an
open descriptor is session state. Refused now by family, in every spelling.
"""

from __future__ import annotations

import pytest
from reach_sql.classify import classify, read_refusal

CALLS = [
    "lo_open({o}, 131072)", "lowrite(lo_open({o}, 131072), 'pwned')", "lo_truncate(lo_open({o}, 131072), 0)",
    "lo_truncate64(lo_open({o}, 131072), 0)", "loread(lo_open({o}, 262144), 10)", "lo_lseek(0, 0, 0)",
    "lo_lseek64(0, 0, 0)", "lo_tell(0)", "lo_tell64(0)", "lo_close(0)", "lo_get({o})", "lo_get({o}, 0, 4)",
]


def _spellings(call: str) -> list[str]:
    name, rest = call.split("(", 1)
    escaped = "".join(f"\\{ord(c):04x}" if c in "_w" else c for c in name)
    return [call, f"pg_catalog.{call}", f'"{name}"({rest}', f"{name.upper()}({rest}", f'U&"{escaped}"({rest}',
            f'PG_CATALOG."{name}"({rest}']


SITES = ["SELECT {f}", "UPDATE {t} SET owner = ({f})::text WHERE id = 1",
         "INSERT INTO {t} VALUES (9, ({f})::text, 1)", "DELETE FROM {t} WHERE id = 1 RETURNING {f}",
         "WITH c AS (SELECT {f} AS v) SELECT * FROM c", "SELECT * FROM ROWS FROM ({f}) AS r"]

WRITE = [site.format(f=s, t="accounts") for call in CALLS for s in _spellings(call) for site in SITES[:2]] + [
    site.format(f=call, t="accounts") for call in CALLS for site in SITES]
READ = [site.format(f=s) for call in CALLS for s in _spellings(call) for site in (SITES[0], SITES[4], SITES[5])]


@pytest.mark.parametrize("sql", [s.replace("{o}", "1") for s in WRITE])
def test_write_path_refuses_large_object_functions(sql: str) -> None:
    verdict = classify(sql, "postgresql")
    assert verdict.kind == "dangerous" and "not allowed" in verdict.reason, (sql, verdict)


@pytest.mark.parametrize("sql", [s.replace("{o}", "1") for s in READ])
def test_read_path_refuses_large_object_functions(sql: str) -> None:
    why = read_refusal(sql)
    assert why is not None and "not allowed" in why, sql


@pytest.mark.parametrize("sql", ["SELECT lower('LO_OPEN')", "SELECT 'lowrite'", "SELECT local_fn_name FROM t",
                                 "SELECT log(10)", "SELECT lower(lo) FROM t"])
def test_similar_names_still_read(sql: str) -> None:
    assert read_refusal(sql) is None


@pytest.mark.parametrize("call", ["lowrite(lo_open({o}, 131072), 'pwned')", "lo_truncate(lo_open({o}, 131072), 0)",
                                  "lo_truncate64(lo_open({o}, 131072), 2)",
                                  'pg_catalog."lowrite"(pg_catalog.lo_open({o}, 131072), \'pwned\')',
                                  'U&"lo\\005ftruncate"(LO_OPEN({o}, 131072), 0)'])
@pytest.mark.parametrize("site", ["select", "inside_update"])
async def test_a_large_object_stays_unchanged(postgresql_backend, call: str, site: str) -> None:
    backend = postgresql_backend
    (oid,), = backend.owner_exec("SELECT lo_from_bytea(0, 'the original')")
    try:
        before = backend.snapshot()
        c = call.format(o=oid)
        sql = f"SELECT {c}" if site == "select" else (
            f"UPDATE {backend.table} SET owner = ({c})::text WHERE id = 1")
        result = await backend.reach.invoke("sql_execute", {"sql": sql})
        assert not result.ok, (sql, result.content)
        assert result.error.code == "execution_failed"
        assert "not allowed" in result.error.message and "sql_admin" in result.error.message
        assert backend.owner_exec(f"SELECT lo_get({oid})") == [(b"the original",)]
        assert backend.snapshot() == before
    finally:
        backend.owner_exec(f"SELECT lo_unlink({oid})")
