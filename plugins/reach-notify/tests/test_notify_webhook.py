"""send_webhook against a real HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import pytest
from notify_servers import free_port

from reach_core import ConfigError


def hooks(receiver, **paths: str) -> dict:
    return {"webhooks": {name: {"url": receiver.url(path)} for name, path in paths.items()}}


async def test_message_arrives_as_slack_json_with_the_idempotency_key(
    make_notify, receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPS_HOOK_URL", receiver.url("/ok"))
    monkeypatch.setenv("OPS_TOKEN", "Bearer t0ken")
    reach = make_notify(
        {
            "webhooks": {
                "ops": {
                    "url": {"env": "OPS_HOOK_URL"},
                    "headers": {"Authorization": {"env": "OPS_TOKEN"}},
                    "description": "the on-call channel",
                }
            }
        }
    )
    result = await reach.invoke(
        "send_webhook", {"channel": "ops", "text": "部署完成 ✅"}, idempotency_key="deploy-42"
    )
    assert result.ok, result.error
    assert result.content == {"sent": True, "channel": "ops", "status": 200}
    [got] = receiver.received
    assert got.path == "/ok"
    assert got.body == {"text": "部署完成 ✅"}
    assert got.headers["content-type"] == "application/json"
    assert got.headers["idempotency-key"] == "deploy-42"
    assert got.headers["authorization"] == "Bearer t0ken"
    assert "the on-call channel" in reach.get("send_webhook").description


async def test_a_repeated_call_in_a_run_is_not_sent_twice(make_notify, receiver) -> None:
    reach = make_notify(hooks(receiver, ops="/ok"))
    call = {"id": "call_1", "name": "send_webhook", "arguments": '{"channel":"ops","text":"hi"}'}
    first = await reach.invoke(call, run_id="run-7")
    second = await reach.invoke(call, run_id="run-7")
    assert first.ok and second.ok
    assert len(receiver.received) == 1
    key = receiver.received[0].headers["idempotency-key"]
    assert "run-7" in key and "call_1" in key


@pytest.mark.parametrize(
    ("path", "code", "words"),
    [
        ("/reject", "execution_failed", "HTTP 400: invalid_payload"),
        ("/down", "outcome_unknown", "HTTP 503"),
        ("/limit", "rate_limited", "slow down"),
        ("/moved", "execution_failed", "HTTP 302"),
    ],
)
async def test_failures_are_reported_and_never_retried(
    make_notify, receiver, path: str, code: str, words: str
) -> None:
    reach = make_notify(hooks(receiver, ops=path))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hi"})
    assert not result.ok
    assert result.error.code == code
    assert words in result.error.message
    assert receiver.url("/ok") not in result.error.message  # the URL (a secret) never leaks
    assert [r.path for r in receiver.received] == [path]  # once, and no redirect followed
    if code == "rate_limited":
        assert result.error.retry_after == 7


async def test_unreachable_webhook_says_nothing_was_sent(make_notify) -> None:
    reach = make_notify({"webhooks": {"ops": {"url": f"http://127.0.0.1:{free_port()}/x"}}})
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hi"})
    assert result.error.code == "upstream_unavailable"
    assert "nothing was sent" in result.error.message


async def test_a_hanging_webhook_is_an_unknown_outcome(make_notify, receiver) -> None:
    reach = make_notify({"webhooks": {"ops": {"url": receiver.url("/slow"), "timeout": 0.5}}})
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hi"})
    assert result.error.code == "outcome_unknown"
    assert "may or may not have arrived" in result.error.message
    assert len(receiver.received) == 1


async def test_unknown_channel_and_empty_text_are_refused(make_notify, receiver) -> None:
    reach = make_notify(hooks(receiver, ops="/ok", dev="/ok"))
    unknown = await reach.invoke(
        "send_webhook", {"channel": "https://evil.example/x", "text": "hi"}
    )
    assert unknown.error.code == "invalid_arguments"
    empty = await reach.invoke("send_webhook", {"channel": "ops", "text": ""})
    assert empty.error.code == "invalid_arguments"
    assert receiver.received == []


async def test_text_field_is_configurable_for_discord(make_notify, receiver) -> None:
    reach = make_notify(
        {"webhooks": {"chat": {"url": receiver.url("/ok"), "text_field": "content"}}}
    )
    assert (await reach.invoke("send_webhook", {"channel": "chat", "text": "hi"})).ok
    assert receiver.received[0].body == {"content": "hi"}


def test_tools_appear_only_when_configured(make_notify, receiver) -> None:
    assert make_notify({}).tools() == []
    names = [t["function"]["name"] for t in make_notify(hooks(receiver, ops="/ok")).tools()]
    assert names == ["send_webhook"]


def test_missing_secret_and_bad_url_are_config_errors(make_notify) -> None:
    with pytest.raises(ConfigError, match="NO_SUCH_HOOK_VAR"):
        make_notify({"webhooks": {"ops": {"url": {"env": "NO_SUCH_HOOK_VAR"}}}})
    with pytest.raises(ConfigError, match="https://"):
        make_notify({"webhooks": {"ops": {"url": "file:///etc/passwd"}}})
