"""Red team: the ids a client chooses (``id``, ``run_id``, ``idempotency_key``) are bounded.

``POST /v1/invoke`` took any string: a call id of 900,000 characters, a run id with a line
break or an ANSI escape, a right-to-left override that makes two run ids look alike on the
console, an empty ``run_id`` (an unset variable: no run, so no derived idempotency key). These
end up in logs, the audit trail, the ledger and the console's links. An idempotency key of
any characters got through too once it was long: reach-serve scopes it per agent and writes
a scoped key past 512 characters as its SHA-256, which reach's own key check then accepted.
Now each is 1-256 printable characters (a key 1-512), else 400 ``invalid_request`` naming the
field, and nothing runs (``reach_core.tokens.client_id_problem``). Real ``reach serve http``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Served, serve

BODY = {"name": "add_credit", "arguments": {"amount": 5}}


@pytest.fixture(scope="module")
def module_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tmp_path_factory.mktemp("ids"))


BAD = [
    "", "x" * 513, "x" * 10_000, "x" * 900_000, "k\n", "k\r\nINFO forged line", "a\x00b", "\x1b[31mred", "a\tb",
    "a\x7fb", "a\x85b", "run\u2028x", "run\u2029x", "a\u200bb", "\u202erun-1", "run\u2066x", "\ufeffrun",
    "soft\u00adhyphen", "tag\U000e0041", "nb\u00a0sp", "ideo\u3000sp", "\u2003em", "\ue000private", "\U0010fffd",
    "x" * 300 + "\n",
]
NOT_STRINGS = [0, 17, 1.5, True, [], ["k"], {"k": "v"}]
FIELDS = {"id": 256, "run_id": 256, "idempotency_key": 512}


@pytest.mark.parametrize("field", list(FIELDS))
@pytest.mark.parametrize("value", BAD + NOT_STRINGS, ids=lambda v: repr(v)[:24])
def test_an_odd_client_id_is_400_and_runs_nothing(module_served: Served, field: str, value: Any) -> None:
    before = module_served.counter.runs
    with module_served.client() as c:
        res = c.post("/v1/invoke", json={**BODY, field: value})
    assert res.status_code == 400, (field, res.status_code, res.text[:200])
    error = res.json()["error"]
    assert error["code"] == "invalid_request" and f"`{field}`" in error["message"]
    assert len(error["message"]) < 200  # the value is not echoed back
    assert module_served.counter.runs == before


@pytest.mark.parametrize("field", ["id", "run_id"])
@pytest.mark.parametrize("value", ["x" * 257, "x" * 400, "x" * 512])
def test_a_call_or_run_id_longer_than_256_is_400(module_served: Served, field: str, value: str) -> None:
    with module_served.client() as c:
        assert c.post("/v1/invoke", json={**BODY, field: value}).status_code == 400


GOOD = ["call_abc123", "thread-1", "run/1?x#y/..", "заказ 17", "北京-1", "a b c", "x" * 256, "🙂", "=1+2",
        "e\u0301", "ü"]


@pytest.mark.parametrize("value", GOOD, ids=lambda v: repr(v)[:24])
def test_honest_ids_still_work_and_a_key_still_makes_one_receipt(served: Served, value: str) -> None:
    with served.client() as c:
        first = c.post("/v1/invoke", json={**BODY, "id": value, "run_id": value, "idempotency_key": value * 2})
        again = c.post("/v1/invoke", json={**BODY, "id": value, "run_id": value, "idempotency_key": value * 2})
        derived = [c.post("/v1/invoke", json={**BODY, "id": value, "run_id": "r-" + value[:254]}) for _ in range(2)]
    assert first.status_code == 200 and first.json()["ok"], first.text[:300]
    assert again.json()["content"] == first.json()["content"]
    assert derived[0].json()["content"] == derived[1].json()["content"]  # run id + call id: one receipt too
    assert served.counter.runs == 2


def test_absent_and_null_ids_still_work(served: Served) -> None:
    with served.client() as c:
        for extra in ({}, {"id": None, "run_id": None, "idempotency_key": None}):
            assert c.post("/v1/invoke", json={**BODY, **extra}).json()["ok"]
