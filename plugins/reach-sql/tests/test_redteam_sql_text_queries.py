"""PostgreSQL: extension functions that run SQL given as text hide it from the parser.

``query_to_xml`` and ``ts_stat`` were refused because they run a query written in a
string, where the parse tree cannot see a refused function. The ``tablefunc``
extension does the same, and it is *trusted*: any database owner (the write role in
the recommended set-up) can ``CREATE EXTENSION tablefunc``. Through ``sql_execute``,
``SELECT * FROM crosstab('SELECT 1::text, 1::text, setval(''s'', 1, false)::text') AS
t(a text, b text)`` reset a sequence that ``SELECT setval('s', 1, false)`` may not;
``connectby`` splices its table and column arguments into a query of its own, so a
"table name" ``(SELECT setval(…) AS k, 1 AS p) AS s`` did the same. Both ran (real
server, tablefunc installed in a schema of the test's own). ``crosstab``,
``crosstab2``-``crosstab4``, ``connectby`` and xml2's ``xpath_table`` are refused now,
in every spelling and call site, on both paths.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import _dispose, _postgres_urls, make_reach, pg_owner_exec
from reach_sql.classify import classify, read_refusal

from reach_core import Reach

CALLS = [
    "crosstab('SELECT 1::text, 1::text, setval(''s'', 1)::text')",
    "crosstab('SELECT 1::text, 1::text, 1::text', 'SELECT 1::text')",
    "crosstab2('SELECT 1::text, 1::text, 1::text')",
    "crosstab3('SELECT 1::text, 1::text, 1::text')",
    "crosstab4('SELECT 1::text, 1::text, 1::text')",
    "connectby('t', 'id', 'parent', '1', 0)",
    "connectby('(SELECT setval(''s'', 1) AS k, 1 AS p) AS s', 'k', 'p', '1', 0, '~')",
    "xpath_table('id', 'doc', 't', '/a', 'true')",
]


def _spellings(call: str) -> list[str]:
    name, rest = call.split("(", 1)
    escaped = "".join(f"\\{ord(c):04x}" if i == 1 else c for i, c in enumerate(name))
    return [call, f"public.{call}", f'"{name}"({rest}', f"{name.upper()}({rest}", f'U&"{escaped}"({rest}',
            f'ext."{name}"({rest}', f"{name} ({rest}", f"{name}\n(\n{rest}", f"{name}/**/({rest}"]


READ_SITES = [
    "SELECT * FROM {f} AS t(a text, b text)",
    "SELECT {f}",
    "SELECT 1 WHERE EXISTS (SELECT * FROM {f} AS t(a text))",
    "WITH c AS (SELECT * FROM {f} AS t(a text)) SELECT * FROM c",
    "SELECT * FROM LATERAL {f} AS t(a text)",
    "SELECT * FROM ROWS FROM ({f} AS (a text)) AS r",
    "VALUES ((SELECT count(*) FROM {f} AS t(a text)))",
]
WRITE_SITES = READ_SITES + [
    "INSERT INTO t SELECT * FROM {f} AS t(a text)",
    "UPDATE t SET a = (SELECT count(*) FROM {f} AS x(a text))::text WHERE id = 1",
    "DELETE FROM t WHERE id IN (SELECT 1 FROM {f} AS x(a text))",
]
READ_CASES = sorted({site.format(f=s) for call in CALLS for s in _spellings(call) for site in READ_SITES[:2]}
                    | {site.format(f=call) for call in CALLS for site in READ_SITES})
WRITE_CASES = sorted({site.format(f=s) for call in CALLS for s in _spellings(call) for site in WRITE_SITES[:2]}
                     | {site.format(f=call) for call in CALLS for site in WRITE_SITES})
# attribute notation: a name after a value is a call of that function with the value
ATTRIBUTE_CASES = ["SELECT ('SELECT 1::text, 1::text, 1::text'::text).crosstab",
                   "SELECT (CAST('SELECT 1' AS text)).crosstab2",
                   "SELECT q.crosstab FROM CAST('SELECT 1::text, 1::text, 1::text' AS text) AS q"]


@pytest.mark.parametrize("sql", READ_CASES + ATTRIBUTE_CASES)
def test_text_query_functions_are_refused_on_the_read_path(sql: str) -> None:
    why = read_refusal(sql)
    assert why and "not allowed" in why, (sql, why)


@pytest.mark.parametrize("sql", WRITE_CASES + ATTRIBUTE_CASES)
def test_text_query_functions_are_refused_on_the_write_path(sql: str) -> None:
    verdict = classify(sql, "postgresql")
    assert verdict.kind == "dangerous" and "not allowed" in verdict.reason, (sql, verdict)


@pytest.mark.parametrize("sql", ["SELECT 'crosstab(1)'", "SELECT crosstab_total FROM t", "SELECT connectby_id FROM t",
                                 "SELECT * FROM crosstabs", "SELECT mycrosstab(1)", "SELECT t.connectby_x FROM t"])
def test_names_that_only_look_alike_still_read(sql: str) -> None:
    assert read_refusal(sql) is None, sql
    assert classify(sql, "postgresql").kind == "write", sql


# -- the real server, tablefunc installed -----------------------------------------------


@dataclass
class Tablefunc:
    reach: Reach
    schema: str
    owner_exec: Any


@pytest.fixture(scope="module")
def tablefunc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tablefunc]:
    """tablefunc in a schema of this module's own (the database owner may install it: it is trusted)."""
    url, read_url = _postgres_urls()
    owner_exec = pg_owner_exec(url)

    installed = owner_exec("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'tablefunc'")
    schema = installed[0][0] if installed else f"rt_tf_{secrets.token_hex(3)}"
    if not installed:
        owner_exec(f"CREATE SCHEMA {schema}; CREATE EXTENSION tablefunc SCHEMA {schema}")
    reach = make_reach(tmp_path_factory.mktemp("rt-tablefunc") / "data",
                       {"url": url, "read_url": read_url, "statement_timeout": 5})
    try:
        yield Tablefunc(reach, schema, owner_exec)
    finally:
        _dispose(reach)
        if not installed:
            owner_exec(f"DROP EXTENSION tablefunc; DROP SCHEMA {schema}")


SEQUENCE_ATTACKS = [
    "SELECT * FROM {x}.crosstab('SELECT 1::text, 1::text, setval(''{s}'', 1, false)::text') AS t(a text, b text)",
    "SELECT * FROM {x}.crosstab2('SELECT 1::text, 1::text, setval(''{s}'', 1, false)::text')",
    "SELECT * FROM {x}.CrossTab('SELECT 1::text, 1::text, pg_catalog.setval(''{s}'', 1)::text', "
    "'SELECT 1::text') AS t(a text, b text)",
    "SELECT * FROM {x}.connectby('(SELECT setval(''{s}'', 1, false) AS k, 1 AS p) AS s', 'k', 'p', '1', 0) "
    "AS t(a bigint, b bigint, l int)",
]


@pytest.mark.parametrize("sql", SEQUENCE_ATTACKS)
async def test_a_sequence_reset_hidden_in_a_text_query_changes_nothing(tablefunc: Tablefunc, sql: str) -> None:
    seq = f"rt_tf_seq_{secrets.token_hex(3)}"
    tablefunc.owner_exec(f"CREATE SEQUENCE {seq}; SELECT nextval('{seq}'), nextval('{seq}')")
    try:
        for tool in ("sql_execute", "sql_query"):
            r = await tablefunc.reach.invoke(tool, {"sql": sql.format(x=tablefunc.schema, s=seq)})
            assert not r.ok, (tool, sql, r.content)
            assert tool == "sql_query" or "not allowed" in r.error.message, r.error.message
        assert tablefunc.owner_exec(f"SELECT last_value, is_called FROM {seq}") == [(2, True)]
    finally:
        tablefunc.owner_exec(f"DROP SEQUENCE {seq}")


async def test_control_the_extension_runs_the_hidden_query(tablefunc: Tablefunc, tmp_path: Path) -> None:
    """The owner role itself (outside reach) does run the hidden setval: the refusal is what stops it."""
    seq = f"rt_tf_seq_{secrets.token_hex(3)}"
    tablefunc.owner_exec(f"CREATE SEQUENCE {seq}; SELECT nextval('{seq}'), nextval('{seq}')")
    try:
        tablefunc.owner_exec(SEQUENCE_ATTACKS[0].format(x=tablefunc.schema, s=seq))
        assert tablefunc.owner_exec(f"SELECT last_value, is_called FROM {seq}") == [(1, False)]
    finally:
        tablefunc.owner_exec(f"DROP SEQUENCE {seq}")
