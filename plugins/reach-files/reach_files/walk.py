"""Walking a folder tree within a time and entry budget, without following symlinks.

The connectors run in the core's worker threads (they are plain ``def``), so
the event loop keeps running while they work. But a thread cannot be killed:
when the call's deadline passes, the core answers the model and abandons the
thread, which keeps its pool slot until it returns. So every walk checks a
:class:`Budget` as it goes -- each folder entry counts, and the clock is
read every 16 entries, every 64 names matched and before each file a text search reads -- and stops
cleanly, handing back what it found with a note. The work between two checks
is small and bounded (16 ``readdir`` entries matched against a glob that
cannot backtrack, or one file of at most ``max_search_file_bytes``), so a
walk neither holds the GIL for long nor outlives its deadline by more than
one such step.

The walk itself is iterative (no recursion limit to hit on a deep tree), keeps
one descriptor per level of the current path only, opens every folder from its
parent's descriptor with ``O_NOFOLLOW`` (a folder swapped for a symlink is
skipped, never followed), and stops descending at ``max_depth``.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Budget", "Folder", "walk"]

S = TypeVar("S")

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class Budget:
    """How long (``time.monotonic()`` deadline) and how many folder entries a walk may take.

    ``stopped`` is None while there is budget left, else the reason, written to
    end a sentence shown to the model ("stopped after looking at 100000 entries").
    """

    __slots__ = ("deadline", "max_entries", "entries", "stopped", "seconds")

    def __init__(self, deadline: float, max_entries: int) -> None:
        self.deadline = deadline
        self.seconds = max(0.0, deadline - time.monotonic())
        self.max_entries = max_entries
        self.entries = 0
        self.stopped: str | None = None

    def check_clock(self) -> bool:
        """False once the budget is spent; reads the clock (before work that is not an entry)."""
        if self.stopped is None and time.monotonic() >= self.deadline:
            self.stopped = self.out_of_time()
        return self.stopped is None

    def out_of_time(self) -> str:
        return f"stopped at the time limit ({self.seconds:.1f} s) after looking at {self.entries} entries"


@dataclass
class Folder(Generic[S]):
    """One folder of the walk: its descriptor (valid until the next step), its path
    relative to the top (``""`` or ``"a/b/"``), its non-folder entries sorted, and the
    state the caller gave it."""

    fd: int
    rel: str
    files: list[str]
    state: S


def _list(fd: int, budget: Budget) -> tuple[list[str], list[str]]:
    """The folder's entries split into folders and the rest, sorted; counted against the budget
    (counted inline: this loop is the walk's hot path)."""
    files: list[str] = []
    dirs: list[str] = []
    if budget.stopped is not None:
        return files, dirs
    room = budget.max_entries - budget.entries
    deadline = budget.deadline
    count = 0
    try:
        with os.scandir(fd) as it:
            for entry in it:
                count += 1
                if count > room:
                    budget.stopped = f"stopped after looking at {budget.max_entries} folder entries"
                    break
                if count & 15 == 1 and time.monotonic() >= deadline:  # the clock every 16 entries
                    budget.entries += count
                    budget.stopped = budget.out_of_time()
                    count = 0
                    break
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                (dirs if is_dir else files).append(entry.name)
    except OSError:
        pass  # a folder that cannot be read is left out, like one that vanished
    budget.entries += count
    files.sort()
    dirs.sort()
    return files, dirs


def walk(top: int, state: S, enter: Callable[[S, str], S | None], budget: Budget, max_depth: int,
         skipped: list[str]) -> Generator[Folder[S], None, None]:
    """Folders below the directory ``top`` (itself first), depth first, sorted by name.

    ``enter(state, name)`` gives the state of a subfolder, or None to leave it
    unopened (the glob cannot match anything below it). Folders more than
    ``max_depth`` levels below ``top`` are not opened; one note about them is
    appended to ``skipped``.
    """
    stack: list[tuple[int, str, S, Iterator[str]]] = []
    try:
        fd = os.dup(top)
        stack.append((fd, "", state, iter(())))
        files, dirs = _list(fd, budget)
        stack[-1] = (fd, "", state, iter(dirs))
        yield Folder(fd, "", files, state)
        entered = 0
        while stack and budget.stopped is None:
            pfd, prel, pstate, names = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                os.close(pfd)
                continue
            entered += 1
            if entered & 63 == 0 and not budget.check_clock():
                break  # a folder of many subfolders: each one is matched against the glob here
            child = enter(pstate, name)
            if child is None:
                continue
            if len(stack) > max_depth:
                if not skipped:
                    skipped.append(
                        f"folders more than {max_depth} levels deep were not searched "
                        f"(e.g. {prel}{name}); search inside them with `path`"
                    )
                continue
            try:
                cfd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    budget.stopped = "stopped: the process has no file descriptors left"
                continue  # vanished, swapped for a symlink, or not readable: skip it
            rel = f"{prel}{name}/"
            stack.append((cfd, rel, child, iter(())))
            files, dirs = _list(cfd, budget)
            stack[-1] = (cfd, rel, child, iter(dirs))
            yield Folder(cfd, rel, files, child)
    finally:
        for entry in stack:
            os.close(entry[0])
