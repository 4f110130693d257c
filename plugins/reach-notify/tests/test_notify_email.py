"""send_email against a real aiosmtpd server on 127.0.0.1."""

from __future__ import annotations

import pytest
from notify_servers import SMTP_PASSWORD, SMTP_USER, free_port

ALLOW = ["example.com", "oncall@partner.org"]


def mail_settings(port: int, **smtp: object) -> dict:
    return {
        "allow_recipients": ALLOW,
        "smtp": {"host": "127.0.0.1", "port": port, "from": "reach@example.com", **smtp},
    }


@pytest.fixture
def reach(make_notify, smtp, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SMTP_USER", SMTP_USER)
    monkeypatch.setenv("SMTP_PASSWORD", SMTP_PASSWORD)
    return make_notify(
        mail_settings(smtp.port, username={"env": "SMTP_USER"}, password={"env": "SMTP_PASSWORD"})
    )


EMAIL = {
    "to": "ops@example.com",
    "subject": "Deploy finished",
    "body": "版本 1.2 已上线。\nAll green.",
}


async def test_mail_arrives_with_headers_body_and_login(reach, smtp) -> None:
    result = await reach.invoke("send_email", EMAIL, idempotency_key="deploy-42")
    assert result.ok, result.error
    assert result.content["sent"] is True and result.content["to"] == ["ops@example.com"]
    [mail] = smtp.inbox.delivered
    assert smtp.inbox.logins == [SMTP_USER]
    assert mail.mail_from == "reach@example.com"
    assert mail.rcpt_tos == ["ops@example.com"]
    assert mail.message["Subject"] == "Deploy finished"
    assert mail.message["To"] == "ops@example.com"
    assert mail.message.get_content().replace("\r\n", "\n") == "版本 1.2 已上线。\nAll green.\n"
    assert mail.message["Message-ID"] == result.content["message_id"]


async def test_message_id_is_derived_from_the_idempotency_key(reach, smtp) -> None:
    await reach.invoke("send_email", EMAIL, idempotency_key="key-a")
    await reach.invoke("send_email", {**EMAIL, "body": "again"}, idempotency_key="key-b")
    ids = [m.message["Message-ID"] for m in smtp.inbox.delivered]
    assert ids[0] != ids[1]
    assert all(i.startswith("<reach.") and i.endswith("@example.com>") for i in ids)
    # A second process sending with key-a would produce the same id, so a receiver can dedupe.
    from reach_notify.mail import message_id

    assert message_id("key-a", "reach@example.com") == ids[0]


async def test_a_repeated_call_in_a_run_is_not_mailed_twice(reach, smtp) -> None:
    call = {"id": "call_9", "function": {"name": "send_email", "arguments": EMAIL}}
    first = await reach.invoke(call, run_id="run-1")
    second = await reach.invoke(call, run_id="run-1")
    assert first.ok and second.ok
    assert len(smtp.inbox.delivered) == 1


@pytest.mark.parametrize(
    "to",
    [
        "someone@evil.com",
        "ops@example.com.evil.com",
        "ops@mail.example.com",  # domains match exactly, not their subdomains
        "ops@evil-example.com",
        "other@partner.org",  # partner.org allows one address only
        ["ops@example.com", "spy@evil.com"],  # one bad recipient stops the whole mail
    ],
)
async def test_recipients_outside_the_allow_list_are_refused(reach, smtp, to) -> None:
    result = await reach.invoke("send_email", {**EMAIL, "to": to})
    assert result.error.code == "denied"
    assert "not an allowed recipient" in result.error.message
    assert "any address at example.com" in result.error.message
    assert smtp.inbox.delivered == []


async def test_allowed_recipients_match_case_insensitively(reach, smtp) -> None:
    result = await reach.invoke(
        "send_email", {**EMAIL, "to": ["Ops@EXAMPLE.com", "oncall@partner.org"]}
    )
    assert result.ok, result.error
    assert smtp.inbox.delivered[0].rcpt_tos == ["Ops@EXAMPLE.com", "oncall@partner.org"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("subject", "Hello\r\nBcc: spy@evil.com"),
        ("subject", "Hello\nX-Injected: 1"),
        ("subject", "Hello\u2028Bcc: spy@evil.com"),
        ("to", "ops@example.com\r\nBcc: spy@evil.com"),
        ("to", "ops@example.com, spy@evil.com"),
        ("to", "Ops Team <ops@example.com>"),
        ("to", "ops@example.com\n"),
        ("to", ["ops@example.com", "spy@evil.com\r\nX: y"]),
    ],
)
async def test_header_injection_is_refused(reach, smtp, field: str, value: object) -> None:
    result = await reach.invoke("send_email", {**EMAIL, field: value})
    assert result.error.code == "invalid_arguments", result.error
    assert field in result.error.message
    assert smtp.inbox.delivered == []


async def test_an_empty_allow_list_refuses_everyone(make_notify, smtp) -> None:
    reach = make_notify({**mail_settings(smtp.port), "allow_recipients": []})
    result = await reach.invoke("send_email", EMAIL)
    assert result.error.code == "denied"
    assert "allow-list is empty" in result.error.message


async def test_some_recipients_refused_by_the_server(make_notify, smtp) -> None:
    reach = make_notify(mail_settings(smtp.port))
    mixed = await reach.invoke(
        "send_email", {**EMAIL, "to": ["ops@example.com", "reject@example.com"]}
    )
    assert mixed.ok
    assert mixed.content["to"] == ["ops@example.com"]
    assert "550" in mixed.content["refused"]["reject@example.com"]
    only_bad = await reach.invoke("send_email", {**EMAIL, "to": "reject@example.com"})
    assert only_bad.error.code == "execution_failed"
    assert "refused every recipient" in only_bad.error.message
    assert len(smtp.inbox.delivered) == 1


async def test_wrong_password_is_a_setup_error_not_retried(make_notify, smtp) -> None:
    reach = make_notify(mail_settings(smtp.port, username=SMTP_USER, password="wrong"))
    result = await reach.invoke("send_email", EMAIL)
    assert result.error.code == "execution_failed"
    assert "refused reach's login" in result.error.message
    assert smtp.inbox.delivered == []


async def test_server_down_means_nothing_was_sent(make_notify) -> None:
    reach = make_notify(mail_settings(free_port()))
    result = await reach.invoke("send_email", EMAIL)
    assert result.error.code == "upstream_unavailable"
    assert "nothing was sent" in result.error.message


async def test_connection_lost_during_data_is_an_unknown_outcome(make_notify, smtp) -> None:
    smtp.inbox.hang_up_on_data = True
    reach = make_notify(mail_settings(smtp.port))
    result = await reach.invoke("send_email", EMAIL)
    assert result.error.code == "outcome_unknown"
    assert "may or may not have been delivered" in result.error.message


async def test_starttls_with_a_verified_certificate(make_notify, smtp_starttls) -> None:
    reach = make_notify(
        mail_settings(
            smtp_starttls.port,
            starttls=True,
            ca_file=str(smtp_starttls.ca_file),
            username=SMTP_USER,
            password=SMTP_PASSWORD,
        )
    )
    result = await reach.invoke("send_email", EMAIL)
    assert result.ok, result.error
    assert smtp_starttls.inbox.logins == [SMTP_USER]
    assert len(smtp_starttls.inbox.delivered) == 1


async def test_starttls_refuses_an_unverified_certificate(make_notify, smtp_starttls) -> None:
    reach = make_notify(
        mail_settings(smtp_starttls.port, starttls=True, username=SMTP_USER, password=SMTP_PASSWORD)
    )
    result = await reach.invoke("send_email", EMAIL)
    assert not result.ok
    assert smtp_starttls.inbox.delivered == []
