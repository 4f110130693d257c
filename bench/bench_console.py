"""Benchmark of the operators' console: the approvals page with many pending requests.

    python bench/bench_console.py [--pending 1000] [--rounds 30]

Figures (server time: the ASGI app called in process, no network, no browser):
  first load         the first GET after start: templates compiled, the page's requests redacted
  approvals page     GET /console/approvals with N pending requests (median, p95); target < 200 ms
                     (the page shows the newest 100 and the count; redacted views are cached by id)
  list fragment      GET /console/approvals/fragment (what the page polls when the list changed)
  unchanged poll     the same poll when nothing changed (answered 204, no body)
Each request reads the queue from the store, redacts and pretty-prints every request's
arguments and renders the template: nothing is cached between requests.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for plugin in ("reach-serve", "reach-confirm", "reach-audit"):
    sys.path.insert(0, str(ROOT / "plugins" / plugin))
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import reach_audit.plugin as audit_plugin  # noqa: E402
import reach_confirm.plugin as confirm_plugin  # noqa: E402
from reach_serve import plugin as serve_plugin  # noqa: E402
from reach_serve.app import build_app  # noqa: E402

from reach_core import Connector  # noqa: E402
from reach_core.testing import make_reach  # noqa: E402

OPS = "tok-ops-000000001"


class Refund(Connector):
    name = "refund_order"
    description = "Refund an order. Use when the customer asks for their money back."
    risk = "dangerous"
    input_schema = {"type": "object", "properties": {"order": {"type": "string"}, "amount": {"type": "number"},
                                                     "note": {"type": "string"}, "api_key": {"type": "string"}},
                    "required": ["order", "amount"]}

    async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        return {"refunded": params["amount"]}


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms"


async def main(pending: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = {"reach": {"data_dir": tmp},
                  "plugins": {"reach-serve": {"tokens": {OPS: "ops"}, "operators": ["ops"]}},
                  "agents": {"support": {"auto_tier": "read"}}}
        reach = make_reach(("reach-serve", serve_plugin), ("reach-confirm", confirm_plugin),
                           ("reach-audit", audit_plugin), config=config)
        reach.register(Refund())
        await reach.start()
        queue = confirm_plugin.queue_for(reach)
        tool = reach.tool("refund_order")
        started = time.perf_counter()
        for i in range(pending):
            ctx = SimpleNamespace(agent="support", run_id=f"run-{i}")
            await queue.request(tool, {"order": f"A-{i:05d}", "amount": 10 + i % 90,
                                       "note": f"customer {i} asked twice; password=hunter{i:04d}",
                                       "api_key": f"sk-live-{i:020d}"}, ctx, "always")
        print(f"set-up: {pending} pending requests in {time.perf_counter() - started:.1f} s")

        app = build_app(reach, manage=False)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console.test") as c:
            page = await c.get("/console/login")
            csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
            assert (await c.post("/console/login", data={"csrf": csrf, "token": OPS})).status_code == 303

            async def timed(path: str, **params: str) -> tuple[list[float], httpx.Response]:
                samples, resp = [], None
                for _ in range(rounds):
                    t = time.perf_counter()
                    resp = await c.get(path, params=params)
                    samples.append(time.perf_counter() - t)
                assert resp is not None and resp.status_code in (200, 204), resp
                return samples, resp

            t = time.perf_counter()
            await c.get("/console/approvals")  # templates compiled, the first page's requests redacted
            cold = time.perf_counter() - t
            page_t, page = await timed("/console/approvals")
            assert page.text.count('class="card request"') == min(pending, 100) and "sk-live-" not in page.text
            assert f"{pending} pending" in page.text
            frag_t, frag = await timed("/console/approvals/fragment")
            idle_t, idle = await timed("/console/approvals/fragment", v=frag.headers["x-console-version"])
            assert idle.status_code == 204
        print(f"first load      (templates compiled, 100 requests redacted): {cold * 1000:7.1f} ms")
        target = "met" if statistics.median(page_t) < 0.2 else "MISSED"
        print(f"approvals page  ({pending} pending, {len(page.content) / 1e6:.1f} MB): {_ms(page_t)}   "
              f"target < 200 ms: {target}")
        print(f"list fragment   ({len(frag.content) / 1e6:.1f} MB):               {_ms(frag_t)}")
        print(f"unchanged poll  (204):                      {_ms(idle_t)}")
        await reach.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pending", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(main(args.pending, args.rounds))
