"""Running one argv in its own process group, bounded in time and output.

`start_new_session=True` makes the child the leader of a new session and process
group, so `os.killpg` reaches everything it forked (unless a descendant starts a
session of its own, which only a cgroup or container would contain). The group
is killed on timeout, on cancellation of the awaiting task, and after a normal
exit too, so nothing the command left running in the background survives it.

A protocol rather than `asyncio.subprocess.Process` is used on purpose:
`Process.wait()` also waits for the pipes to close, which a background child
holding stdout delays until the timeout; here the leader's exit is its own event,
and output goes straight into the bounded buffers without a stream in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .capture import HeadTail

# Once the group is dead the pipes reach EOF at once; this bounds the wait for a
# descendant that escaped into its own session and still holds a pipe open.
_DRAIN_GRACE = 1.0


@dataclass(frozen=True)
class Completed:
    """What came out of one run."""

    exit_code: int | None
    stdout: HeadTail
    stderr: HeadTail
    timed_out: bool
    elapsed_ms: float


class _Capture(asyncio.SubprocessProtocol):
    """Feeds both pipes into bounded buffers; signals the leader's exit and the pipes' EOF."""

    def __init__(self, limit: int) -> None:
        loop = asyncio.get_running_loop()
        self.buffers = {1: HeadTail(limit), 2: HeadTail(limit)}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.drained: asyncio.Future[None] = loop.create_future()
        self._open = {1, 2}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.buffers[fd].feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if not self._open and not self.drained.done():
            self.drained.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


async def run_argv(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    time_limit: float,
    max_output_bytes: int,
) -> Completed:
    """Execute `argv` (argv[0] an absolute path) without a shell; never leave it running."""
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    transport, capture = await loop.subprocess_exec(
        lambda: _Capture(max_output_bytes),
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        close_fds=True,
    )
    pid = transport.get_pid()
    timed_out = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(capture.exited), time_limit)
        except TimeoutError:
            timed_out = True
        kill_group(pid)
        await capture.exited
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(capture.drained), _DRAIN_GRACE)
    finally:
        # Also the path of cancellation: the group dies before the error travels on.
        kill_group(pid)
        transport.close()
    exit_code = transport.get_returncode()
    return Completed(
        exit_code=None if timed_out else exit_code,
        stdout=capture.buffers[1],
        stderr=capture.buffers[2],
        timed_out=timed_out,
        elapsed_ms=(time.monotonic() - started) * 1000,
    )


def sweep_escaped(home: Path, since: float = 0.0) -> list[int]:
    """SIGKILL every process still running with this call's private HOME (Linux /proc).

    The process group does not hold a descendant that started a session of its own
    (`setsid`, a daemon such as gpg-agent or `ssh -f`): it survives `killpg`. It still
    carries the call's HOME, a directory no other process is given while the call holds
    it, so it is found by its environment and killed. A program that re-executes itself
    with another environment is not found; only a cgroup or container catches that.

    `since` (wall clock, the call's start) skips processes older than the call: a /proc
    entry's inode is made when the entry is first looked at, never before its process
    started, so its ctime is never earlier than the start of a descendant.
    """
    needle = b"HOME=" + os.fsencode(home) + b"\0"
    own = os.getpid()
    killed: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return killed
    for name in names:
        if not name.isdigit() or int(name) == own:
            continue
        try:
            if since and os.stat(f"/proc/{name}").st_ctime < since:
                continue
        except OSError:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = b"\0" + handle.read()
        except OSError:
            continue  # gone, or not ours to read
        if b"\0" + needle in environ:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(name), signal.SIGKILL)
                killed.append(int(name))
    return killed


def kill_group(pgid: int) -> None:
    """SIGKILL the whole process group; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
