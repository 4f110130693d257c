"""reach-files: read, list, search and write files inside configured folders.

Every path is checked against the roots and then opened component by
component without following symlinks; see ``reach_files.jail`` and
docs/plugins/reach-files.md.
"""

from .jail import Jail, PathMissing, PathRefused
from .settings import FilesSettings

__all__ = ["FilesSettings", "Jail", "PathMissing", "PathRefused"]
