"""Red-team round 6: a webhook's 5xx, then the same call again, posted the message twice.

A 5xx says the receiver failed *while handling* the post; whether the message reached
the channel is not known (a gateway's 502/504 comes after the chat service may have
posted it, Slack answers 500 for posts it delivered). reach told the model "delivery
is not confirmed, check with the user", but coded it ``upstream_unavailable``, which
the core's ledger does not keep: the same tool call repeated in the run (a framework
retrying, a model repeating itself) ran again and posted again. Now a 5xx is
``outcome_unknown``, which the ledger keeps: a repeat gets the same answer and
nothing is sent.

A real HTTP receiver on 127.0.0.1 answers each status; the posts that arrive are counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from reach_core.testing import LoopbackHandler, serve_loopback

STATUSES = [500, 502, 503, 504, 507, 520, 599]
ANSWERS = [(status, body, headers) for status in STATUSES for body, headers in [
    (b"", {}), (b"internal error", {"Retry-After": "1"}), (b'{"ok":false,"error":"fatal_error"}',
                                                          {"Content-Type": "application/json"})]]


@pytest.fixture
def failing() -> Iterator[tuple[str, list[str], dict[str, Any]]]:
    posts: list[str] = []
    state: dict[str, Any] = {}

    class Handler(LoopbackHandler):
        def do_POST(self) -> None:  # noqa: N802
            posts.append(self.read_body().decode())
            self.reply(state["status"], state["body"], state["headers"])

    with serve_loopback(Handler) as base:
        yield base, posts, state


@pytest.mark.parametrize(("status", "body", "headers"), ANSWERS,
                         ids=[f"{s}-{i % 3}" for i, (s, _, _) in enumerate(ANSWERS)])
async def test_a_repeated_call_after_a_5xx_is_not_posted_again(status: int, body: bytes, headers: dict[str, str],
                                                               failing: Any, make_notify: Any) -> None:
    base, posts, state = failing
    state.update(status=status, body=body, headers=headers)
    reach = make_notify({"webhooks": {"ops": {"url": base + "/hook", "timeout": 3}}})
    call = {"id": "call_1", "name": "send_webhook", "arguments": '{"channel":"ops","text":"deploy done"}'}
    first = await reach.invoke(call, run_id="run-5xx")
    second = await reach.invoke(call, run_id="run-5xx")
    assert first.error is not None and first.error.code == "outcome_unknown", first.error
    assert f"HTTP {status}" in first.error.message and "not confirmed" in first.error.message
    assert second.error is not None and second.error.code == "outcome_unknown", second.error
    assert len(posts) == 1, posts


async def test_a_429_is_still_rate_limited_and_may_be_sent_again(failing: Any, make_notify: Any) -> None:
    """429 says the post was refused before handling: the next call may send it."""
    base, posts, state = failing
    state.update(status=429, body=b"", headers={"Retry-After": "2"})
    reach = make_notify({"webhooks": {"ops": {"url": base + "/hook", "timeout": 3}}})
    call = {"id": "call_1", "name": "send_webhook", "arguments": '{"channel":"ops","text":"deploy done"}'}
    first = await reach.invoke(call, run_id="run-429")
    assert first.error.code == "rate_limited" and first.error.retry_after == 2
    state.update(status=200)
    second = await reach.invoke(call, run_id="run-429")
    assert second.ok and len(posts) == 2
