"""Red-team round 3 for reach-notify's webhooks (the SSRF guard is reach-http's).

Families, against real receivers on 127.0.0.1:

* a webhook host whose DNS never answers ends at the webhook's ``timeout`` as "nothing
  was sent" (it was an unknown outcome at the tool's deadline, inviting no resend of a
  message that never left);
* the ``Idempotency-Key`` reach writes is one line of ASCII whatever the key or the
  tool-call id holds (non-ASCII crashed the tool; CR/LF or NUL broke the request and
  was reported as "may have arrived");
* held (kept as regressions): a webhook's redirect, of any code, to loopback, another
  port or the metadata service is never followed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from notify_servers import WebhookReceiver
from reach_http import StaticResolver

from reach_core import ToolCall
from reach_core.testing import LoopbackHandler, serve_loopback


def _one(url: str, **extra: Any) -> dict[str, Any]:
    return {"webhooks": {"ops": {"url": url, "timeout": 1, **extra}}}


class _Hanging(StaticResolver):
    """A resolver that never answers (a DNS server that does not reply)."""

    async def resolve(self, host: str, port: int) -> list[Any]:
        self.calls.append(host)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


@pytest.mark.parametrize("allow_private", [None, True, False])
async def test_a_webhook_name_that_never_resolves_is_nothing_sent(allow_private: bool | None, make_notify) -> None:
    reach = make_notify(_one("https://hooks.example.com/services/T0/B0/secret", allow_private=allow_private))
    tool = reach.get("send_webhook")
    tool.guard.resolver = resolver = _Hanging()
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hello"})
    assert not result.ok
    assert result.error.code == "upstream_unavailable", result.error  # not outcome_unknown: it never left
    assert "nothing was sent" in result.error.message and "secret" not in result.error.message
    assert resolver.calls == ["hooks.example.com"]


KEYS = ["ключ-1", "k\u00e9y", "\u952e-42", "run \U0001f600", "50%-\u00e9"]
CALL_IDS = ["call_1\r\nX-Evil: 1", "call_1\n\nPOST /admin HTTP/1.1\nHost: 127.0.0.1", "call\x00x", "call\x7fx",
            "call_\u00e9", "call\u2028x", "call\tx"]


def _one_line_ascii(value: str) -> bool:
    return all(" " <= c <= "~" for c in value)


@pytest.mark.parametrize("key", KEYS)
async def test_a_non_ascii_idempotency_key_is_sent_as_one_ascii_line(key: str, receiver: WebhookReceiver,
                                                                     make_notify) -> None:
    reach = make_notify(_one(receiver.url("/ok")))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hello"}, idempotency_key=key)
    assert result.ok, result.error
    [got] = receiver.received
    assert _one_line_ascii(got.headers["idempotency-key"]) and got.headers["idempotency-key"] != key


@pytest.mark.parametrize("call_id", CALL_IDS)
async def test_a_tool_call_id_with_controls_never_splits_the_post(call_id: str, receiver: WebhookReceiver,
                                                                  make_notify) -> None:
    reach = make_notify(_one(receiver.url("/ok")))
    [result] = await reach.invoke_many([ToolCall("send_webhook", {"channel": "ops", "text": "hello"}, id=call_id)],
                                       run_id="run-1")
    assert result.ok, result.error
    [got] = receiver.received
    assert got.path == "/ok" and "x-evil" not in got.headers
    key = got.headers["idempotency-key"]
    assert _one_line_ascii(key) and key.startswith("7:default:5:run-1:call")  # the derived key (guard.ledger)


async def test_an_ascii_key_is_sent_as_written(receiver: WebhookReceiver, make_notify) -> None:
    reach = make_notify(_one(receiver.url("/ok")))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hi"}, idempotency_key="deploy-42:1")
    assert result.ok and receiver.received[0].headers["idempotency-key"] == "deploy-42:1"


# --------------------------------------------------------------------------- held: redirects are not followed


@pytest.fixture
def bouncer() -> Iterator[tuple[list[str], Any]]:
    """A webhook that answers every POST with ``status`` and ``Location: target`` (set per test)."""
    seen: list[str] = []
    answer: dict[str, Any] = {}

    class Handler(LoopbackHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.read_body()
            seen.append(self.path)
            self.reply(answer["status"], headers={"Location": answer["location"]})

    with serve_loopback(Handler) as url:
        yield seen, (answer, urlsplit(url).port)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("where", ["loopback-other-port", "metadata", "same-origin", "mapped-loopback"])
async def test_a_webhook_redirect_is_never_followed(status: int, where: str, bouncer, receiver: WebhookReceiver,
                                                    make_notify) -> None:
    seen, (answer, port) = bouncer
    answer["status"] = status
    answer["location"] = {
        "loopback-other-port": receiver.url("/ok"),
        "metadata": "http://169.254.169.254/latest/meta-data/",
        "same-origin": "/again",
        "mapped-loopback": f"http://[::ffff:127.0.0.1]:{receiver.port}/ok",
    }[where]
    reach = make_notify(_one(f"http://127.0.0.1:{port}/hook"))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hello"})
    assert not result.ok and f"HTTP {status}" in result.error.message
    assert seen == ["/hook"] and receiver.received == []
