"""Red-team round 2 for reach-notify: webhooks behind the same SSRF guard as reach-http.

Families, each against real receivers on 127.0.0.1:

* a webhook URL at a loopback, private, special-purpose or metadata address (any
  spelling) is refused and nothing arrives, unless the webhook says ``allow_private``;
  metadata is refused even then;
* the address is resolved once, checked, and the connection pinned to it (a second,
  different DNS answer is never asked for);
* environment proxies (``HTTP_PROXY`` ...) and ``~/.netrc`` are ignored; an explicit
  ``proxy`` setting is honoured;
* a malformed webhook URL is a ConfigError naming the webhook (and not quoting it);
* mentions a model writes (``<!channel>``, ``<@U123>``, ``@everyone``) are neutralised
  unless the webhook sets ``allow_mentions``;
* e-mail subjects and recipients with line breaks in any spelling are refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from notify_servers import WebhookReceiver

from reach_core import ConfigError
from reach_core.testing import LoopbackHandler, serve_loopback


@pytest.fixture
def proxy() -> Iterator[list[str]]:
    """A loopback 'proxy' that records every request line it is sent (and answers 200)."""
    seen: list[str] = []

    class Handler(LoopbackHandler):
        def _any(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.read_body()
            self.reply(200)

        do_GET = do_POST = do_CONNECT = _any

    with serve_loopback(Handler) as url:
        seen.append(url)
        yield seen


def _one(url: Any, **extra: Any) -> dict[str, Any]:
    return {"webhooks": {"ops": {"url": url, "timeout": 3, **extra}}}


# --------------------------------------------------------------------------- the guard

LOOPBACK_FORMS = ["127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "127.0.0.1.", "LOCALHOST"]


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
async def test_a_loopback_webhook_is_refused_without_allow_private(
    host: str, receiver: WebhookReceiver, make_notify
) -> None:
    reach = make_notify(_one(f"http://{host}:{receiver.port}/ok", allow_private=False))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hello"})
    assert not result.ok
    assert result.error.code == "execution_failed" and "internal error" not in result.error.message
    assert receiver.received == []
    assert str(receiver.port) not in result.error.message  # the URL (often a secret) is not quoted


NEVER_REACHED = [
    "169.254.169.254", "[fd00:ec2::254]", "100.100.100.200", "10.0.0.1", "192.168.0.1", "172.16.0.1",
    "100.64.0.1", "[fec0::1]", "[3fff::1]", "192.88.99.1", "[fc00::1]", "[64:ff9b::a9fe:a9fe]",
    "[2002:a9fe:a9fe::1]", "0.0.0.0", "[::]", "198.18.0.1", "240.0.0.1", "224.0.0.1", "[ff02::1]",
    "metadata.google.internal", "metadata.azure.internal", "instance-data",
]


ALWAYS_REFUSED = [h for h in NEVER_REACHED if "169.254" in h or "metadata" in h or "ec2" in h or "a9fe" in h
                  or h in ("100.100.100.200", "instance-data")]


@pytest.mark.parametrize(("host", "allow_private"), [(h, False) for h in NEVER_REACHED]
                         + [(h, True) for h in ALWAYS_REFUSED])
async def test_private_and_metadata_webhooks_are_refused_before_connecting(
    host: str, allow_private: bool, make_notify
) -> None:
    reach = make_notify(_one(f"http://{host}/hook", allow_private=allow_private))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hello"})
    assert not result.ok
    assert result.error.code == "execution_failed" and "refused" in result.error.message, result.error.message


@pytest.mark.parametrize("host", [h for h in LOOPBACK_FORMS if h != "[::1]"])  # the receiver is IPv4
async def test_a_webhook_url_that_names_a_loopback_address_works_by_default(
    host: str, receiver: WebhookReceiver, make_notify
) -> None:
    """The operator wrote the address: ``allow_private`` unset lets it through."""
    reach = make_notify(_one(f"http://{host}:{receiver.port}/ok"))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hello"})
    assert result.ok, result.error
    assert [r.body for r in receiver.received] == [{"text": "hello"}]


PRIVATE_ANSWERS = ["127.0.0.1", "10.0.0.7", "192.168.1.20", "172.20.0.3", "100.64.1.1", "::1", "fd12::7",
                   "::ffff:127.0.0.1", "169.254.169.254"]


@pytest.mark.parametrize("answer", PRIVATE_ANSWERS)
async def test_a_name_that_resolves_to_a_private_address_is_refused_by_default(
    answer: str, receiver: WebhookReceiver, make_notify
) -> None:
    """A name's DNS answer is not the operator's choice (rebinding): unset means refused."""
    from reach_http import StaticResolver

    reach = make_notify(_one(f"http://hooks.example.com:{receiver.port}/ok"))
    reach.get("send_webhook").guard.resolver = StaticResolver({"hooks.example.com": [answer]})
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hello"})
    assert not result.ok and "refused" in result.error.message, result.error
    assert receiver.received == []


async def test_allow_private_opens_a_loopback_webhook(receiver: WebhookReceiver, make_notify) -> None:
    reach = make_notify(_one(receiver.url("/ok"), allow_private=True))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hello"})
    assert result.ok, result.error
    assert [r.body for r in receiver.received] == [{"text": "hello"}]


async def test_the_address_is_resolved_once_and_the_connection_pinned(
    receiver: WebhookReceiver, make_notify
) -> None:
    """A resolver that would answer the metadata address the second time: never asked twice."""
    from reach_http import StaticResolver

    class Flipping(StaticResolver):
        async def resolve(self, host: str, port: int) -> list[Any]:
            answer = await super().resolve(host, port)
            self.table[host] = ["169.254.169.254"]
            return answer

    resolver = Flipping({"hooks.test": ["127.0.0.1"]})
    reach = make_notify(_one(f"http://hooks.test:{receiver.port}/ok", allow_private=True))
    reach.get("send_webhook").guard.resolver = resolver
    for _ in range(1):
        result = await reach.invoke("send_webhook", {"channel": "ops", "text": "pinned"})
        assert result.ok, result.error
    assert resolver.calls == ["hooks.test"]
    [got] = receiver.received
    assert got.headers["host"] == f"hooks.test:{receiver.port}"  # the name travels, the IP was pinned
    second = await reach.invoke("send_webhook", {"channel": "ops", "text": "again"})
    assert not second.ok and "169.254.169.254" in second.error.message
    assert len(receiver.received) == 1


# --------------------------------------------------------------------------- proxies and netrc

PROXY_VARS = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]


@pytest.mark.parametrize("var", PROXY_VARS)
async def test_environment_proxies_are_ignored(
    var: str, receiver: WebhookReceiver, proxy: list[str], make_notify, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in PROXY_VARS + ["NO_PROXY", "no_proxy"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(var, proxy[0])
    reach = make_notify(_one(receiver.url("/ok"), allow_private=True))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "direct"})
    assert result.ok, result.error
    assert len(receiver.received) == 1 and proxy[1:] == []


async def test_netrc_credentials_are_not_sent(
    receiver: WebhookReceiver, make_notify, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login stolen password hunter2\ndefault login any password other\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".netrc").write_text(netrc.read_text())
    (tmp_path / ".netrc").chmod(0o600)
    reach = make_notify(_one(receiver.url("/ok"), allow_private=True))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "no netrc"})
    assert result.ok, result.error
    assert "authorization" not in receiver.received[0].headers


async def test_an_explicit_proxy_setting_is_used(receiver: WebhookReceiver, proxy: list[str], make_notify) -> None:
    reach = make_notify(_one(receiver.url("/ok"), allow_private=True, proxy=proxy[0]))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "via proxy"})
    assert result.ok, result.error
    assert proxy[1:] == [f"POST {receiver.url('/ok')}"] and receiver.received == []


# --------------------------------------------------------------------------- malformed URLs

MALFORMED = [
    "http://user@hooks.example.com/x", "http://user:pw@hooks.example.com/x", "http://hooks.example.com\\@evil/x",
    "http://hooks.example.com:+443/x", "http://hooks.example.com:0/x", "http://hooks.example.com:65536/x",
    "http://hooks.example.com:-1/x", "http://hooks.example.com: 80/x", "https://", "http:///x",
    "http://exa mple.com/x", "http://2130706433/x", "http://0x7f.1/x", "http://[fe80::1%25eth0]/x",
    "ftp://hooks.example.com/x", "hooks.example.com/x", "http:\\\\hooks.example.com\\x",
    "http://hooks.example.com\t/x", "http://hooks.example.com\uff20evil/x", "http://%68ooks.example.com/x",
]


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_webhook_url_is_a_config_error_naming_the_webhook(url: str, make_notify) -> None:
    with pytest.raises(ConfigError) as caught:
        make_notify(_one(url))
    assert "webhooks.ops" in str(caught.value)
    assert "hooks.example.com/x" not in str(caught.value)  # the URL (its token) is not repeated


@pytest.mark.parametrize("url", ["https://hooks.slack.com/services/T0/B0/xyz", "https://discord.com/api/webhooks/1/a",
                                 "https://x.webhook.office.com/webhookb2/a@b/IncomingWebhook/c/d?x=1",
                                 "https://hooks.example.com:8443/x"])
def test_honest_webhook_urls_load(url: str, make_notify) -> None:
    make_notify(_one(url))


# --------------------------------------------------------------------------- mentions

MENTIONS = [
    "<!channel>", "<!here>", "<!everyone>", "<!CHANNEL>", "<!channel|channel>", "<!here|here>",
    "<!subteam^S0123|@oncall>", "<@U0123ABC>", "<@W0123ABC>", "<@U0123|bob>", "<#C0123|general> <!here>",
    "@everyone", "@here", "@channel", "@Everyone", "@HERE", "hey @everyone!", "x@everyone", "(@here)",
    "<<!here>>", "<!date^123|x> <!channel>", "<@&1234567890>", "<@!1234567890>", "<at>Jane</at>",
]


def _defused(text: str) -> bool:
    low = text.lower()
    return "<!" not in text and "<@" not in text and "<at>" not in low and not any(
        f"@{word}" in low for word in ("everyone", "here", "channel")
    )


@pytest.mark.parametrize("text", MENTIONS)
async def test_mentions_in_model_text_are_neutralised(text: str, receiver: WebhookReceiver, make_notify) -> None:
    reach = make_notify(_one(receiver.url("/ok"), allow_private=True))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": f"Deploy done {text} thanks"})
    assert result.ok, result.error
    sent = receiver.received[0].body["text"]
    assert _defused(sent), sent
    assert sent.startswith("Deploy done ") and sent.endswith(" thanks")


@pytest.mark.parametrize("text", MENTIONS[:6] + ["@everyone"])
async def test_allow_mentions_passes_them_through(text: str, receiver: WebhookReceiver, make_notify) -> None:
    reach = make_notify(_one(receiver.url("/ok"), allow_private=True, allow_mentions=True))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": text})
    assert result.ok and receiver.received[0].body["text"] == text


@pytest.mark.parametrize("text", ["Deploy 1.2 finished", "mail ops@example.com", "build #42 ok", "ünïcödé ✅",
                                  "a -> b", "see https://example.com/x?y=1"])
async def test_ordinary_text_arrives_unchanged(text: str, receiver: WebhookReceiver, make_notify) -> None:
    reach = make_notify(_one(receiver.url("/ok"), allow_private=True))
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": text})
    assert result.ok and receiver.received[0].body["text"] == text


# --------------------------------------------------------------------------- e-mail header injection

BREAKS = ["\r\nBcc: x@evil.example", "\nBcc: x@evil.example", "\rBcc: x", "\u2028Bcc: x", "\u2029Bcc: x",
          "\x85Bcc: x", "\x0bBcc: x", "\x0cBcc: x", "\x00x", "=?utf-8?q?a=0D=0ABcc:_x?=",
          "=?utf-8?b?YQ0KQmNjOiB4?=", "\x1bx"]


@pytest.mark.parametrize("field", ["subject", "to"])
@pytest.mark.parametrize("tail", BREAKS)
async def test_line_breaks_in_mail_headers_are_refused(field: str, tail: str, smtp, make_notify) -> None:
    reach = make_notify({"smtp": {"host": "127.0.0.1", "port": smtp.port, "from": "reach@example.com"},
                         "allow_recipients": ["example.com"]})
    args = {"to": "ops@example.com", "subject": "Deploy", "body": "done"}
    args[field] = args[field] + tail
    result = await reach.invoke("send_email", args)
    assert not result.ok and result.error.code in ("invalid_arguments", "denied"), result
    assert smtp.inbox.delivered == []

