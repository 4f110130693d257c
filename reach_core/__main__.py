"""The ``reach`` command's entry point: ``reach --version`` answers before click loads.

Everything else goes to :func:`reach_core.cli.main`. Importing click (and the command
tree) is most of the command's start-up; a version check in a shell prompt or a CI
step should not pay for it.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from . import __version__

        sys.stdout.write(f"reach, version {__version__}\n")
        return
    from .cli import main as run

    run()


if __name__ == "__main__":
    main()
