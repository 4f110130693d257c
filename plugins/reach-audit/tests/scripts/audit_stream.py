"""Invoke tools forever and print what is acknowledged; the crash test kills it with SIGKILL.

usage: audit_stream.py DATA_DIR batched|sync [TAG]

batched: every 7 calls, ``await reach_audit.flush(reach)``, then print the ids
         of the calls made before it ("acknowledged = flushed").
sync:    ``durability = "sync"``; print each id as soon as its invoke returned.
"""

from __future__ import annotations

import asyncio
import sys

import reach_audit
import reach_audit.plugin as audit_plugin

from reach_core import Reach, connector


@connector(risk="read")
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first
        b: second
    """
    return a + b


async def main(data_dir: str, mode: str, tag: str) -> None:
    reach = Reach(
        {"reach": {"data_dir": data_dir, "log_calls": False},
         "plugins": {"reach-audit": {"durability": mode, "log": "off"}}},
        plugins=[audit_plugin],
    )
    reach.register(add)
    done: list[str] = []
    i = 0
    while True:
        i += 1
        batch = [{"id": f"{tag}{i}-{j}", "name": "add", "arguments": {"a": i, "b": j}} for j in range(3)]
        await reach.invoke_many(batch)
        ids = [c["id"] for c in batch]
        if mode == "sync":
            print(" ".join(ids), flush=True)
            continue
        done.extend(ids)
        if i % 7 == 0:
            await reach_audit.flush(reach)
            print(" ".join(done), flush=True)
            done.clear()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "k"))
