"""A real ``reach serve http`` with reach-confirm and reach-audit on 127.0.0.1, for the console tests.

The worker agent runs read tools alone; its writes wait for an operator (``auto_tier = "read"``).
Two operators (ops, ops2) can decide; ``worker`` is an agent and may not.
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx

from reach_core import Connector
from reach_core.testing import make_reach

TOKENS = {"tok-worker-000001": "worker", "tok-ops-000000001": "ops", "tok-ops2-00000001": "ops2"}
WORKER, OPS, OPS2 = "tok-worker-000001", "tok-ops-000000001", "tok-ops2-00000001"


class Credit(Connector):
    """A write tool that counts its real executions (the connector's side of "ran once")."""

    name = "add_credit"
    description = "Add credit to an account. Use when the user asks for credit."
    risk = "write"
    input_schema = {"type": "object", "properties": {"amount": {"type": "integer"}, "account": {"type": "string"},
                                                     "api_key": {"type": "string"}, "note": {"type": "string"}},
                    "required": ["amount"]}

    def __init__(self) -> None:
        self.runs = 0
        self.seen: list[dict[str, Any]] = []

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        self.runs += 1
        self.seen.append(params)
        return {"credited": params["amount"], "run": self.runs}


class Lookup(Connector):
    name = "lookup"
    description = "Look a city up. Use for city facts."
    risk = "read"
    input_schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        return {"city": params["city"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def config(tmp_path: Any) -> dict[str, Any]:
    return {"reach": {"data_dir": str(tmp_path / "data")},
            "plugins": {"reach-serve": {"tokens": TOKENS, "operators": ["ops", "ops2"]}},
            "agents": {"worker": {"auto_tier": "read"}, "ops": {"auto_tier": "read"}, "ops2": {"auto_tier": "read"},
                       "guest": {"deny": ["add_credit"]}}}


def new_reach(tmp_path: Any) -> Any:
    """A Reach on the server's data directory: an agent process of its own (the model's side)."""
    import reach_audit.plugin
    import reach_confirm.plugin
    from reach_serve import plugin as serve_plugin

    return make_reach(("reach-serve", serve_plugin), ("reach-confirm", reach_confirm.plugin),
                      ("reach-audit", reach_audit.plugin), config=config(tmp_path))


class Served:
    def __init__(self, base: str, counter: Credit, reach: Any, data: Any) -> None:
        self.base = base
        self.data = data  # the tmp dir the server's config names (another Reach can open it)
        self.counter = counter
        self.reach = reach
        self._amount = 1000

    def client(self, token: str | None = WORKER) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # verify=False: plain http, and httpx would load the CA bundle for each client (~0.5 s)
        return httpx.Client(base_url=self.base, headers=headers, timeout=30, verify=False)

    def ask(self, amount: int | None = None, **args: Any) -> str:
        """The worker agent calls add_credit (a fresh amount unless given: a new request each
        time); returns the confirmation id it is told to wait for."""
        if amount is None:
            self._amount += 1
            amount = self._amount
        with self.client() as c:
            body = c.post("/v1/invoke", json={"name": "add_credit", "arguments": {"amount": amount, **args}}).json()
        assert body["error"]["code"] == "needs_confirmation", body
        return str(body["meta"].get("confirmation_id") or body["error"]["confirmation_id"])

    def confirmation(self, cid: str) -> dict[str, Any]:
        with self.client(OPS) as c:
            return c.get(f"/v1/confirmations/{cid}").json()  # type: ignore[no-any-return]

    def audit(self, **params: Any) -> list[dict[str, Any]]:
        with self.client(OPS) as c:
            return c.get("/v1/audit/tail", params={"limit": 1000, **params}).json()["entries"]  # type: ignore[no-any-return]

    def login(self, token: str = OPS) -> httpx.Client:
        """An httpx client holding a console session cookie (logged in through the form)."""
        c = httpx.Client(base_url=self.base, timeout=30, follow_redirects=False, verify=False)
        page = c.get("/console/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf, page.text
        resp = c.post("/console/login", data={"csrf": csrf.group(1), "token": token})
        assert resp.status_code == 303 and resp.headers["location"] == "/console/approvals", resp.text
        return c


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html[:2000]
    return found.group(1)


def ran(served: Served, cid: str) -> int:
    """How many times the connector ran the call of confirmation ``cid``."""
    amount = served.confirmation(cid)["arguments"]["amount"]
    return sum(1 for p in served.counter.seen if p["amount"] == amount)


def model_sees(served: Served, cid: str) -> str:
    """What the model is told about confirmation ``cid``: the agent's own process (a Reach of
    its own on the same store) resolves its pending result as the agent loop does. Runs in a
    thread of its own (a browser driver may hold this thread's event loop)."""
    out: list[Any] = []

    async def resolve() -> None:
        from reach_confirm.plugin import QueueConfirmer

        from reach_core import ToolError, ToolResult

        reach = new_reach(served.data)
        pending = ToolResult("call-1", "add_credit", False, None, ToolError("needs_confirmation", "wait"), 0.0,
                             None, {"confirmation_id": cid})
        try:
            out.append(await QueueConfirmer().resolve(reach, pending, 0))
        finally:
            await reach.aclose()

    thread = threading.Thread(target=lambda: asyncio.run(resolve()))
    thread.start()
    thread.join(60)
    seen = out[0]
    assert not seen.ok and seen.error is not None and seen.error.code == "denied", seen
    return str(seen.error.message)


def serve(tmp_path: Any) -> Iterator[Served]:
    import uvicorn
    from reach_serve.app import build_app

    from reach_core.tokens import uvicorn_options

    reach = new_reach(tmp_path)
    counter = Credit()
    reach.register(counter)
    reach.register(Lookup())
    port = free_port()
    options = uvicorn_options(reach.plugin_settings("reach-serve").read_timeout)  # as `reach serve http`
    server = uvicorn.Server(uvicorn.Config(build_app(reach), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on", **options))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    try:
        yield Served(f"http://127.0.0.1:{port}", counter, reach, tmp_path)
    finally:
        server.should_exit = True
        thread.join(10)
