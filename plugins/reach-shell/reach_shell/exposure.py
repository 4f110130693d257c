"""Which directories the agent can write through other tools, and where they meet the shell.

A shell root that is also a reach-files root is a normal set-up, and the reason
config isolation exists: the agent can write `.git/config`, `.gitattributes`,
dotfiles and scripts there. Isolation covers the programs reach-shell knows;
any other allow-listed program that reads a config file from its working
directory (make, npm, pytest, ...) is a program the agent can reprogram. So the
overlap is reported: a warning at start-up and a `reach tools lint` problem.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

FILES_PLUGIN = "reach-files"


def writable_roots(reach: Any) -> list[Path]:
    """The roots reach-files can write in this Reach (its default is `<data_dir>/files`)."""
    if reach is None:
        return []
    loaded = any(
        getattr(info, "name", None) == FILES_PLUGIN and getattr(info, "status", None) == "loaded"
        for info in getattr(reach, "plugin_info", ())
    )
    if not loaded:
        return []
    settings = reach.plugin_settings(FILES_PLUGIN)
    roots = list(getattr(settings, "roots", None) or [])
    if not roots:
        roots = [Path(reach.data_dir) / "files"]
    return [Path(os.path.realpath(os.path.expanduser(str(root)))) for root in roots]


def _overlaps(a: Path, b: Path) -> bool:
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def overlap_problems(
    shell_root: Path, search_path: str, binaries: dict[str, str], writable: list[Path]
) -> list[str]:
    """One sentence per way the agent can change what an allow-listed command does."""
    problems = []
    for root in writable:
        if _overlaps(shell_root, root):
            problems.append(
                f"the shell root {shell_root} overlaps the reach-files root {root}, which the "
                "agent can write: it can plant config files (.git/config, .gitattributes, "
                "Makefile, package.json, ...) that allow-listed programs read. reach-shell "
                "isolates git and tar; keep other programs that read config from their "
                "working directory off the list, or use separate roots "
                "(docs/plugins/reach-shell.md, 'Files the agent can write')"
            )
        for folder in search_path.split(os.pathsep):
            if folder and _overlaps(Path(os.path.realpath(folder)), root):
                problems.append(
                    f"search_path entry {folder} lies in the writable root {root}: the agent "
                    "can plant programs that commands start by name (tar -z runs gzip)"
                )
        for name, binary in sorted(binaries.items()):
            if Path(os.path.realpath(binary)).is_relative_to(root):
                problems.append(
                    f"the binary of `{name}` ({binary}) lies in the writable root {root}: "
                    "the agent can replace the program itself"
                )
    return problems


def warn(problems: list[str], redactor: Any = None) -> None:
    """Each problem, a warning on ``reach.shell`` (masked by the Reach's redactor: a path or
    a command line can hold a configured secret)."""
    from reach_core.logs import plugin_logger

    log = plugin_logger("shell", redactor)
    for problem in problems:
        log.warning("reach-shell: %s", problem)
