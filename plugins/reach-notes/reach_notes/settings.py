"""Settings of the reach-notes plugin (``[plugins.reach-notes]`` in reach.toml)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class NotesSettings(BaseModel):
    """Where notes go and how big they may grow.

    Limits exist because a model can loop: without them one confused run could
    fill a disk or a context window.
    """

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(
        None,
        description="Notes file. Default: notes.jsonl in the reach data dir; "
        "a relative path is taken relative to the data dir; ~ is expanded.",
    )
    max_note_chars: int = Field(4000, ge=1, le=1_000_000, description="Longest note, in characters.")
    max_tags: int = Field(10, ge=0, le=100, description="Most tags on one note.")
    max_tag_chars: int = Field(40, ge=1, le=200, description="Longest tag, in characters.")
    max_file_bytes: int = Field(
        5 * 1024 * 1024, ge=1024, description="Largest the notes file may grow; appends beyond fail."
    )
    max_results: int = Field(50, ge=1, le=1000, description="Most notes one list or search returns.")
    fsync: bool = Field(True, description="Flush each note to disk before reporting it saved.")
