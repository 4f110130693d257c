"""Hook implementations of reach-notes (entry point ``reach-notes``)."""

from __future__ import annotations

from typing import Any

from reach_core import hookimpl

from .connectors import AppendNote, ListNotes, SearchNotes
from .settings import NotesSettings
from .store import Notebook

# The name config and logs use when this module is registered directly
# (tests, embedding) rather than found through its entry point.
REACH_PLUGIN_NAME = "reach-notes"


@hookimpl
def reach_plugin_settings() -> type[NotesSettings]:
    return NotesSettings


@hookimpl
def reach_register_tools(register: Any, settings: NotesSettings | None) -> None:
    # One notebook for the three tools: appends and reads share its file lock.
    notebook = Notebook(settings or NotesSettings.model_validate({}))
    register(AppendNote(notebook))
    register(ListNotes(notebook))
    register(SearchNotes(notebook))
