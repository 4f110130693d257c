"""reach-notes: a small notebook an agent can write to and read back.

Notes live in one JSON Lines file (default ``<data_dir>/notes.jsonl``), one
record per line, appended atomically so concurrent calls never interleave.
"""

from typing import TYPE_CHECKING

from reach_core.lazy import exports

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


__getattr__ = exports(__name__, _EXPORTS)


__all__ = ["AppendNote", "ListNotes", "NoteStore", "Notebook", "NotesSettings", "SearchNotes"]
