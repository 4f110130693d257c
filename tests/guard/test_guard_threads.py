"""The pool sync connectors run in: bounded, cancellable while queued, never
keeping the process alive."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

from reach_core.guard.threads import DaemonPool


def test_pool_is_bounded_and_skips_jobs_whose_caller_gave_up():
    pool = DaemonPool(2, name="bound-check")
    gate = threading.Event()
    ran: list[int] = []

    def job(i):
        def run():
            ran.append(i)
            gate.wait(5)
            return i
        return run

    futures = [pool.submit(job(i)) for i in range(4)]
    time.sleep(0.2)
    assert sorted(ran) == [0, 1]  # two workers, two jobs queued
    assert sum(t.name.startswith("bound-check") for t in threading.enumerate()) <= 2
    assert futures[3].cancel()  # its caller timed out while it was queued
    gate.set()
    assert [f.result(5) for f in futures[:3]] == [0, 1, 2]
    time.sleep(0.1)
    assert sorted(ran) == [0, 1, 2]  # the cancelled job never ran
    assert pool.pending == 0
    pool.shutdown()


def test_a_hung_sync_tool_does_not_keep_the_process_alive(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent(f"""
        import asyncio, time
        from reach_core import Reach, Connector

        class Hang(Connector):
            name = "hang_forever"
            description = "never returns"
            risk = "read"
            timeout = 0.2
            max_retries = 0

            def execute(self, params):
                time.sleep(3600)

        async def main():
            r = Reach({{"reach": {{"data_dir": {str(tmp_path)!r}, "log_calls": False}}}}, plugins=[])
            r.register(Hang())
            print((await r.invoke("hang_forever", {{}})).error.code)

        asyncio.run(main())
    """))
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "timeout", out.stderr
    assert time.monotonic() - t0 < 15
