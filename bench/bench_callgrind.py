"""Instructions per call of one configuration, for valgrind's callgrind.

Timings move with the machine's load; instruction counts do not. This script runs
one configuration (``BENCH_PLUGINS``: empty = the core with the bench's hook plugin,
``all`` = every installed plugin, ``baseline`` = bench_core.py's bare call, else a
comma-separated ``[plugins] load`` list),
300 warm-up calls of the read tool, waits for reach-shape's tokenizer to finish
loading, collects garbage once, then ``BENCH_N`` calls. Run it under callgrind twice, with ``BENCH_N`` =
2000 and 0; the difference of the totals over 2000 is the instructions per call:

    PYTHONHASHSEED=0 BENCH_N=2000 BENCH_PLUGINS=all valgrind --tool=callgrind \\
        --callgrind-out-file=/dev/null .nox/bench/bin/python bench/bench_callgrind.py 2>&1 | grep refs

``BENCH_TOOL=put`` calls the bench's write tool instead. ``BENCH_WRITE=1`` lets
reach-audit's writer run (``reach_audit.flush`` every 1,000 calls and at the end), so
its per-record work is counted too.

The writer alone, per record: ``BENCH_WRITE=end`` writes the warm-up's records, makes
the ``BENCH_N`` calls without letting the writer run, then writes all of their records
with one ``reach_audit.flush`` and leaves; ``BENCH_WRITE=held`` is the same run without
that last flush. The difference of the two totals over ``BENCH_N`` is what the writer
pays per record (build, redact, hash-chain, insert, commit)::

    for w in end held; do PYTHONHASHSEED=0 BENCH_N=2000 BENCH_PLUGINS=reach-audit BENCH_WRITE=$w \\
        valgrind --tool=callgrind --callgrind-out-file=/dev/null .nox/bench/bin/python \\
        bench/bench_callgrind.py 2>&1 | grep refs; done
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_core import ARGS, HookPlugin, make_reach_bench  # noqa: E402
from bench_plugins import make  # noqa: E402

N = int(os.environ.get("BENCH_N", "2000"))
WRITE = os.environ.get("BENCH_WRITE", "")  # "1": flush every 1,000 calls; "end" / "held": see above


async def main() -> None:
    names = os.environ.get("BENCH_PLUGINS", "").strip()
    if names == "baseline":  # bench_core's bare call, the 1.0 of the ratios
        from bench_core import baseline

        for _ in range(300 + N):
            await baseline()
        return
    if not names:
        reach = make_reach_bench()  # the core, the bench's hooks, ``add`` and ``put``
    elif names == "all":
        reach = make(["auto", HookPlugin()])
    else:
        reach = make(["auto", HookPlugin()], load=[n.strip() for n in names.split(",")])
    call = {"id": "c1", "name": os.environ.get("BENCH_TOOL", "add"), "arguments": ARGS}
    for _ in range(300):
        await reach.invoke(dict(call))
    for t in threading.enumerate():
        if t.name == "reach-shape-tokens":
            t.join()
    # What building the Reach and the warm-up left to the garbage collector's young
    # generations is not a call's cost: collected here (in both runs, so it cancels out),
    # it is not walked by the first collections the measured calls trigger (with every
    # plugin, ~750 instructions a call over 2,000 calls).
    gc.collect()
    flush = None
    if WRITE:
        import reach_audit

        await reach_audit.flush(reach)
        flush = reach_audit.flush
    for i in range(N):
        res = await reach.invoke(dict(call))
        res.to_message()
        if WRITE == "1" and i % 1000 == 999:
            await flush(reach)
    if WRITE == "end" and flush is not None:
        await flush(reach)
    if flush is None or WRITE in ("end", "held"):
        # leave at once: closing the Reach (or reach-audit's exit handler) would write the
        # records still pending, work this row does not count (BENCH_WRITE=1 counts it)
        sys.stdout.flush()
        os._exit(0)
    await flush(reach)
    await reach.aclose()


if __name__ == "__main__":
    asyncio.run(main())
