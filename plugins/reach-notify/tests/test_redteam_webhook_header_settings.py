"""Red-team round 6: a webhook header value that the HTTP stack refuses only while sending.

``headers = { Authorization = { env = "HOOK_TOKEN" } }`` with a token read from a secret
file (a Kubernetes secret, ``echo tok > file``) usually ends with a line break. h11
refuses it when the request is written, so the post failed every time, was reported as
"the connection broke after the message was sent; it may or may not have arrived"
(nothing had been sent), and httpcore's DEBUG log quoted the refused value: the token.
A non-ASCII value was an internal error. Now header names and values are checked when
reach starts: a ``ConfigError`` that names the webhook and the header, never the value.

Real HTTP receiver on 127.0.0.1 for the values that must still work.
"""

from __future__ import annotations

from typing import Any

import pytest
from notify_servers import WebhookReceiver

from reach_core import ConfigError

SECRET = "tok3nSECRET99x"
BAD_VALUES = [f"Bearer {SECRET}\n", f"Bearer {SECRET}\r\n", f"Bearer {SECRET}\r", f"Bearer {SECRET}\r\nX-Evil: 1",
              f"Bearer {SECRET}\x00", f"Bearer {SECRET}\x7f", f"Bearer {SECRET}\x0b", f"Bearer t\u00f6{SECRET}",
              f"Bearer {SECRET}\u2028", f"Bearer {SECRET}\u00a0", f"Bearer {SECRET}\uff21", f" Bearer {SECRET}",
              f"Bearer {SECRET} ", f"Bearer {SECRET}\t", f"\n{SECRET}", f"Bearer {SECRET}\x85"]
BAD_NAMES = ["X Token", "X-Token:", "X-Token\n", "", "X-T\u00f6ken", "X-Token\x00", "(X-Token)", " X-Token"]


VALUE_CASES = [(v, env) for env in (False, True) for v in BAD_VALUES if not (env and "\x00" in v)]  # no NUL in env


@pytest.mark.parametrize(("value", "from_env"), VALUE_CASES,
                         ids=[f"{'env' if e else 'literal'}-{i}" for i, (_, e) in enumerate(VALUE_CASES)])
def test_an_unusable_header_value_is_a_config_error_without_the_value(
        value: str, from_env: bool, receiver: WebhookReceiver, make_notify: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if from_env:
        monkeypatch.setenv("REACH_TEST_HOOK_TOKEN", value)
    hook = {"url": receiver.url("/ok"), "headers": {"Authorization": {"env": "REACH_TEST_HOOK_TOKEN"}
                                                    if from_env else value}}
    with pytest.raises(ConfigError) as caught:
        make_notify({"webhooks": {"ops": hook}})
    message = str(caught.value)
    assert "webhooks.ops" in message and "Authorization" in message, message
    assert SECRET not in message, message
    assert receiver.received == []


@pytest.mark.parametrize("name", BAD_NAMES)
def test_an_unusable_header_name_is_a_config_error(name: str, receiver: WebhookReceiver, make_notify: Any) -> None:
    with pytest.raises(ConfigError, match="webhooks.ops"):
        make_notify({"webhooks": {"ops": {"url": receiver.url("/ok"), "headers": {name: "v"}}}})
    with pytest.raises(ConfigError, match="webhooks.ops"):
        make_notify({"webhooks": {"ops": {"url": receiver.url("/ok"), "idempotency_header": name or "X Y"}}})


@pytest.mark.parametrize("value", [f"Bearer {SECRET}", "a\tb", "Basic dXNlcjpwYXNz", "x=1; y=\"2\"", "~!@#$%^&*()"])
async def test_usable_values_are_sent_as_written(value: str, receiver: WebhookReceiver, make_notify: Any) -> None:
    reach = make_notify({"webhooks": {"ops": {"url": receiver.url("/ok"), "timeout": 3,
                                              "headers": {"X-Hook-Token": value}}}})
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hi"})
    assert result.ok, result.error
    assert receiver.received[0].headers["x-hook-token"] == value
