"""An empty idempotency key is refused, not dropped.

``"idempotency_key": ""`` (a client's unset variable) was treated as no key at all, so the
client's retry of a write after a timeout ran it again; ``reach serve mcp`` refuses such a
key for that reason ("a dropped key would let a retry run twice"). Now it is a 400 that runs
nothing. Real ``reach serve http`` on 127.0.0.1; the write tool counts its executions.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Served

BODY = {"name": "add_credit", "arguments": {"amount": 5}}


@pytest.mark.parametrize("extra", [{}, {"run_id": "run-1"}, {"id": "call-1"}, {"run_id": "run-2", "id": "call-2"}])
def test_an_empty_idempotency_key_is_refused_not_dropped(served: Served, extra: dict[str, Any]) -> None:
    with served.client() as c:
        for _ in range(2):  # the client's retry after a timeout
            res = c.post("/v1/invoke", json={**BODY, "idempotency_key": "", **extra})
            assert res.status_code == 400, res.text
            assert res.json()["error"]["code"] == "invalid_request"
            assert "idempotency_key" in res.json()["error"]["message"]
    assert served.counter.runs == 0


@pytest.mark.parametrize("extra", [{}, {"idempotency_key": None}, {"idempotency_key": "k-1"}])
def test_no_key_or_a_real_key_still_work(served: Served, extra: dict[str, Any]) -> None:
    with served.client() as c:
        first = c.post("/v1/invoke", json={**BODY, **extra}).json()
        again = c.post("/v1/invoke", json={**BODY, **extra}).json()
    assert first["ok"] and again["ok"]
    assert served.counter.runs == (1 if extra.get("idempotency_key") else 2)
