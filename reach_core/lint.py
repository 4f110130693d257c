"""``reach tools lint``: what makes models call a tool well, checked per tool.

Each rule reflects a common cause of wrong or missed tool calls: names that do
not say the action, descriptions that do not say *when* to call, undocumented
parameters, formatted strings without an example, free text where a closed set
belongs, many required fields, and declarations so long they crowd the prompt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .connectors import Connector
from .tool import Tool

__all__ = ["Problem", "lint_tool"]

VERBS = frozenset(
    """add append apply approve ask book build calculate call cancel check clear close compare compute convert
    copy count create delete describe detect download draft edit estimate execute explain export fetch fill
    find format generate get import insert invite list load lookup make merge move notify open order parse
    pay ping plan post predict preview publish query read record refund register reject remove rename render
    reply report request reserve reset resolve restart retrieve run save schedule score search select send set
    share show sort start stop submit summarize sync tag track transfer translate update upload validate verify
    watch write""".split()
)
_WHEN = re.compile(
    r"\b(use (this |it )?(when|to|for|if)|when (the )?user|call (this |it )?(when|to|for)|for questions|"
    r"asks?|if you need|whenever)\b|当|用于|询问|如果",
    re.I,
)
_CLOSED = re.compile(r"\b(one of|either)\b|\(\s*\w+\s*(\||/|,)\s*\w+", re.I)
MAX_DECLARATION_CHARS = 2400


@dataclass(frozen=True)
class Problem:
    rule: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "message": self.message}


def _props(schema: dict[str, Any]) -> dict[str, Any]:
    return schema.get("properties") or {}


def lint_tool(tool: Tool) -> list[Problem]:
    """Every problem found in one tool's declaration (empty list: it passes)."""
    out: list[Problem] = []
    if tool.plugin == "reach-core":  # built-ins (delegate) are named by the design, not by an author
        return out
    words = re.split(r"[_\-]|(?<=[a-z])(?=[A-Z])", tool.name)
    words = [w.lower() for w in words if w]
    # verb_noun, or a namespace then the verb (sql_query, http_get): the action must be in the name
    if len(words) < 2 or not (words[0] in VERBS or words[1] in VERBS):
        out.append(Problem("verb_noun", f"name {tool.name!r} should read verb_noun (e.g. get_weather, send_email)"))
    desc = tool.description or ""
    if len(desc) < 20:
        out.append(Problem("description", "description is missing or shorter than 20 characters"))
    elif not _WHEN.search(desc):
        out.append(Problem("when_to_use", "description should say when to use the tool ('Use when the user asks ...')"))
    required = tool.schema.get("required") or []
    for key, sub in _props(tool.schema).items():
        if not isinstance(sub, dict):
            continue
        text = str(sub.get("description") or "")
        if not text:
            out.append(Problem("param_description", f"parameter `{key}` has no description"))
        if (sub.get("format") or sub.get("pattern")) and not (
            sub.get("examples") or "e.g" in text or "example" in text.lower()
        ):
            out.append(Problem("format_example", f"parameter `{key}` has a format but no example"))
        if sub.get("type") == "string" and "enum" not in sub and _CLOSED.search(text):
            out.append(Problem("enum", f"parameter `{key}` describes a closed set; declare it as an enum"))
    if len(required) > 5:
        out.append(Problem("required", f"{len(required)} required fields; models fill few fields reliably (≤ 5)"))
    size = len(json.dumps(tool.declaration(), ensure_ascii=False))
    if size > MAX_DECLARATION_CHARS:
        out.append(Problem("size", f"declaration is {size} characters (limit {MAX_DECLARATION_CHARS}); shorten it"))
    connector = tool.connector
    ignored = set(getattr(connector, "lint_ignore", ()))
    if "risk" not in vars(type(connector)) and "risk" not in vars(connector) and tool.risk_declared == Connector.risk:
        out.append(Problem("risk", "risk is not declared; it defaults to 'write'. Declare read, write or dangerous"))
    own = getattr(connector, "lint_problems", None)
    if callable(own):  # a connector's checks of its own deployment (reach-shell: writable roots)
        out.extend(Problem(rule, message) for rule, message in own())
    return [p for p in out if p.rule not in ignored]
