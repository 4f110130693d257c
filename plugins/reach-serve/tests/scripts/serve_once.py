"""A ``reach serve http`` app in a process of its own, for tests that measure the
server process (its memory) from outside. Prints ``port pid`` on stderr once listening.

    python serve_once.py DATA_DIR MAX_BODY_BYTES
"""

from __future__ import annotations

import asyncio
import socket
import sys

import uvicorn
from reach_serve import plugin as serve_plugin
from reach_serve.app import build_app

from reach_core.testing import make_reach


def main() -> None:
    data_dir, max_body = sys.argv[1], int(sys.argv[2])
    settings = {"tokens": {"tok-worker-000001": "worker"}, "max_body_bytes": max_body}
    reach = make_reach(("reach-serve", serve_plugin),
                       config={"reach": {"data_dir": data_dir}, "plugins": {"reach-serve": settings},
                               "agents": {"worker": {}}})
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(build_app(reach), log_level="warning", lifespan="on"))

    async def run() -> None:
        async def announce() -> None:
            while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag only
                await asyncio.sleep(0.01)
            import os

            print(sock.getsockname()[1], os.getpid(), file=sys.stderr, flush=True)

        task = asyncio.create_task(announce())
        await server.serve(sockets=[sock])
        task.cancel()

    asyncio.run(run())


if __name__ == "__main__":
    main()
