"""Red-team family: a descendant that leaves the process group outlives its call.

Every run is its own process group, killed at the end; a descendant that calls
`setsid` (a daemon: gpg-agent, `ssh -f`, anything that daemonizes) is in a group of
its own and survived. It still carries the call's private HOME, so reach-shell now
finds it by its environment (/proc) and kills it too, on a normal exit, a timeout
and a cancellation. Each variant failed before (the escaped process lived on).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Iterator

import pytest
from shell_procs import PYTHON, process_alive, wait_gone

_ESCAPES = {
    "setsid child": (
        "import os, sys, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.setsid(); time.sleep(30); os._exit(0)\n"
        "print(pid, flush=True)\n"
    ),
    "double fork daemon": (
        "import os, sys, time\n"
        "r, w = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    pid = os.fork()\n"
        "    if pid: os.write(w, str(pid).encode()); os._exit(0)\n"
        "    os.close(w); time.sleep(30); os._exit(0)\n"
        "os.close(w); print(os.read(r, 32).decode(), flush=True)\n"
    ),
    "setpgid child": (
        "import os, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.setpgid(0, 0); time.sleep(30); os._exit(0)\n"
        "print(pid, flush=True)\n"
    ),
    "setsid child closing its streams": (
        "import os, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.setsid()\n"
        "    for fd in (0, 1, 2): os.close(fd)\n"
        "    time.sleep(30); os._exit(0)\n"
        "print(pid, flush=True)\n"
    ),
    "setsid child ignoring signals": (
        "import os, signal, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.setsid()\n"
        "    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT): signal.signal(s, signal.SIG_IGN)\n"
        "    time.sleep(30); os._exit(0)\n"
        "print(pid, flush=True)\n"
    ),
}


def _cleanup(pid: int) -> None:
    if process_alive(pid):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("name", sorted(_ESCAPES))
async def test_an_escaped_descendant_dies_with_a_finished_command(make_tool, name: str) -> None:
    result = await make_tool(python=PYTHON, timeout=10).execute({"command": "python", "args": ["-c", _ESCAPES[name]]})
    escaped = int(result["stdout"].split()[0])
    try:
        assert wait_gone(escaped), f"{name}: process {escaped} outlived its call"
    finally:
        _cleanup(escaped)


@pytest.mark.parametrize("name", ["setsid child", "double fork daemon"])
async def test_an_escaped_descendant_dies_at_the_timeout(make_tool, name: str) -> None:
    code = _ESCAPES[name] + "import time; time.sleep(30)\n"
    result = await make_tool(python=PYTHON, timeout=1).execute({"command": "python", "args": ["-c", code]})
    assert result["timed_out"] is True
    escaped = int(result["stdout"].split()[0])
    try:
        assert wait_gone(escaped), f"{name}: process {escaped} outlived the timeout"
    finally:
        _cleanup(escaped)


async def test_an_escaped_descendant_dies_when_the_call_is_cancelled(make_tool) -> None:
    tool = make_tool(python=PYTHON, timeout=30)
    pid_file = tool.root / "escaped.pid"
    code = (
        "import os, sys, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.setsid(); time.sleep(30); os._exit(0)\n"
        "open(sys.argv[1], 'w').write(str(pid))\n"
        "time.sleep(30)\n"
    )
    task = asyncio.create_task(tool.execute({"command": "python", "args": ["-c", code, str(pid_file)]}))
    for _ in range(250):
        await asyncio.sleep(0.02)
        if pid_file.exists() and pid_file.read_text():
            break
    escaped = int(pid_file.read_text())
    try:
        assert process_alive(escaped)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert wait_gone(escaped), f"process {escaped} outlived the cancelled call"
    finally:
        _cleanup(escaped)


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "30"], start_new_session=True)
    yield process
    process.kill()
    process.wait()


async def test_other_processes_are_left_alone(make_tool, bystander: subprocess.Popen[bytes]) -> None:
    """Only processes holding this call's HOME: a sleeper of the test's own, in a session of
    its own, survives."""
    result = await make_tool(python=PYTHON).execute({"command": "python", "args": ["-c", _ESCAPES["setsid child"]]})
    _cleanup(int(result["stdout"].split()[0]))
    assert bystander.poll() is None
