"""The three notes tools: ``append_note`` (write), ``list_notes`` and ``search_notes`` (read).

All three share one ``Notebook`` so that appends and reads of the same file go
through the same lock. Answers leave out the internal idempotency key.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from reach_core import Connector, InvalidArguments

from .settings import NotesSettings
from .store import Notebook


class _NotesConnector(Connector):
    tags = ("file_system",)

    def __init__(self, notebook: Notebook | NotesSettings | dict[str, Any] | None = None) -> None:
        if not isinstance(notebook, Notebook):
            settings = (
                NotesSettings.model_validate(notebook or {})
                if not isinstance(notebook, NotesSettings)
                else notebook
            )
            notebook = Notebook(settings)
        self.notebook = notebook
        self.settings = notebook.settings
        self._schema: dict[str, Any] = {}

    def get_input_schema(self) -> dict[str, Any]:
        """Limits come from settings, so each instance builds its own schema."""
        return self._schema


# categories that draw nothing: controls, format (zero-width, BOM, bidi, tags), separators, lone
# combining marks, surrogates; and letters drawn as blanks (Hangul fillers, the blank braille cell)
_UNSEEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zs", "Zl", "Zp", "Mn", "Me"})
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def visible(text: str) -> bool:
    """Does ``text`` show anything? A note of only spaces, zero-width or control characters
    looks saved to the model and empty to the user, and hides whatever it was meant to say."""
    for ch in text:
        if ch.isascii():
            if ch.isprintable() and not ch.isspace():
                return True
        elif unicodedata.category(ch) not in _UNSEEN_CATEGORIES and ch not in _BLANK_LETTERS:
            return True
    return False


def _public(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": record.get("id"),
        "created_at": record.get("created_at"),
        "content": record.get("content"),
        "tags": record.get("tags") or [],
    }


def _limit_schema(top: int, what: str) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": top,
        "default": min(10, top),
        "description": f"Most {what} to return, newest first (1 to {top}).",
    }


class AppendNote(_NotesConnector):
    name = "append_note"
    risk = "write"
    idempotent = False

    def __init__(self, notebook: Notebook | NotesSettings | dict[str, Any] | None = None) -> None:
        super().__init__(notebook)
        s = self.settings
        self.description = (
            "Save a note to the user's notebook: a plan, a reminder, a result worth keeping. "
            "Call it when the user asks to write down, note, record or remember something "
            "(\"note my running plan\", \"remember that ...\"). Returns the saved note's id and time. "
            "在用户的笔记本里记一条笔记：用户说“记一下”“帮我记下来”“记住……”“写进笔记”时调用。"
        )
        self._schema = {
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": s.max_note_chars,
                    "description": f"The note's text, at most {s.max_note_chars} characters.",
                },
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": s.max_tag_chars},
                    "maxItems": s.max_tags,
                    "description": "Optional short labels, e.g. ['running', 'plan'].",
                },
            },
            "required": ["content"],
            "additionalProperties": False,
        }

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        s = self.settings
        content = str(params.get("content") or "").strip()
        if not visible(content):
            raise InvalidArguments(
                "content",
                message="`content` shows nothing (it is empty or only spaces, zero-width or control "
                "characters); send the note's text, e.g. \"Run 5 km on Saturday at 7:00\".",
            )
        if len(content) > s.max_note_chars:
            raise InvalidArguments(
                "content",
                f"at most {s.max_note_chars} characters (got {len(content)}); shorten it or split it "
                "into several notes",
                content[:40] + "...",
            )
        tags = _clean_tags(params.get("tags"), s.max_tags, s.max_tag_chars)
        key = getattr(ctx, "idempotency_key", None) if ctx is not None else None
        store = self.notebook.store(ctx)
        record, created = await store.append(content, tags, key)
        answer = {
            "saved": True,
            "id": record["id"],
            "created_at": record["created_at"],
            "tags": record.get("tags") or [],
        }
        if not created:
            answer["already_saved"] = True
        return answer


def _clean_tags(raw: Any, max_tags: int, max_chars: int) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise InvalidArguments("tags", "a list of short strings", ["running", "plan"])
    tags: list[str] = []
    for tag in raw:
        tag = " ".join(tag.split())
        if not visible(tag):
            raise InvalidArguments(
                "tags", message=f"tag {tag!r} shows nothing (only spaces, zero-width or control characters); "
                "send short visible words such as [\"running\", \"plan\"], or leave `tags` out.",
            )
        if len(tag) > max_chars:
            raise InvalidArguments("tags", f"tags of at most {max_chars} characters", ["running"])
        if tag not in tags:
            tags.append(tag)
    if len(tags) > max_tags:
        raise InvalidArguments("tags", f"at most {max_tags} tags", ["running", "plan"])
    return tags


class ListNotes(_NotesConnector):
    name = "list_notes"
    risk = "read"

    def __init__(self, notebook: Notebook | NotesSettings | dict[str, Any] | None = None) -> None:
        super().__init__(notebook)
        self.description = (
            "List the most recent notes in the user's notebook, newest first. Call it when the "
            "user asks what they noted, planned or asked you to remember. "
            "列出用户笔记本里最近的笔记（最新的在前）：用户问“我记了什么”“我的计划是什么”时调用。"
        )
        self._schema = {
            "type": "object",
            "properties": {"limit": _limit_schema(self.settings.max_results, "notes")},
            "additionalProperties": False,
        }

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        limit = _limit(params.get("limit"), self.settings.max_results)
        notes = await self.notebook.store(ctx).read_all()
        newest = notes[::-1][:limit]
        return {"total": len(notes), "notes": [_public(n) for n in newest]}


class SearchNotes(_NotesConnector):
    name = "search_notes"
    risk = "read"

    def __init__(self, notebook: Notebook | NotesSettings | dict[str, Any] | None = None) -> None:
        super().__init__(notebook)
        self.description = (
            "Search the user's notebook for notes containing every word of a query (in the text "
            "or the tags, case-insensitive), newest first. Call it when the user asks about "
            "something they noted before (\"what was my running plan?\"). "
            "在用户的笔记本里按关键词搜索笔记：用户问以前记过的内容时调用。"
        )
        self._schema = {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "description": "Words to look for, e.g. 'running plan' or '跑步'.",
                },
                "limit": _limit_schema(self.settings.max_results, "matching notes"),
            },
            "required": ["query"],
            "additionalProperties": False,
        }

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        words = str(params.get("query") or "").casefold().split()
        if not words:
            raise InvalidArguments("query", "one or more words to look for", "running plan")
        limit = _limit(params.get("limit"), self.settings.max_results)
        notes = await self.notebook.store(ctx).read_all()
        hits = []
        for note in reversed(notes):
            haystack = " ".join([note["content"], *map(str, note.get("tags") or [])]).casefold()
            if all(word in haystack for word in words):
                hits.append(note)
        return {"query": params["query"], "matches": len(hits), "notes": [_public(n) for n in hits[:limit]]}


def _limit(value: Any, top: int) -> int:
    if value is None:
        return min(10, top)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise InvalidArguments("limit", f"an integer from 1 to {top}", 10)
    return value
