"""Red-team variants of issue 19's reach-notify classes that the first families did not spell.

Subjects whose encoded word is cut short (``...?`` or no ``?=`` at all: lenient readers
still decode them), that only the standard library's looser grammar decodes (a space in
the charset, ``?`` inside the payload), or that use wide and EBCDIC charsets; sizes at
and one past every limit; lone surrogates in every text field (``invalid_arguments``,
never an internal error). Against a real aiosmtpd server and webhook receiver.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import reach_notify.plugin as notify_plugin
from notify_servers import Inbox, SmtpServer, WebhookReceiver
from reach_notify.headers import one_line

from reach_core import InvalidArguments
from reach_core.testing import LoopbackHandler, make_reach, serve_loopback

PAYLOADS = ["hi\r\nBcc: spy@evil.org", "hi\nReply-To: spy@evil.org", "hi\r\nTo: spy@evil.org", "\r\nBcc: spy@evil.org"]


def _q(data: bytes) -> str:
    return "".join(chr(b) if chr(b).isalnum() and b < 128 else ("_" if b == 32 else f"={b:02X}") for b in data)


def _variants(text: str) -> dict[str, str]:
    data = text.encode()
    b64 = base64.b64encode(data).decode()
    return {
        "q-no-close": f"=?utf-8?q?{_q(data)}",
        "q-half-close": f"=?utf-8?q?{_q(data)}?",
        "b-no-close": f"=?utf-8?b?{b64}",
        "b-half-close": f"=?UTF-8?B?{b64}?",
        "q-no-close-after-text": f"Status: =?utf-8?Q?{_q(data)}",
        "charset-with-space": f"=?utf 8?q?{_q(data)}?=",
        "question-in-payload": f"=?utf-8?q?a?b{_q(data)}?=",
        "quoted-charset": f'=?"utf-8"?q?{_q(data)}?=',
        "unknown-charset": f"=?x-unknown?q?{_q(data)}?=",
        "unknown-8bit": f"=?unknown-8bit?b?{b64}?=",
        "utf-16le": f"=?utf-16le?b?{base64.b64encode(text.encode('utf-16-le')).decode()}?=",
        "utf-32": f"=?utf-32?b?{base64.b64encode(text.encode('utf-32')).decode()}?=",
        "cp037": f"=?cp037?b?{base64.b64encode(text.encode('cp037')).decode()}?=",
        "b-padding-heavy": f"=?utf-8?b?{b64}===?=",
        "b-inner-space": f"=?utf-8?b?{b64[:6]} {b64[6:]}?=",
        "q-space-not-underscore": f"=?utf-8?q?{_q(data).replace('_', ' ')}?=",
        "q-soft-break": f"=?utf-8?q?hi=\r\n {_q(data)}?=",
        "double-encoded-no-close": "=?utf-8?q?" + _q(f"=?utf-8?q?{_q(data)}".encode()),
    }


ATTACKS = sorted((name, s) for p in PAYLOADS for name, s in _variants(p).items())


@pytest.fixture(scope="module")
def hook() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def reach(smtp_server: SmtpServer, hook: WebhookReceiver, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_reach(
        ("reach-notify", notify_plugin),
        config={"plugins": {"reach-notify": {
            "allow_recipients": ["example.com", "boss@partner.org"],
            "max_recipients": 3, "max_subject_chars": 200, "max_body_chars": 100, "max_text_chars": 50,
            "smtp": {"host": "127.0.0.1", "port": smtp_server.port, "from": "reach@example.com"},
            "webhooks": {"ops": {"url": hook.url("/ok")}},
        }}},
        data_dir=tmp_path_factory.mktemp("notify-redteam"),
    )


@pytest.mark.parametrize(("variant", "subject"), ATTACKS)
def test_loosely_encoded_breaks_are_refused_by_the_subject_check(variant: str, subject: str) -> None:
    with pytest.raises(InvalidArguments):
        one_line("subject", subject, 500, '"x"')


@pytest.mark.parametrize(("variant", "subject"), ATTACKS[::2])
async def test_loosely_encoded_breaks_send_nothing(reach: Any, inbox: Inbox, variant: str, subject: str) -> None:
    result = await reach.invoke("send_email", {"to": "ops@example.com", "subject": subject, "body": "b"})
    assert not result.ok and result.error.code == "invalid_arguments", (variant, result)
    assert inbox.delivered == []


@pytest.mark.parametrize("subject", ["=?utf-8?q?caf=C3=A9", "Re: =?utf-8?Q?na=C3=AFve?", "=?", "?= =?utf-8?q?",
                                     "=?utf-8?x?hi?=", "what =?is?q this"])
async def test_cut_short_but_harmless_words_still_send(reach: Any, inbox: Inbox, subject: str) -> None:
    result = await reach.invoke("send_email", {"to": "ops@example.com", "subject": subject, "body": "b"})
    assert result.ok, result.error
    [mail] = inbox.delivered
    assert "Bcc" not in mail.message and "Reply-To" not in mail.message


SURROGATES = ["\ud800", "\udfff", "a\udc80b", "\ud83d", "x" * 10 + "\udbff"]


@pytest.mark.parametrize("text", SURROGATES)
@pytest.mark.parametrize("field", ["subject", "body", "to", "text"])
async def test_lone_surrogates_are_invalid_arguments(reach: Any, inbox: Inbox, hook: WebhookReceiver,
                                                     field: str, text: str) -> None:
    if field == "text":
        result = await reach.invoke("send_webhook", {"channel": "ops", "text": text})
    else:
        args = {"to": "ops@example.com", "subject": "s", "body": "b"}
        args[field] = text if field != "to" else f"o{text}@example.com"
        result = await reach.invoke("send_email", args)
    assert not result.ok and result.error.code == "invalid_arguments", result
    assert field in result.error.message
    assert inbox.delivered == []


@pytest.mark.parametrize(("field", "limit", "char"), [("subject", 200, "x"), ("subject", 200, "\u00e9"),
                                                      ("subject", 200, "\u90e8"), ("body", 100, "y"),
                                                      ("body", 100, "\U0001f680")])
async def test_sizes_at_and_one_past_the_limit(reach: Any, inbox: Inbox, field: str, limit: int, char: str) -> None:
    args = {"to": "ops@example.com", "subject": "s", "body": "b"}
    ok = await reach.invoke("send_email", {**args, field: char * limit})
    assert ok.ok, ok.error
    over = await reach.invoke("send_email", {**args, field: char * (limit + 1)})
    assert not over.ok and over.error.code == "invalid_arguments" and field in over.error.message
    assert len(inbox.delivered) == 1


async def test_webhook_text_at_and_one_past_the_limit(reach: Any) -> None:
    assert (await reach.invoke("send_webhook", {"channel": "ops", "text": "z" * 50})).ok
    over = await reach.invoke("send_webhook", {"channel": "ops", "text": "z" * 51})
    assert not over.ok and over.error.code == "invalid_arguments"


async def test_recipient_count_at_and_one_past_the_limit(reach: Any, inbox: Inbox) -> None:
    three = [f"u{i}@example.com" for i in range(3)]
    assert (await reach.invoke("send_email", {"to": three, "subject": "s", "body": "b"})).ok
    over = await reach.invoke("send_email", {"to": [*three, "u3@example.com"], "subject": "s", "body": "b"})
    assert not over.ok and over.error.code == "invalid_arguments"
    assert [m.rcpt_tos for m in inbox.delivered] == [three]


@pytest.mark.parametrize(("address", "ok"), [
    ("a" * 64 + "@example.com", True), ("a" * 65 + "@example.com", False),
    ("a@" + "b" * 63 + ".example.com", False),  # a subdomain: not the allowed domain
    ("a@" + "b" * 64 + ".com", False),  # a label over 63
    ("BOSS@Partner.ORG", True), ("boss@partner.org.", False), ("boss.@partner.org", False),
    ("boss@partner.org\u3002", False), ("boss\uff20partner.org", False), ("bo\u0455s@partner.org", False),
])
async def test_address_boundaries_and_spellings(reach: Any, inbox: Inbox, address: str, ok: bool) -> None:
    result = await reach.invoke("send_email", {"to": address, "subject": "s", "body": "b"})
    assert result.ok is ok, (address, result.error)
    if not ok:
        assert result.error.code in ("invalid_arguments", "denied")
        assert inbox.delivered == []


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "Infinity", "1e999", "-1e999"])
async def test_a_webhooks_retry_after_is_a_finite_wait_or_none(tmp_path_factory: pytest.TempPathFactory,
                                                                value: str) -> None:
    import json
    import math

    class Limit(LoopbackHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.read_body()
            self.reply(429, headers={"Retry-After": value})

    with serve_loopback(Limit) as url:
        reach = make_reach(
            ("reach-notify", notify_plugin),
            config={"plugins": {"reach-notify": {
                "webhooks": {"ops": {"url": f"{url}/hook", "allow_private": True}}}}},
            data_dir=tmp_path_factory.mktemp("notify-retry"),
        )
        result = await reach.invoke("send_webhook", {"channel": "ops", "text": "hi"})
    assert not result.ok and result.error.code == "rate_limited", result.error
    wait = result.error.retry_after
    assert wait is None or (math.isfinite(wait) and wait >= 0), wait
    json.dumps({"retry_after": wait}, allow_nan=False)
