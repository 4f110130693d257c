"""Decide what a statement is from its parse tree, never from its text.

Two questions are asked of the SQL a model sends:

- ``classify(sql, dialect)`` -- for ``sql_execute`` (risk ``write``): is this a
  plain data change, or something a person should look at first (DDL,
  ``SELECT … INTO``, GRANT, DO, COPY, SET, transaction control, several
  statements, UPDATE/DELETE without WHERE, a write to a system catalog, a
  function that signals other sessions or changes session state)? Those are
  ``dangerous`` and go to ``sql_admin``, which the core sends for confirmation.
- ``read_refusal(sql)`` -- for ``sql_query`` on PostgreSQL: one SELECT/VALUES
  that calls none of the refused functions (``set_config`` would switch the
  statement timeout off; ``pg_terminate_backend`` kills other sessions;
  ``query_to_xml`` and the extension functions ``crosstab``/``connectby`` run SQL
  hidden in a string).

Why a parser: a text scanner has to re-implement PostgreSQL's lexer (``E'\\''``
escapes, dollar quotes with any tag, nested comments, ``U&""`` identifiers)
and every divergence is a bypass. PostgreSQL statements are parsed with
``pglast``, which *is* PostgreSQL's own grammar (libpg_query), so reach sees
exactly the statement the server will run. SQLite statements are parsed with
``sqlglot``'s SQLite dialect (SQLite comments do not nest, ``[x]`` and
```x``` are identifiers); on SQLite the engine's authorizer also refuses DDL
on its own, so the parse mainly decides the WHERE rule. A statement the
parser cannot read is refused, not guessed at.

A WHERE clause is read as a signal of intent, and checked twice. Here: a
condition that reads no column (``WHERE true``, ``WHERE 1 = 1``, ``WHERE NOT
FALSE``, ``WHERE EXISTS (SELECT 1)``, a MERGE ``ON true``), or an OR with such a
branch (``WHERE id = 1 OR 1``), is the same for every row, so it bounds nothing
and is refused. A condition that reads a column but holds for every row anyway
(``WHERE id = id``, ``WHERE id IS NOT NULL``) cannot be judged from the text: the
database layer (``database.py``, ``write_guard.py``) counts the rows the statement
changed and rolls back a statement that changed every row of a table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# SQLAlchemy's own bind-parameter pattern (sqlalchemy.sql.elements.TextClause):
# the same :name spots it turns into driver placeholders.
BIND = re.compile(r"(?<![:\w\x5c]):(\w+)(?!:)", re.UNICODE)

# Functions no agent call may run, on the read or the write path. Matched on the
# function's own name (schema qualification and case do not matter).
DENIED_FUNCTIONS = frozenset(
    {
        "set_config",  # switches statement_timeout (or role, search_path) off from inside a query
        "pg_terminate_backend", "pg_cancel_backend",  # signal other sessions
        "pg_notify",  # wakes listeners of other sessions
        "pg_reload_conf", "pg_rotate_logfile", "pg_log_backend_memory_contexts", "pg_promote",
        "pg_switch_wal", "pg_create_restore_point", "pg_stat_reset", "pg_stat_reset_shared",
        "pg_stat_reset_single_table_counters", "pg_stat_reset_single_function_counters",
        "pg_stat_reset_slru", "pg_stat_reset_replication_slot", "pg_stat_reset_subscription_stats",
        "ts_stat", "ts_rewrite",  # run a query given as text
        "lo_import", "lo_export", "lo_unlink", "lo_create", "lo_creat", "lo_from_bytea", "lo_put",
        "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file",
        "pg_export_snapshot", "pg_import_snapshot",
        "setseed",  # the session's random() sequence, left on a pooled connection for the next caller
        "setval",  # ALTER SEQUENCE … RESTART as a function: a sequence set back hands out ids again
        # assign a transaction id even in a READ ONLY transaction: an id used up and a WAL record per call
        "txid_current", "pg_current_xact_id",
    }
)
_DENIED_PATTERN = re.compile(
    r"pg_(try_)?advisory_\w*"  # session state that outlives the call, waits on other sessions
    r"|(query|cursor|table|schema|database)_to_xml\w*"  # query_to_xml runs SQL from a string
    # extension functions that run SQL given as text, out of the parser's sight: tablefunc (a
    # trusted extension, so any database owner can install it) crosstab('SELECT … setval(…)')
    # and connectby, which splices its table and column arguments into a query; xml2 xpath_table
    r"|crosstab\d*|connectby|xpath_table"
    r"|dblink\w*|pg_(read|write)_server_files"
    # every large-object function: lo_open + lowrite/lo_truncate rewrite objects no WHERE rule sees,
    # and an open descriptor is session state (lo_put, lo_unlink ... were named, lo_open was not)
    r"|lo_\w*|lo(read|write)"
    # whole families, so a version's new member is refused too (pg_stat_reset_backend_stats in 18):
    r"|pg_stat_reset\w*"  # statistics other sessions and the operator rely on
    r"|pg_\w*replication\w*|pg_logical_\w*"  # slots and origins; consuming a slot's changes is a write
    r"|pg_ls_\w*|pg_file_\w*"  # server directories and (adminpack) server files
    r"|pg_(start|stop)_backup|pg_backup_\w*|pg_wal_replay_\w*"  # backup and recovery control
    # index maintenance: they rewrite index pages even in a READ ONLY transaction (owner role)
    r"|brin_\w*summarize\w*|gin_clean_pending_list"
)


_DENIED_WHY = ("it signals other sessions, changes session or server state, sequences or large objects, "
               "or runs hidden SQL")


def denied_function(name: str) -> bool:
    """Is ``name`` (unqualified, any case) a function agent SQL may never call?"""
    name = name.lower()
    return name in DENIED_FUNCTIONS or bool(_DENIED_PATTERN.fullmatch(name))


@dataclass(frozen=True)
class Classification:
    """The verdict: ``kind`` is ``"write"`` or ``"dangerous"``; ``reason`` says why."""

    kind: str
    reason: str
    statements: int


# -- PostgreSQL: pglast (libpg_query) ------------------------------------------


class SqlParseError(Exception):
    """The parser could not read the statement; ``str()`` is PostgreSQL's own message."""


def _pg_placeholders(sql: str) -> str:
    """``:name`` -> ``$1`` padded to the same length, so offsets still point into ``sql``."""
    return BIND.sub(lambda m: "$1".ljust(len(m.group(0))), sql)


def pg_statements(sql: str) -> list[dict[str, Any]]:
    """The statements of ``sql`` as libpg_query's JSON tree (one dict per RawStmt)."""
    from pglast import parser

    try:
        tree = json.loads(parser.parse_sql_json(_pg_placeholders(sql)))
    except parser.ParseError as exc:
        raise SqlParseError(str(exc)) from exc
    return list(tree.get("stmts") or [])


def pg_statement_text(sql: str, raw: dict[str, Any]) -> str:
    """The text of one parsed statement (no trailing ``;`` or comment after it).

    libpg_query counts bytes of the placeholder-replaced text; that text has as many
    characters as ``sql``, so offsets are mapped to characters and ``sql`` is cut there.
    """
    data = _pg_placeholders(sql).encode("utf-8")
    start = int(raw.get("stmt_location") or 0)
    length = int(raw.get("stmt_len") or 0)
    end = start + length if length else len(data)
    return sql[len(data[:start].decode("utf-8")) : len(data[:end].decode("utf-8"))]


def _nodes(tree: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node of a libpg_query JSON tree, depth first.

    Fields typed ``Node*`` are wrapped (``{"TypeName": {...}}``); fields with a fixed
    type are not (``larg``/``rarg`` of a UNION are bare SelectStmts, ``intoClause`` a
    bare IntoClause). Bare SELECTs are recognised by their ``op`` field and reported
    as ``SelectStmt``, so a ``SELECT … INTO`` inside a UNION is seen like any other.
    """
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if len(item) == 1:
                (key, value), = item.items()
                if key[:1].isupper() and isinstance(value, dict):
                    yield key, value
            if "intoClause" in item or ("op" in item and "limitOption" in item):
                yield "SelectStmt", item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _sval(item: Any) -> str:
    return str(item.get("String", {}).get("sval", "")) if isinstance(item, dict) else ""


def _called_name(node_type: str, node: dict[str, Any]) -> str:
    """The function this node may call (unqualified), or "".

    A call needs no ``FuncCall`` node: PostgreSQL reads a field name after a value as a
    call of the function of that name with the value as its one argument, when the
    value has no such field. ``(42::bigint).pg_advisory_lock`` (an ``A_Indirection``)
    and ``g.lo_unlink`` with ``FROM CAST(16400 AS oid) AS g`` (a ``ColumnRef``: a scalar
    function in FROM is its own whole-row value) both ran. So the last name of a
    qualified column reference and every field after an expression count as calls too;
    a plain one-word column name never does.
    """
    if node_type == "FuncCall":
        parts = node.get("funcname") or []
        return _sval(parts[-1]) if parts else ""
    if node_type == "ColumnRef":
        fields = node.get("fields") or []
        return _sval(fields[-1]) if len(fields) > 1 else ""
    if node_type == "A_Indirection":
        return next((name for item in node.get("indirection") or [] if denied_function(name := _sval(item))), "")
    return ""


_ATTRIBUTE_CALL_HINT = (" (a name after a value or a table alias, `(x).f` or `t.f`, calls the function f when "
                        "there is no such column: write a plain column name without the alias if it is one)")


def _denied_call(node_type: str, node: dict[str, Any]) -> str | None:
    """The refusal for a node that calls a refused function, in any notation, or None."""
    name = _called_name(node_type, node)
    if not name or not denied_function(name):
        return None
    return f"{name}() is not allowed: {_DENIED_WHY}" + ("" if node_type == "FuncCall" else _ATTRIBUTE_CALL_HINT)


_PG_NAMES = {
    "CreateStmt": "CREATE TABLE", "CreateTableAsStmt": "CREATE TABLE AS", "IndexStmt": "CREATE INDEX",
    "DropStmt": "DROP", "TruncateStmt": "TRUNCATE", "AlterTableStmt": "ALTER TABLE", "DoStmt": "DO",
    "CallStmt": "CALL", "CopyStmt": "COPY", "GrantStmt": "GRANT", "GrantRoleStmt": "GRANT",
    "VariableSetStmt": "SET", "VariableShowStmt": "SHOW", "TransactionStmt": "transaction control",
    "PrepareStmt": "PREPARE", "ExecuteStmt": "EXECUTE", "DeallocateStmt": "DEALLOCATE",
    "DiscardStmt": "DISCARD", "ListenStmt": "LISTEN", "UnlistenStmt": "UNLISTEN", "NotifyStmt": "NOTIFY",
    "LockStmt": "LOCK", "ExplainStmt": "EXPLAIN", "VacuumStmt": "VACUUM", "DeclareCursorStmt": "DECLARE",
    "ViewStmt": "CREATE VIEW", "CreateFunctionStmt": "CREATE FUNCTION", "RenameStmt": "ALTER … RENAME",
    "CreateSchemaStmt": "CREATE SCHEMA", "CreateSeqStmt": "CREATE SEQUENCE", "RuleStmt": "CREATE RULE",
    "CreateTrigStmt": "CREATE TRIGGER", "CommentStmt": "COMMENT", "ReindexStmt": "REINDEX",
    "ClusterStmt": "CLUSTER", "RefreshMatViewStmt": "REFRESH MATERIALIZED VIEW", "LoadStmt": "LOAD",
    "CheckPointStmt": "CHECKPOINT", "ClosePortalStmt": "CLOSE", "FetchStmt": "FETCH",
    "CreateRoleStmt": "CREATE ROLE", "AlterRoleStmt": "ALTER ROLE", "DropRoleStmt": "DROP ROLE",
    "CreateExtensionStmt": "CREATE EXTENSION", "SecLabelStmt": "SECURITY LABEL",
    "AlterDefaultPrivilegesStmt": "ALTER DEFAULT PRIVILEGES", "ReassignOwnedStmt": "REASSIGN OWNED",
    "DropOwnedStmt": "DROP OWNED", "ConstraintsSetStmt": "SET CONSTRAINTS", "CreatedbStmt": "CREATE DATABASE",
}
_PG_DATA_CHANGE = {"InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt", "SelectStmt"}
_PG_WRITES = {"InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt"}
_SYSTEM_SCHEMAS = {"pg_catalog", "information_schema", "pg_toast"}


def _pg_kind(node_type: str) -> str:
    if node_type in _PG_NAMES:
        return _PG_NAMES[node_type]
    words = re.findall(r"[A-Z][a-z]*", node_type.removesuffix("Stmt"))
    return " ".join(words).upper() or node_type


def _system_target(node: dict[str, Any]) -> str | None:
    rel = node.get("relation") or {}
    schema = str(rel.get("schemaname") or "").lower()
    name = str(rel.get("relname") or "")
    if schema in _SYSTEM_SCHEMAS or schema.startswith("pg_") or (not schema and name.lower().startswith("pg_")):
        return f"{schema + '.' if schema else ''}{name}"
    return None


def _pg_reads_a_column(tree: Any) -> bool:
    return any(node_type in ("ColumnRef", "CurrentOfExpr") for node_type, _node in _nodes(tree))


def _pg_disjuncts(cond: Any) -> Iterator[Any]:
    """The branches of a top-level OR chain (the condition itself when it is no OR)."""
    if isinstance(cond, dict) and (b := cond.get("BoolExpr")) and b.get("boolop") == "OR_EXPR":
        for arg in b.get("args") or []:
            yield from _pg_disjuncts(arg)
    else:
        yield cond


def _pg_unbounded_condition(cond: Any) -> bool:
    """A condition that is the same for every row (it reads no column), or an OR with such a
    branch: it selects all rows or none, so it bounds nothing."""
    return any(not _pg_reads_a_column(branch) for branch in _pg_disjuncts(cond))


_MERGE_CHANGES = {"CMD_UPDATE", "CMD_DELETE"}


def _pg_merge_refusal(node: dict[str, Any]) -> str | None:
    """MERGE … WHEN MATCHED THEN UPDATE/DELETE changes the rows its ON condition matches:
    ``ON true`` (or ``1 = 1``) matches every row, as an UPDATE/DELETE without WHERE does.
    ``WHEN NOT MATCHED BY SOURCE`` (PostgreSQL 17) changes the rows *no* source row
    matches: every row for an empty source, so it needs a condition of its own."""
    for clause in node.get("mergeWhenClauses") or []:
        when = clause.get("MergeWhenClause", {}) if isinstance(clause, dict) else {}
        command = str(when.get("commandType", ""))
        if command not in _MERGE_CHANGES:
            continue
        verb = command.removeprefix("CMD_")
        kind = str(when.get("matchKind", "MERGE_WHEN_MATCHED" if when.get("matched") else ""))
        if kind == "MERGE_WHEN_MATCHED":
            if _pg_unbounded_condition(node.get("joinCondition")) and (
                when.get("condition") is None or _pg_unbounded_condition(when.get("condition"))
            ):
                return f"MERGE … WHEN MATCHED THEN {verb} with an ON condition that reads no column changes every row"
        elif when.get("condition") is None or _pg_unbounded_condition(when.get("condition")):
            return (f"MERGE … WHEN NOT MATCHED BY SOURCE THEN {verb} without a condition on the row can change "
                    "every row")
    return None


def _pg_refusal(stmt: dict[str, Any]) -> str | None:
    """The first reason found anywhere in one statement's tree, or None."""
    for node_type, node in _nodes(stmt):
        if why := _denied_call(node_type, node):
            return why
        if node_type == "SelectStmt" and node.get("intoClause"):
            return "SELECT … INTO creates a table (a schema change)"
        if node_type in ("UpdateStmt", "DeleteStmt") and not node.get("whereClause"):
            return f"{node_type[:6].upper()} without a WHERE clause changes every row"
        if node_type in ("UpdateStmt", "DeleteStmt") and _pg_unbounded_condition(node["whereClause"]):
            return (f"{node_type[:6].upper()} with a WHERE clause that reads no column (or an OR branch that "
                    "reads none) is true for every row and changes every row")
        if node_type == "MergeStmt" and (why := _pg_merge_refusal(node)):
            return why
        if node_type in _PG_WRITES and (target := _system_target(node)):
            return f"it writes to the system catalog {target}"
    return None


def _classify_pg(sql: str) -> Classification:
    try:
        stmts = pg_statements(sql)
    except SqlParseError as exc:
        return Classification("dangerous", f"the statement could not be parsed ({exc})", 1)
    if not stmts:
        return Classification("write", "empty statement", 0)
    if len(stmts) > 1:
        return Classification("dangerous", "more than one statement", len(stmts))
    stmt = stmts[0].get("stmt") or {}
    (top, _body), = stmt.items() if len(stmt) == 1 else (("", {}),)
    if top not in _PG_DATA_CHANGE:
        return Classification("dangerous", f"{_pg_kind(top)} is not a plain data change", 1)
    if reason := _pg_refusal(stmt):
        return Classification("dangerous", reason, 1)
    return Classification("write", "data change", 1)


def read_refusal(sql: str) -> str | None:
    """Why ``sql_query`` refuses this PostgreSQL statement, or None when it may run.

    Raises :class:`SqlParseError` with PostgreSQL's message for a syntax error.
    """
    return pg_read_statement(sql)[0]


def pg_read_statement(sql: str) -> tuple[str | None, str]:
    """``(why sql_query refuses it or None, the statement's own text)``; see :func:`read_refusal`."""
    stmts = pg_statements(sql)
    if len(stmts) != 1:
        why = "send exactly one SQL statement per call (no `;` between statements)" if stmts else "the SQL is empty"
        return why, ""
    stmt = stmts[0].get("stmt") or {}
    top = next(iter(stmt), "")
    if top != "SelectStmt":
        return f"{_pg_kind(top)} is not a SELECT", ""
    for node_type, node in _nodes(stmt):
        if node_type in _PG_WRITES:
            return f"a {node_type[:-4].upper()} inside the query changes data", ""
        if node_type == "SelectStmt" and node.get("intoClause"):
            return "SELECT … INTO creates a table", ""
        if denied := _denied_call(node_type, node):
            return denied, ""
        if node_type == "LockingClause":
            return "SELECT … FOR UPDATE/SHARE locks rows", ""
    return None, pg_statement_text(sql, stmts[0])


# -- SQLite (and other dialects): sqlglot ---------------------------------------

_SQLGLOT_DIALECTS = {"mssql": "tsql", "mariadb": "mysql"}

# MySQL and MariaDB run the text of ``/*! … */`` (``/*!50000 … */``: from that version on;
# MariaDB also ``/*M! … */``) as part of the statement; sqlglot, like any SQL parser,
# skips it as a comment. ``/*!50000 DROP TABLE t */`` was "an empty statement" to the
# classifier and a DROP TABLE to the server. Refused anywhere in the text (also inside
# a string literal: values travel as parameters).
_MYSQL_FAMILY = frozenset({"mysql", "mariadb"})
_MYSQL_EXECUTABLE_COMMENT = re.compile(r"/\*[mM]?!")



# What SQLite's tokenizer skips between tokens. sqlglot skips whatever ``str.isspace()``
# calls a space, which includes U+00A0, U+2028, U+3000 ...; SQLite reads every
# non-ASCII character as part of a name (and \v, \x1c-\x1f as illegal).
_SQLITE_SPACE = frozenset(" \t\n\f\r")
_SQLITE_CLOSE = {"'": "'", '"': '"', "`": "`", "[": "]"}


def _sqlite_foreign_space(sql: str) -> str | None:
    """The first character outside quotes and comments that sqlglot reads as a space
    and SQLite does not, or None.

    ``DELETE FROM t AS x<U+00A0>WHERE<U+00A0>archived`` is a DELETE with a WHERE clause
    to sqlglot, but to SQLite one with the alias ``x<U+00A0>WHERE<U+00A0>archived``
    and no WHERE at all: every row goes. Inside string literals, quoted names and
    comments such characters are text to both and stay allowed. The scan follows
    SQLite's own lexer: quotes close on the same character (doubled to escape it,
    ``[`` on ``]``), ``--`` runs to the line end, ``/* */`` does not nest.
    """
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in _SQLITE_CLOSE:
            close = _SQLITE_CLOSE[ch]
            end = sql.find(close, i + 1)
            while end != -1 and close != "]" and sql.startswith(close, end + 1):
                end = sql.find(close, end + 2)  # a doubled quote is the quote itself
            i = n if end == -1 else end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end == -1 else end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end == -1 else end + 2
        else:
            if ch.isspace() and ch not in _SQLITE_SPACE:
                return ch
            i += 1
    return None


def quiet_parse(sql: str, read: Any) -> list[Any]:
    """``sqlglot.parse(sql, read=read)``, without the warning sqlglot's parser logs when it falls
    back to an opaque ``Command`` (the classifier refuses that case itself).

    Why not set the ``sqlglot`` logger's level: that logger is the host's too (it may use
    sqlglot, and configure its logging), and with no handler anywhere Python's last-resort
    handler prints the warning, the model's SQL in it, on the host's stderr. A parser
    subclass of reach's own, made once per dialect, leaves ``sqlglot`` as it is.
    """
    from sqlglot.dialects.dialect import Dialect

    language = Dialect.get_or_raise(read)
    base = language.parser_class
    parser = _QUIET_PARSERS.get(base)
    if parser is None:
        parser = _QUIET_PARSERS[base] = type(f"Quiet{base.__name__}", (base,), {"_warn_unsupported": _no_warning})
    return list(parser(dialect=language).parse(language.tokenize(sql), sql))


def _no_warning(_parser: Any) -> None:
    return None


#: each dialect's parser class -> its subclass without the Command fallback's warning
_QUIET_PARSERS: dict[type, type] = {}


def _classify_sqlglot(sql: str, dialect: str, read: Any = None) -> Classification:
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    if dialect in _MYSQL_FAMILY and _MYSQL_EXECUTABLE_COMMENT.search(sql):
        return Classification(
            "dangerous",
            "it holds a /*! … */ comment, whose text MySQL and MariaDB run as SQL (a parser reads it as a "
            "comment, so it would not be checked); write the statement without it",
            1,
        )
    if dialect == "sqlite" and (space := _sqlite_foreign_space(sql)) is not None:
        return Classification(
            "dangerous",
            f"it holds the character U+{ord(space):04X} outside quotes, which SQLite reads as part of a "
            "name, not as a space (so a WHERE after it would not be one); write plain spaces",
            1,
        )
    try:
        parsed = [p for p in quiet_parse(sql, read or _SQLGLOT_DIALECTS.get(dialect, dialect)) if p is not None]
    except SqlglotError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Classification("dangerous", f"the statement could not be parsed as {dialect} ({first})", 1)
    if not parsed:
        return Classification("write", "empty statement", 0)
    if len(parsed) > 1:
        return Classification("dangerous", "more than one statement", len(parsed))
    top = parsed[0]
    if not isinstance(top, exp.Insert | exp.Update | exp.Delete | exp.Query):
        kind = str(top.this).upper() if isinstance(top, exp.Command) else top.key.upper()
        return Classification("dangerous", f"{kind} is not a plain data change", 1)
    for node in top.walk():
        if isinstance(node, exp.Select) and node.args.get("into") is not None:
            return Classification("dangerous", "SELECT … INTO creates a table (a schema change)", 1)
        if isinstance(node, exp.Update | exp.Delete) and node.args.get("where") is None:
            verb = "UPDATE" if isinstance(node, exp.Update) else "DELETE"
            return Classification("dangerous", f"{verb} without a WHERE clause changes every row", 1)
        if isinstance(node, exp.Update | exp.Delete) and _glot_unbounded_condition(node.args["where"].this):
            verb = "UPDATE" if isinstance(node, exp.Update) else "DELETE"
            return Classification(
                "dangerous",
                f"{verb} with a WHERE clause that reads no column (or an OR branch that reads none) is true "
                "for every row and changes every row",
                1,
            )
        if isinstance(node, exp.Merge):
            return Classification("dangerous", "MERGE is not a plain data change", 1)
        if isinstance(node, exp.Command | exp.Create | exp.Drop | exp.Pragma | exp.Attach | exp.Detach):
            return Classification("dangerous", f"{node.key.upper()} is not a plain data change", 1)
    return Classification("write", "data change", 1)


def _glot_unbounded_condition(cond: Any) -> bool:
    """sqlglot's reading of :func:`_pg_unbounded_condition`."""
    from sqlglot import exp

    def branches(node: Any) -> Iterator[Any]:
        node = node.unnest()  # parentheses
        if isinstance(node, exp.Or):
            yield from branches(node.this)
            yield from branches(node.expression)
        else:
            yield node

    return any(branch.find(exp.Column) is None for branch in branches(cond))


def _mysql_without_backslash_escapes() -> Any:
    """sqlglot's MySQL dialect reading ``\\`` in a string as a plain character, as a server
    with ``sql_mode = NO_BACKSLASH_ESCAPES`` does."""
    global _NO_BACKSLASH
    if _NO_BACKSLASH is None:
        from sqlglot.dialects.mysql import MySQL

        class MySQLNoBackslashEscapes(MySQL):
            class Tokenizer(MySQL.Tokenizer):
                STRING_ESCAPES = ["'", '"']

        _NO_BACKSLASH = MySQLNoBackslashEscapes
    return _NO_BACKSLASH


_NO_BACKSLASH: Any = None


def classify(sql: str, dialect: str = "postgresql") -> Classification:
    """Classify one statement for the write path (see the module docstring)."""
    if dialect == "postgresql":
        return _classify_pg(sql)
    verdict = _classify_sqlglot(sql, dialect)
    if verdict.kind == "write" and dialect in _MYSQL_FAMILY and "\\" in sql:
        # Whether `\'` ends a string depends on the server's sql_mode, which reach cannot see:
        # `SET a = 'x\' -- ' WHERE id = 1` has a WHERE with backslash escapes and none without.
        # Both readings must pass.
        strict = _classify_sqlglot(sql, dialect, read=_mysql_without_backslash_escapes())
        if strict.kind != "write":
            return Classification(
                "dangerous",
                f"read without backslash escapes (sql_mode NO_BACKSLASH_ESCAPES) {strict.reason}; write a quote "
                "in a string doubled ('it''s'), or send values as parameters",
                strict.statements,
            )
    return verdict
