"""Red-team family: a command reads reach's own environment through /proc.

The child's environment is minimal, but the child runs as reach's user, and
`/proc/<reach's pid>/environ` of a same-user process is readable: `cat
/proc/<ppid>/environ` printed the API keys reach was started with. reach-shell now
makes reach non-dumpable, which gives its /proc entries to root.

The attack needs reach to run as an ordinary user (root reads every /proc entry):
a helper process drops to `nobody` (then marks itself dumpable again, as a process
started by that user is), builds `run_command` and runs the readers. Failed before the
fix (every reader printed the secret).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

SECRET = "sk-proc-environ-SECRET-1234"

_HELPER = textwrap.dedent(
    """
    import asyncio, ctypes, json, os, sys, tempfile, shutil
    from pathlib import Path
    import reach_shell.connector, reach_shell.process, reach_shell.isolation, reach_shell.gitcheck
    from reach_shell import RunCommand, ShellSettings
    import asyncio.subprocess, subprocess, weakref, contextlib, stat, secrets
    if os.geteuid() == 0:  # act as reach started by an ordinary user
        os.setgid(65534)
        os.setuid(65534)
        ctypes.CDLL(None, use_errno=True).prctl(4, 1, 0, 0, 0)  # dumpable, as after a plain exec
    root = Path(sys.argv[1])
    tool = RunCommand(ShellSettings(root=root, commands={"cat": {}, "grep": {}, "head": {}, "tail": {}},
                                    confine_paths=False))  # the /proc layer itself, under the argument check
    me = os.getpid()
    calls = [
        ("cat", [f"/proc/{me}/environ"]),
        ("cat", [f"/proc/self/../{me}/environ"]),
        ("cat", [f"/proc/{me}/task/{me}/environ"]),
        ("head", ["-c", "100000", f"/proc/{me}/environ"]),
        ("grep", ["-a", "sk-", f"/proc/{me}/environ"]),
        ("grep", ["-ra", "sk-proc", f"/proc/{me}/task/"]),
        ("tail", ["-c", "+1", f"/proc/{me}/environ"]),
        ("cat", [f"/proc/{me}/cmdline", f"/proc/{me}/environ"]),
    ]
    async def main():
        out = []
        for command, args in calls:
            done = await tool.execute({"command": command, "args": args})
            out.append({"call": [command, *args], "stdout": done["stdout"], "stderr": done["stderr"]})
        print(json.dumps(out))
    asyncio.run(main())
    """
)


@pytest.fixture
def shared_root() -> Iterator[Path]:
    """A root `nobody` can use (pytest's own temporary folders are private to root)."""
    top = Path(tempfile.mkdtemp(prefix="reach-proc-"))
    try:
        top.chmod(0o777)
        (top / "root").mkdir()
        (top / "root").chmod(0o777)
        (top / "tmp").mkdir()
        (top / "tmp").chmod(0o1777)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_command_cannot_read_reachs_environment_through_proc(shared_root: Path) -> None:
    import json

    env = {**os.environ, "OPENAI_API_KEY": SECRET, "TMPDIR": str(shared_root / "tmp")}
    done = subprocess.run(
        [sys.executable, "-c", _HELPER, str(shared_root / "root")],
        env=env, capture_output=True, text=True, timeout=60, check=False, cwd=shared_root,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert len(results) == 8
    for result in results:
        assert SECRET not in result["stdout"], result["call"]
        assert SECRET not in result["stderr"], result["call"]


def test_reach_still_reads_its_own_proc_entries() -> None:
    helper = (
        "from reach_shell.isolation import hide_own_environment as hide; "
        "print(hide(), len(open('/proc/self/environ', 'rb').read()) > 0)"
    )
    done = subprocess.run([sys.executable, "-c", helper], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True", "True"]
