"""Attack class: header injection through the subject, encoded or not (issue 19).

Against one real aiosmtpd server on 127.0.0.1 for the module; every refused variant
must leave the inbox empty, every accepted one must arrive with exactly the headers
reach sets (no Bcc, Reply-To, Cc, second To ...).
"""

from __future__ import annotations

import base64
import codecs
from typing import Any

import pytest
import reach_notify.plugin as notify_plugin
from notify_servers import Inbox, SmtpServer
from reach_notify.headers import decoded_readings
from reach_notify.mail import HEADERS_SENT, build_message, render

from reach_core import InvalidArguments
from reach_core.testing import make_reach

EXPECTED = sorted(h.lower() for h in HEADERS_SENT)


@pytest.fixture(scope="module")
def reach(smtp_server: SmtpServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_reach(
        ("reach-notify", notify_plugin),
        config={"plugins": {"reach-notify": {
            "allow_recipients": ["example.com"],
            "smtp": {"host": "127.0.0.1", "port": smtp_server.port, "from": "reach@example.com"},
        }}},
        data_dir=tmp_path_factory.mktemp("notify-data"),
    )


def _q(data: bytes, upper: bool = True) -> str:
    out = []
    for byte in data:
        ch = chr(byte)
        if ch.isalnum() and byte < 128:
            out.append(ch)
        elif ch == " ":
            out.append("_")
        else:
            out.append(f"={byte:02X}" if upper else f"={byte:02x}")
    return "".join(out)


def _encodings(text: str) -> dict[str, str]:
    """``text`` as RFC 2047 encoded words in many charsets, cases and layouts."""
    found: dict[str, str] = {}
    for charset in ("utf-8", "UTF-8", "UtF-8", "iso-8859-1", "windows-1252", "utf-7", "utf-16", "utf-16-be",
                    "utf-8*en", "ascii"):
        codec = charset.split("*")[0]
        try:
            data = text.encode(codec)
        except (UnicodeEncodeError, LookupError):
            continue
        found[f"q-{charset}"] = f"=?{charset}?q?{_q(data)}?="
        found[f"Q-{charset}-lowerhex"] = f"=?{charset}?Q?{_q(data, upper=False)}?="
        found[f"b-{charset}"] = f"=?{charset}?b?{base64.b64encode(data).decode()}?="
        found[f"B-{charset}-nopad"] = f"=?{charset}?B?{base64.b64encode(data).decode().rstrip('=')}?="
    data = text.encode("utf-8")
    half = len(data) // 2
    found["split-two-words"] = f"=?utf-8?q?{_q(data[:half])}?= =?utf-8?q?{_q(data[half:])}?="
    found["split-q-and-b"] = f"=?utf-8?q?{_q(data[:half])}?= =?utf-8?b?{base64.b64encode(data[half:]).decode()}?="
    found["prefixed"] = f"Status: =?utf-8?q?{_q(data)}?= end"
    found["glued"] = f"Status:=?utf-8?q?{_q(data)}?=end"
    found["nested"] = "=?utf-8?q?" + _q(f"=?utf-8?q?{_q(data)}?=".encode()) + "?="
    return found


INJECTED = ["Bcc: spy@evil.org", "Reply-To: spy@evil.org", "To: spy@evil.org", "Cc: spy@evil.org",
            "Sender: spy@evil.org", "Content-Type: text/html", "X-Injected: 1"]
BREAKS = ["\r\n", "\n", "\r", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\x00", "\x1c", "\x1e", "\r\n\r\n"]

ENCODED_ATTACKS = sorted({
    (name, text)
    for header in INJECTED[:3]
    for br in BREAKS
    for name, text in _encodings(f"hi{br}{header}").items()
})
ENCODED_ATTACKS += sorted({
    (name, text) for header in INJECTED[3:] for name, text in _encodings(f"hi\r\n{header}").items()
})
RAW_ATTACKS = [f"hi{br}{header}" for header in INJECTED for br in BREAKS] + [
    f"{br}{INJECTED[0]}" for br in BREAKS] + ["hi\r\n Bcc: spy@evil.org", "hi\t\r\nBcc: x@evil.org"]


@pytest.mark.parametrize(("encoding", "subject"), ENCODED_ATTACKS)
async def test_encoded_line_breaks_in_the_subject_are_refused(reach, inbox: Inbox, encoding: str,
                                                              subject: str) -> None:
    result = await reach.invoke("send_email", {"to": "ops@example.com", "subject": subject, "body": "b"})
    assert not result.ok and result.error.code == "invalid_arguments", (encoding, subject, result)
    assert "subject" in result.error.message
    assert inbox.delivered == []


@pytest.mark.parametrize("subject", RAW_ATTACKS)
async def test_raw_line_breaks_in_the_subject_are_refused(reach, inbox: Inbox, subject: str) -> None:
    result = await reach.invoke("send_email", {"to": "ops@example.com", "subject": subject, "body": "b"})
    assert not result.ok and result.error.code == "invalid_arguments", (subject, result)
    assert inbox.delivered == []


BENIGN = {
    "plain": ("Deploy finished", "Deploy finished"),
    "unicode": ("部署完成 ✅ — café", "部署完成 ✅ — café"),
    "encoded-q": ("=?utf-8?q?caf=C3=A9_ready?=", "café ready"),
    "encoded-b": ("=?UTF-8?B?wqFoZWxsbyE=?=", "¡hello!"),
    "latin1": ("=?iso-8859-1?q?na=EFve?=", "naïve"),
    "looks-like-header": ("Bcc: spy@evil.org", "Bcc: spy@evil.org"),
    "colon-and-tab": ("a:\tb", "a:\tb"),
    "long": ("x" * 190, "x" * 190),
    "long-words": ("word " * 39 + "end", "word " * 39 + "end"),
    "question-marks": ("=? what ?= is =?this?", "=? what ?= is =?this?"),
    "rtl": ("\u202eevil.exe", "\u202eevil.exe"),
    "utf8-bytes-look-like-c1": ("ąćę…€ — ✅ 🚀 Ņ", "ąćę…€ — ✅ 🚀 Ņ"),
    "encoded-c1-lookalike": ("=?utf-8?q?=C4=85_=E2=80=A6?=", "ą …"),
    "long-unicode": ("é" * 180, "é" * 180),
}


@pytest.mark.parametrize("name", sorted(BENIGN))
async def test_benign_subjects_arrive_with_exactly_reachs_headers(reach, inbox: Inbox, name: str) -> None:
    subject, shown = BENIGN[name]
    result = await reach.invoke("send_email", {"to": ["ops@example.com", "b@example.com"],
                                               "subject": subject, "body": "text"})
    assert result.ok, result.error
    [mail] = inbox.delivered
    assert sorted(k.lower() for k in mail.message.keys()) == EXPECTED
    assert mail.message["Subject"] == shown
    assert mail.message["To"] == "ops@example.com, b@example.com"
    assert mail.rcpt_tos == ["ops@example.com", "b@example.com"]


@pytest.mark.parametrize("subject", [s for _, s in ENCODED_ATTACKS[::7]] + RAW_ATTACKS[::5])
def test_render_refuses_a_message_whose_headers_changed(subject: str) -> None:
    """The second line of defence on its own: the bytes are checked before they are sent."""
    with pytest.raises((InvalidArguments, ValueError)):  # ValueError: the email package refused it first
        message = build_message(sender="reach@example.com", to=["ops@example.com"], subject=subject, body="b",
                                msg_id="<x@example.com>")
        render(message, sender="reach@example.com", to=["ops@example.com"])


def test_decoded_readings_cover_each_encoding() -> None:
    for name, text in _encodings("hi\r\nBcc: x@evil.org").items():
        assert any("\r" in r or "\n" in r for r in decoded_readings(text)), name


def test_every_charset_used_exists() -> None:
    for charset in ("utf-7", "utf-16", "windows-1252"):
        codecs.lookup(charset)



@pytest.mark.parametrize(("encoding", "subject"), ENCODED_ATTACKS[::3])
def test_the_subject_check_alone_refuses_encoded_breaks(encoding: str, subject: str) -> None:
    """The first line of defence on its own (the rendered-bytes check is not reached)."""
    from reach_notify.headers import one_line

    with pytest.raises(InvalidArguments):
        one_line("subject", subject, 500, '"x"')


SMUGGLING = [
    "a\r\n.\r\nMAIL FROM:<x@evil.org>\r\nRCPT TO:<spy@evil.org>\r\nDATA\r\nBcc: spy@evil.org\r\n\r\nhi\r\n.\r\n",
    "a\n.\nMAIL FROM:<x@evil.org>\nRCPT TO:<spy@evil.org>\nDATA\nhi\n.\n",
    "a\r.\rRCPT TO:<spy@evil.org>\r", "a\n.\r\nRCPT TO:<spy@evil.org>\r\n", "a\r\n.\nRCPT TO:<spy@evil.org>\n",
    ".\r\nRCPT TO:<spy@evil.org>", "a\r\n..\r\n.\r\n", "\r\n\r\nBcc: spy@evil.org\r\n",
]


@pytest.mark.parametrize("body", SMUGGLING)
async def test_the_body_cannot_end_the_message_early(reach, inbox: Inbox, body: str) -> None:
    """SMTP smuggling: a line with a single dot inside the body must not end DATA."""
    result = await reach.invoke("send_email", {"to": "ops@example.com", "subject": "s", "body": body})
    assert result.ok, result.error
    [mail] = inbox.delivered
    assert mail.rcpt_tos == ["ops@example.com"]
    assert sorted(k.lower() for k in mail.message.keys()) == EXPECTED
    assert "RCPT TO" in mail.message.get_content() or "Bcc" in mail.message.get_content() or ".." in body
