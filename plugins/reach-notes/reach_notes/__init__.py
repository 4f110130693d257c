"""reach-notes: a small notebook an agent can write to and read back.

Notes live in one JSON Lines file (default ``<data_dir>/notes.jsonl``), one
record per line, appended atomically so concurrent calls never interleave.
"""

from typing import TYPE_CHECKING, Any

# Public names and their modules, imported on first access (PEP 562): the entry
# point (reach_notes.plugin) imports this package, and listing plugins must not pay for them.
_EXPORTS = {
    "AppendNote": "connectors", "ListNotes": "connectors", "SearchNotes": "connectors",
    "NotesSettings": "settings", "Notebook": "store", "NoteStore": "store",
}

if TYPE_CHECKING:
    from .connectors import AppendNote, ListNotes, SearchNotes
    from .settings import NotesSettings
    from .store import Notebook, NoteStore


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reach_notes' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = ["AppendNote", "ListNotes", "NoteStore", "Notebook", "NotesSettings", "SearchNotes"]
