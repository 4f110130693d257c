"""A rebase's todo list, which runs programs from a file the agent can write.

An interactive rebase keeps its remaining steps in `.git/rebase-merge/git-rebase-todo`
(cherry-pick and revert in `.git/sequencer/todo`), and an `exec <command>` (`x`) line
there is a shell command git runs when the rebase goes on (`git rebase --continue`,
`--skip`). The file is as writable as `.git/config`, and no config or option switches
`exec` off, so before a subcommand that works through a todo list runs, git is asked
where the lists are and the call is refused while one holds an `exec` line. A line
written between this look and the run escapes it (like a driver, isolation.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from reach_core import BusinessError, Denied

from .process import run_argv

#: Subcommands that go on through a todo list.
TODO_SUBCOMMANDS = frozenset({"rebase", "cherry-pick", "revert"})
_LISTS = ("rebase-merge/git-rebase-todo", "sequencer/todo")
_EXEC = re.compile(rb"^[ \t]*(?:exec|x)(?:[ \t]|$)", re.MULTILINE | re.IGNORECASE)
_MOST = 4 * 1024 * 1024  # a longer list is refused unread


async def refuse_exec_todo(
    binary: str, global_args: Sequence[str], subcommand: str, *, cwd: Path, env: Mapping[str, str],
    time_limit: float,
) -> None:
    """`Denied` when a todo list git would continue holds an `exec` line (see the module doc)."""
    if subcommand not in TODO_SUBCOMMANDS:
        return
    done = await run_argv(
        [binary, "--no-pager", *global_args, "rev-parse", *(a for name in _LISTS for a in ("--git-path", name))],
        cwd=cwd, env=env, time_limit=time_limit, max_output_bytes=64_000,
    )
    if done.timed_out or done.exit_code != 0:
        raise BusinessError(
            f"git could not say where its rebase state is, so reach-shell did not run `git {subcommand}`: "
            f"{done.stderr.text().strip()[:300] or 'no output'}"
        )
    found = _list_with_exec(cwd, done.stdout.text().splitlines())
    if found is not None:
        raise Denied(
            f"git was not run: its todo list {found} holds an `exec` line, a shell "
            f"command `git {subcommand}` would run when it goes on. reach-shell does not run commands "
            "from a file the agent can write. Tell the user; `git rebase --abort` (or "
            f"`git {subcommand} --abort`) ends it.",
            fix="remove the exec lines from the todo list, or abort the rebase",
        )


def _list_with_exec(cwd: Path, paths: Sequence[str]) -> str | None:
    """The first of the todo lists at `paths` (relative to `cwd`) that holds an `exec` line."""
    for line in paths:
        try:
            with open(cwd / line, "rb") as handle:
                text = handle.read(_MOST + 1)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise BusinessError(f"reach-shell could not read git's todo list {line} ({exc.strerror})") from None
        if len(text) > _MOST or _EXEC.search(text):
            return os.path.normpath(line)
    return None
