"""Time, children and output are bounded: nothing outlives its call."""

from __future__ import annotations

import asyncio
import time

from shell_procs import PYTHON, process_alive, wait_gone

SPAWN_AND_SLEEP = (
    "import subprocess, time\n"
    "child = subprocess.Popen(['sleep', '60'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(60)\n"
)


def _first_pid(stdout: str) -> int:
    return int(stdout.split()[0])


async def test_timeout_kills_the_command_and_its_children(make_tool) -> None:
    tool = make_tool(python=PYTHON, timeout=1.0)
    started = time.monotonic()
    result = await tool.execute({"command": "python", "args": ["-c", SPAWN_AND_SLEEP]})
    assert time.monotonic() - started < 4
    assert result["timed_out"] is True
    assert result["exit_code"] is None
    assert "1 s limit" in result["note"]
    child = _first_pid(result["stdout"])
    assert wait_gone(child), f"grandchild {child} survived the timeout"


async def test_cancelling_the_call_kills_the_process_group(make_tool) -> None:
    tool = make_tool(python=PYTHON, timeout=30.0)
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        "open(sys.argv[1], 'w').write(str(child.pid))\n"
        "child.wait()\n"
    )
    pid_file = tool.root / "child.pid"
    task = asyncio.create_task(
        tool.execute({"command": "python", "args": ["-c", code, str(pid_file)]})
    )
    for _ in range(200):
        await asyncio.sleep(0.02)
        if pid_file.exists() and pid_file.read_text():
            break
    child = int(pid_file.read_text())
    assert process_alive(child)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert wait_gone(child), f"grandchild {child} survived cancellation"


async def test_background_leftovers_die_with_a_finished_command(make_tool) -> None:
    code = "import subprocess\nprint(subprocess.Popen(['sleep', '60']).pid)\n"
    started = time.monotonic()
    result = await make_tool(python=PYTHON).execute({"command": "python", "args": ["-c", code]})
    assert time.monotonic() - started < 3  # did not wait for the sleeping child
    assert result["exit_code"] == 0
    assert wait_gone(_first_pid(result["stdout"]))


async def test_exit_code_and_stderr_are_reported(make_tool) -> None:
    code = "import sys; print('bad input', file=sys.stderr); sys.exit(3)"
    result = await make_tool(python=PYTHON).execute({"command": "python", "args": ["-c", code]})
    assert result == {"exit_code": 3, "stdout": "", "stderr": "bad input\n"}


async def test_huge_output_keeps_head_and_tail_around_a_marker(make_tool) -> None:
    code = "import sys\nsys.stdout.write('START' + 'x' * 5_000_000 + 'END')\n"
    tool = make_tool(python=PYTHON, max_output_bytes=1000)
    result = await tool.execute({"command": "python", "args": ["-c", code]})
    out = result["stdout"]
    assert out.startswith("START") and out.endswith("END")
    assert "[5000008 bytes total" not in out
    assert f"…[{5_000_008 - 1000} bytes omitted]…" in out
    assert len(out) < 1100


async def test_a_second_stream_flood_does_not_block(make_tool) -> None:
    # A child filling stderr while we only look at stdout must not deadlock.
    code = "import sys\nsys.stderr.write('e' * 3_000_000)\nprint('done')\n"
    result = await make_tool(python=PYTHON, timeout=5).execute(
        {"command": "python", "args": ["-c", code]}
    )
    assert result["exit_code"] == 0 and result["stdout"] == "done\n"
    assert "bytes omitted" in result["stderr"]
