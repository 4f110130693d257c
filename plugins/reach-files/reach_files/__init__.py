"""reach-files: read, list, search and write files inside configured folders.

Every path is checked against the roots and then opened component by
component without following symlinks; see ``reach_files.jail`` and
docs/plugins/reach-files.md.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .jail import Jail, PathMissing, PathRefused
    from .settings import FilesSettings


def __getattr__(name: str) -> Any:
    """``FilesSettings`` (pydantic) and the jail (pathlib) are imported on first access: the
    entry point imports this package, and listing plugins must not pay for them."""
    if name == "FilesSettings":
        from .settings import FilesSettings

        return FilesSettings
    if name in ("Jail", "PathMissing", "PathRefused"):
        from . import jail

        return getattr(jail, name)
    raise AttributeError(f"module 'reach_files' has no attribute {name!r}")

__all__ = ["FilesSettings", "Jail", "PathMissing", "PathRefused"]
