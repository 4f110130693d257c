"""The ``reach`` command's entry point: ``reach --version`` and ``reach plugins`` answer before click loads.

Everything else goes to :func:`reach_core.cli.main`. Importing click (and the command
tree) is most of the command's start-up; a version check in a shell prompt or a CI
step should not pay for it, nor a look at what is installed: ``reach plugins`` and
``reach plugins --json`` (exactly those arguments) are answered by
:func:`reach_core.plugins_cli.run`, which prints what click's command would.
"""

from __future__ import annotations

import os
import sys

#: the command lines answered without click, and whether each asks for JSON
_PLUGINS = {("plugins",): False, ("plugins", "--json"): True}


def main() -> None:
    args = tuple(sys.argv[1:])
    if args == ("--version",):
        from . import __version__

        sys.stdout.write(f"reach, version {__version__}\n")
        return
    # click's shell completion (the variable set) answers any command line: leave it to click
    if args in _PLUGINS and not os.environ.get("_REACH_COMPLETE"):
        from .plugins_cli import run as plugins

        plugins(as_json=_PLUGINS[args])
    from .cli import main as run

    run()


if __name__ == "__main__":
    main()
