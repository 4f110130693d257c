"""Rate limits shared through a real Redis server: two Reach instances, one limit."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time

import pytest

from reach_core import connector

# In CI (REACH_REQUIRE_SERVICES=1) a missing server is a failure, not a skip.
pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None and not os.environ.get("REACH_REQUIRE_SERVICES"),
    reason="redis-server is not installed (.ci/run installs it)",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url():
    import redis  # noqa: F401  (a test dependency of reach-core: the `limits` redis storage needs it)
    port = _free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(5)


async def test_rate_limit_shared_by_two_instances_through_redis(make_reach, redis_url, tmp_path):
    @connector(risk="read")
    async def get_shared(i: int) -> int:
        """Echo."""
        return i

    cfg = {"limits": {"storage": redis_url}, "connectors": {"get_shared": {"rate_limit": "30/minute"}}}
    a = make_reach(get_shared, data_dir=tmp_path / "a", **cfg)
    b = make_reach(get_shared, data_dir=tmp_path / "b", **cfg)
    results = await asyncio.gather(*(r.invoke("get_shared", {"i": i}) for i in range(100) for r in (a, b)))
    assert sum(x.ok for x in results) == 30
    limited = [x for x in results if not x.ok]
    assert {x.error.code for x in limited} == {"rate_limited"}
    assert all(x.error.retry_after > 0 for x in limited)
