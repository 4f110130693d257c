"""Process helpers shared by the reach-shell tests (a unique module name, not `conftest`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

#: An allow-list entry for the interpreter running the tests: lets a test spawn
#: children and print large output without relying on a shell.
PYTHON = {"path": sys.executable}


def process_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (killed, not yet reaped by init) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone between lookup and read
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        time.sleep(0.02)
    return False
