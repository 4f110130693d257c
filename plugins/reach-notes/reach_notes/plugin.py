"""Hook implementations of reach-notes (entry point ``reach-notes``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from .settings import NotesSettings


# Only reach_core.hookimpl is imported with this module (``reach plugins`` imports it);
# connectors and the pydantic settings model load when a Reach starts the plugin.

# The name config and logs use when this module is registered directly
# (tests, embedding) rather than found through its entry point.
REACH_PLUGIN_NAME = "reach-notes"


@hookimpl
def reach_plugin_settings() -> type[NotesSettings]:
    from .settings import NotesSettings

    return NotesSettings


@hookimpl
def reach_register_tools(register: Any, settings: NotesSettings | None) -> None:
    from .connectors import AppendNote, ListNotes, SearchNotes
    from .settings import NotesSettings
    from .store import Notebook

    # One notebook for the three tools: appends and reads share its file lock.
    notebook = Notebook(settings or NotesSettings.model_validate({}))
    register(AppendNote(notebook))
    register(ListNotes(notebook))
    register(SearchNotes(notebook))
