"""Red-team round 6: the webhook's URL (its token) in the host's logs.

reach never logs a webhook URL, but httpx's client does: every request is logged at
INFO on the ``httpx`` logger as ``HTTP Request: POST https://hooks.example/services/T0/B0/<token>``.
A host that runs with ``logging.basicConfig(level="INFO")`` (common) wrote every
webhook's token into its logs, on success and on failure, whether the URL came from the
environment or not. Now the request goes straight to the transport, which logs no URL;
no record on any logger, at any level, holds the token or the configured header secret.

Real HTTP receiver on 127.0.0.1; every log record of the process is captured.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from notify_servers import WebhookReceiver

TOKEN = "Xk29QpLm7RtV4wZa8NcYe3Hb"
HEADER_TOKEN = "hdr-5f1c9a7e2b8d4c6f0a3e"
OUTCOMES = ["/ok", "/reject", "/down", "/limit", "/moved"]


@pytest.mark.parametrize("outcome", OUTCOMES)
@pytest.mark.parametrize("from_env", [False, True], ids=["literal", "env"])
@pytest.mark.parametrize("query", ["?token={t}", "?v=1&sig={t}", "?t={t}&x=1"])
async def test_no_log_record_holds_the_webhook_token(outcome: str, from_env: bool, query: str,
                                                     receiver: WebhookReceiver, make_notify: Any,
                                                     caplog: pytest.LogCaptureFixture,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # the receiver answers by path, so the token rides in the query (as Google Chat's and Teams' do)
    url = receiver.url(outcome) + query.format(t=TOKEN)
    if from_env:
        monkeypatch.setenv("REACH_TEST_HOOK", url)
    hook = {"url": {"env": "REACH_TEST_HOOK"} if from_env else url, "timeout": 3,
            "headers": {"Authorization": f"Bearer {HEADER_TOKEN}"}}
    reach = make_notify({"webhooks": {"ops": hook}})
    with caplog.at_level(logging.DEBUG):
        result = await reach.invoke("send_webhook", {"channel": "ops", "text": "deploy done"})
    assert receiver.received, result  # the post went out
    assert result.ok is (outcome == "/ok"), result
    for record in caplog.records:
        if record.name.startswith("reach.testing"):
            continue  # the test receiver's own access log
        text = record.getMessage()
        assert TOKEN not in text and HEADER_TOKEN not in text, (record.name, text)


async def test_the_post_still_carries_what_the_client_sent(receiver: WebhookReceiver, make_notify: Any) -> None:
    reach = make_notify({"webhooks": {"ops": {"url": receiver.url("/ok"), "timeout": 3,
                                              "headers": {"X-Extra": "1"}}}})
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "deploy done"}, run_id="r1")
    assert result.ok, result.error
    got = receiver.received[0]
    assert got.body == {"text": "deploy done"}
    assert got.headers["content-type"] == "application/json"
    assert got.headers["x-extra"] == "1" and got.headers["idempotency-key"]
    assert got.headers["user-agent"].startswith("python-httpx/")
    assert got.headers["host"] == f"127.0.0.1:{receiver.port}"
