"""reach-shell: run allow-listed programs as argv lists, never through a shell.

The guard rails live in the operating system call, not in parsing what the model
sent: `execve` gets a resolved absolute path and a list of literal arguments, a
fixed environment, a working directory inside the configured root and its own
process group, which is killed as a whole on timeout or cancellation.
"""

from typing import TYPE_CHECKING

from reach_core.lazy import exports

# Public names and their modules, imported on first access (PEP 562): the entry
# point (reach_shell.plugin) imports this package, and listing plugins must not pay for them.
_EXPORTS = {
    "RunCommand": "connector", "CommandRule": "settings", "ShellSettings": "settings",
}

if TYPE_CHECKING:
    from .connector import RunCommand
    from .settings import CommandRule, ShellSettings


__getattr__ = exports(__name__, _EXPORTS)


__all__ = ["CommandRule", "RunCommand", "ShellSettings"]
