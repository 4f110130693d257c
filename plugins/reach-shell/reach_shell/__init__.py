"""reach-shell: run allow-listed programs as argv lists, never through a shell.

The guard rails live in the operating system call, not in parsing what the model
sent: `execve` gets a resolved absolute path and a list of literal arguments, a
fixed environment, a working directory inside the configured root and its own
process group, which is killed as a whole on timeout or cancellation.
"""

from .connector import RunCommand
from .settings import CommandRule, ShellSettings

__all__ = ["CommandRule", "RunCommand", "ShellSettings"]
