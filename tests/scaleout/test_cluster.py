"""Three ``reach serve http`` processes on one PostgreSQL and one Redis behave as one.

Tests run in file order on one module-scoped cluster; the SIGKILL test is last.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import os
import signal
import time
import uuid
from typing import Any

import httpx
import pytest
from reach_serve.app import scoped_key

from .conftest import Cluster


async def _post(client: httpx.AsyncClient, url: str, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    resp = await client.post(f"{url}/v1/invoke", json=body, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]


async def _spread(
    cluster: Cluster, role: str, bodies: list[dict[str, Any]], concurrency: int = 30
) -> list[dict[str, Any]]:
    """Send ``bodies`` round-robin over every instance, ``concurrency`` in flight."""
    sem = asyncio.Semaphore(concurrency)
    urls = itertools.cycle(cluster.urls)
    headers = cluster.headers(role)
    async with httpx.AsyncClient(timeout=30) as client:
        async def one(url: str, body: dict[str, Any]) -> dict[str, Any]:
            async with sem:
                return await _post(client, url, headers, body)

        return await asyncio.gather(*(one(next(urls), b) for b in bodies))


async def _flush_audit(client: httpx.AsyncClient, cluster: Cluster) -> None:
    """Each instance writes its audit rows in the background; the tail endpoint flushes its own."""
    for url in cluster.urls:
        resp = await client.get(f"{url}/v1/audit/tail?limit=1", headers=cluster.headers("ops"))
        assert resp.status_code == 200, resp.text


async def test_budget_spent_equals_successful_calls_under_load(cluster: Cluster) -> None:
    ids = [f"load-{uuid.uuid4().hex[:12]}" for _ in range(300)]
    results = await _spread(cluster, "worker",
                            [{"id": i, "name": "ping", "arguments": {"n": n}} for n, i in enumerate(ids)])

    ok = [r for r in results if r["ok"]]
    refused = [r for r in results if not r["ok"]]
    assert len(ok) == 200  # [connectors.ping] daily_budget = 200
    assert {r["error"]["code"] for r in refused} == {"budget_exceeded"}
    assert len({r["content"]["pid"] for r in ok}) == 3  # every instance served
    day = dt.datetime.now(dt.UTC).date().isoformat()
    assert cluster.query("SELECT used FROM reach_budget WHERE scope = 'tool' AND name = 'ping' AND day = %s",
                         (day,)) == [(200,)]

    # every call has exactly one audit row, and the chain over all writers verifies
    async with httpx.AsyncClient(timeout=60) as client:
        await _flush_audit(client, cluster)
        rows = dict(cluster.query(
            "SELECT call_id, count(*) FROM audit_log WHERE kind = 'call' AND call_id LIKE 'load-%%' GROUP BY call_id"))
        assert set(rows) == set(ids)
        assert set(rows.values()) == {1}
        resp = await client.get(f"{cluster.urls[1]}/v1/audit/verify", headers=cluster.headers("ops"))
    report = resp.json()
    assert resp.status_code == 200 and report["ok"], report
    assert report["checked"] >= 300


async def test_rate_limit_holds_across_instances(cluster: Cluster) -> None:
    hour = int(time.time() // 3600)
    results = await _spread(cluster, "limited", [{"name": "echo", "arguments": {"n": n}} for n in range(60)])
    crossed_hour = int(time.time() // 3600) != hour
    ok = sum(r["ok"] for r in results)
    assert ok == 20 or (crossed_hour and ok <= 40)  # [agents.limited_*] rate_limit = "20/hour"
    limited = [r for r in results if not r["ok"]]
    assert {r["error"]["code"] for r in limited} == {"rate_limited"}
    assert all(r["error"]["retry_after"] > 0 for r in limited)


async def test_same_idempotency_key_on_two_instances_runs_once(cluster: Cluster) -> None:
    given = f"order-{uuid.uuid4().hex[:8]}"
    body = {"name": "charge", "arguments": {"amount": 42, "delay": 0.3}, "idempotency_key": given}
    key = scoped_key(cluster.agents["worker"], given)  # what the connector and the ledger see
    async with httpx.AsyncClient(timeout=30) as client:
        first = await asyncio.gather(*(
            _post(client, url, cluster.headers("worker"), {**body, "id": f"c{i}"})
            for i, url in enumerate(cluster.urls[:2])
        ))
        assert len(cluster.effects("charge", key)) == 1
        winners = [r for r in first if r["ok"] and not r["meta"].get("receipt")]
        assert len(winners) == 1
        loser = next(r for r in first if r is not winners[0])
        # the other instance saw the claim: it says the outcome is open (or, if it came late,
        # hands back the receipt); it never runs the action again
        assert loser["error"]["code"] == "outcome_unknown" if not loser["ok"] else loser["meta"]["receipt"]
        # once done, any instance answers a repeat with the recorded result
        again = await _post(client, cluster.urls[2], cluster.headers("worker"), {**body, "id": "c9"})
    assert again["ok"] and again["meta"].get("receipt") is True
    assert again["content"] == winners[0]["content"]
    assert len(cluster.effects("charge", key)) == 1


async def test_one_approval_sent_to_two_instances_runs_once(cluster: Cluster) -> None:
    target = f"ds-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(timeout=30) as client:
        asked = await _post(client, cluster.urls[0], cluster.headers("worker"),
                            {"name": "wipe", "arguments": {"target": target}})
        assert not asked["ok"] and asked["error"]["code"] == "needs_confirmation"
        cid = asked["meta"]["confirmation_id"]
        listed = (await client.get(f"{cluster.urls[2]}/v1/confirmations", headers=cluster.headers("ops"))).json()
        assert cid in {c["id"] for c in listed["confirmations"]}
        # the requesting agent cannot approve; an unknown token cannot either
        own = await client.post(f"{cluster.urls[1]}/v1/confirmations/{cid}/approve", headers=cluster.headers("worker"))
        assert own.status_code == 403
        decisions = await asyncio.gather(*(
            client.post(f"{url}/v1/confirmations/{cid}/approve", json={"reason": "ticket 7"},
                        headers=cluster.headers("ops"))
            for url in cluster.urls[:2]
        ))
    codes = sorted(d.status_code for d in decisions)
    assert codes == [200, 409], [d.text for d in decisions]
    won = next(d.json() for d in decisions if d.status_code == 200)
    assert won["result"]["ok"] and won["result"]["content"] == {"wiped": target}
    assert len(cluster.effects("wipe", target)) == 1
    assert cluster.query("SELECT status, decided_by FROM confirmations WHERE id = %s", (cid,)) == [
        ("executed", cluster.agents["ops"])]


async def test_instance_killed_mid_call_leaves_unknown_that_no_one_reruns(cluster: Cluster) -> None:
    given = f"xfer-{uuid.uuid4().hex[:8]}"
    body = {"name": "transfer", "arguments": {"amount": 7}, "idempotency_key": given}
    key = scoped_key(cluster.agents["worker"], given)  # what the connector and the ledger see
    victim = cluster.procs[2]
    async with httpx.AsyncClient(timeout=30) as client:
        inflight = asyncio.create_task(_post(client, cluster.urls[2], cluster.headers("worker"), body))
        deadline = time.monotonic() + 20
        while not cluster.effects("transfer", key):  # the action has started on instance 2
            assert time.monotonic() < deadline and not inflight.done(), "the transfer never started"
            await asyncio.sleep(0.02)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(10)
        with pytest.raises(httpx.HTTPError):
            await inflight

        # another instance refuses to run it again while its outcome is open ...
        repeat = await _post(client, cluster.urls[0], cluster.headers("worker"), body)
        assert not repeat["ok"] and repeat["error"]["code"] == "outcome_unknown"
        # ... the survivors' sweep marks the dead instance's row unknown ...
        deadline = time.monotonic() + 20
        while cluster.query("SELECT state FROM reach_ledger WHERE idem_key = %s", (key,)) != [("unknown",)]:
            assert time.monotonic() < deadline, cluster.query("SELECT * FROM reach_ledger WHERE idem_key = %s", (key,))
            await asyncio.sleep(0.2)
        # ... and still nobody re-runs it
        for url in cluster.urls[:2]:
            again = await _post(client, url, cluster.headers("worker"), body)
            assert not again["ok"] and again["error"]["code"] == "outcome_unknown"
            assert "will not be re-run" in again["error"]["message"]
    assert len(cluster.effects("transfer", key)) == 1
