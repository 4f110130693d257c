"""Red team: two clients that send the same ``run_id`` do not share a run.

``POST /v1/invoke`` takes the client's ``run_id``, and each token acts as its own agent.
The core kept a run's guard-rail state under the run id alone, so one client could pick
another's run id (a framework's thread id is easy to guess: ``thread-1``) and, once the
other had made a call three times, send the same call and get the other's result back
(the identical-call guard's "earlier result"), or be handed its cached reads. The core
now keys a run's state by agent and run id (tests/test_redteam_run_agents.py).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from reach_serve.app import build_app
from reach_serve.settings import ServeHttpSettings

from reach_core import CallContext, connector
from reach_core.testing import make_reach


@connector(risk="read")
async def my_messages(folder: str, ctx: CallContext) -> str:
    """The messages of the calling agent in a folder. Use when asked about messages."""
    return f"messages of {ctx.agent} in {folder}"


TOKENS = {"tok-support-000001": "support", "tok-ops-0000000001": "ops"}
RUN_IDS = ["thread-1", "run-1", "1", "default", "a" * 200]


@pytest.mark.parametrize("read_cache", [False, True])
@pytest.mark.parametrize("run_id", RUN_IDS)
async def test_another_client_using_the_same_run_id_gets_its_own_answer(tmp_path: Any, run_id: str,
                                                                        read_cache: bool) -> None:
    reach = make_reach(config={"agents": {"support": {}, "ops": {}}, "reach": {"read_cache": read_cache}},
                       data_dir=tmp_path / "data")
    reach.register(my_messages)
    app = build_app(reach, ServeHttpSettings(tokens=TOKENS), manage=False)
    body = {"name": "my_messages", "arguments": {"folder": "inbox"}, "run_id": run_id}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1",
                                 headers={"Authorization": "Bearer tok-ops-0000000001"}) as ops:
        for _ in range(3):
            assert (await ops.post("/v1/invoke", json=body)).json()["content"] == "messages of ops in inbox"
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1",
                                 headers={"Authorization": "Bearer tok-support-000001"}) as support:
        got = (await support.post("/v1/invoke", json=body)).json()
    assert got["ok"] and got["content"] == "messages of support in inbox", got
