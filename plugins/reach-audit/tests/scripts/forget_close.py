"""A script that never flushes nor closes: its records must still be written at exit.

usage: forget_close.py DATA_DIR N
"""

from __future__ import annotations

import asyncio
import sys

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


reach = Reach({"reach": {"data_dir": sys.argv[1]}, "plugins": {"reach-audit": {"log": "off"}}},
              plugins=[audit_plugin])
reach.register(add)


async def main(n: int) -> None:
    for i in range(n):
        await reach.invoke({"id": f"f{i}", "name": "add", "arguments": {"a": i, "b": 1}})


asyncio.run(main(int(sys.argv[2])))  # returns at once: the writer's 50 ms have not passed
asyncio.run(main(int(sys.argv[2]) // 2))  # a second loop, like a second reach.run_sync()
