"""Sort a statement sent to ``sql_execute`` into ``write`` or ``dangerous``.

Why a lexical pass at all, when the guards live in the database? The
read-only path never relies on it: there the database refuses every write. On
the write path the question is a different one -- *how much* may this tool
change? -- and the core's policy decides risk per tool, not per statement. So
``sql_execute`` (risk ``write``) runs ordinary data changes and refuses the
statements a person should look at first: anything that is not a plain data
change (DDL, GRANT, TRUNCATE, DO, CALL, COPY, PRAGMA, ...) and DELETE/UPDATE
without a WHERE clause. Those go to ``sql_admin`` (risk ``dangerous``), which
the core's tiers send for confirmation. On SQLite the DDL refusal is also
enforced by the engine (an authorizer), so this pass mainly serves
PostgreSQL and gives the model a clear reason.

The scanner understands comments, quoted strings, quoted identifiers and
PostgreSQL dollar quoting, which is all it needs to find keywords and
top-level semicolons reliably. A WHERE clause is read as a signal of intent,
not as proof: ``DELETE FROM t WHERE true`` passes, deliberately.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# First keywords of statements that only change rows.
_DATA_CHANGE = {"insert", "update", "delete", "merge", "replace", "upsert", "with", "select", "values"}

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


@dataclass(frozen=True)
class Classification:
    """The verdict: ``kind`` is ``"write"`` or ``"dangerous"``; ``reason`` says why."""

    kind: str
    reason: str
    statements: int


@dataclass(frozen=True)
class _Token:
    text: str  # lower-cased keyword/identifier, or a single punctuation char
    depth: int


def _tokens(sql: str) -> list[_Token | None]:
    """Keywords and structural punctuation; ``None`` marks a statement break."""
    out: list[_Token | None] = []
    i, n, depth = 0, len(sql), 0
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
        elif sql.startswith("/*", i):
            # PostgreSQL nests block comments; SQLite does not, but nesting-aware
            # scanning only errs towards treating more text as comment there.
            level, i = 1, i + 2
            while i < n and level:
                if sql.startswith("/*", i):
                    level, i = level + 1, i + 2
                elif sql.startswith("*/", i):
                    level, i = level - 1, i + 2
                else:
                    i += 1
        elif c in "'\"`[":
            close = {"'": "'", '"': '"', "`": "`", "[": "]"}[c]
            i += 1
            while i < n:
                if sql[i] == close:
                    if close != "]" and i + 1 < n and sql[i + 1] == close:
                        i += 2
                        continue
                    break
                i += 1
            i += 1
            out.append(_Token("<literal>", depth))
        elif c == "$" and (m := _DOLLAR.match(sql, i)):
            tag = m.group(0)
            j = sql.find(tag, m.end())
            i = n if j < 0 else j + len(tag)
            out.append(_Token("<literal>", depth))
        elif c == "(":
            depth += 1
            i += 1
        elif c == ")":
            depth = max(0, depth - 1)
            i += 1
        elif c == ";":
            out.append(None)
            i += 1
        elif m := _WORD.match(sql, i):
            out.append(_Token(m.group(0).lower(), depth))
            i = m.end()
        else:
            i += 1
    return out


def _split(tokens: list[_Token | None]) -> list[list[_Token]]:
    statements: list[list[_Token]] = [[]]
    for tok in tokens:
        if tok is None:
            statements.append([])
        else:
            statements[-1].append(tok)
    return [s for s in statements if s]


def _unbounded_change(stmt: list[_Token]) -> str | None:
    """Name the first DELETE/UPDATE that has no WHERE at its own nesting level."""
    for idx, tok in enumerate(stmt):
        if tok.text not in ("delete", "update"):
            continue
        prev = stmt[idx - 1].text if idx else ""
        if tok.text == "update" and prev in ("do", "for", "key"):
            continue  # ON CONFLICT DO UPDATE, SELECT ... FOR [NO KEY] UPDATE
        if tok.text == "delete" and prev == "on":
            continue  # ON DELETE CASCADE in a definition
        has_where = False
        for later in stmt[idx + 1 :]:
            if later.depth < tok.depth:
                break
            if later.depth == tok.depth and later.text == "where":
                has_where = True
                break
            if later.depth == tok.depth and later.text in ("delete", "update", "insert") and later is not tok:
                break
        if not has_where:
            return tok.text.upper()
    return None


def classify(sql: str) -> Classification:
    """Classify one statement for the write path (see the module docstring)."""
    statements = _split(_tokens(sql))
    if not statements:
        return Classification("write", "empty statement", 0)
    if len(statements) > 1:
        return Classification("dangerous", "more than one statement", len(statements))
    stmt = statements[0]
    first = stmt[0].text
    if first not in _DATA_CHANGE:
        return Classification("dangerous", f"{first.upper()} is not a plain data change", 1)
    if verb := _unbounded_change(stmt):
        return Classification("dangerous", f"{verb} without a WHERE clause changes every row", 1)
    return Classification("write", "data change", 1)
