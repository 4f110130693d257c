"""reach-notes: a small notebook an agent can write to and read back.

Notes live in one JSON Lines file (default ``<data_dir>/notes.jsonl``), one
record per line, appended atomically so concurrent calls never interleave.
"""

from .connectors import AppendNote, ListNotes, SearchNotes
from .settings import NotesSettings
from .store import Notebook, NoteStore

__all__ = ["AppendNote", "ListNotes", "NoteStore", "Notebook", "NotesSettings", "SearchNotes"]
