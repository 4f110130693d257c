"""Attack class: addresses that walk around a domain allow-list (issue 19).

The allow-list is ``example.com``. Every variant below names another domain to some
parser or mail server (percent hack, bang path, source route, quoted ``@``, comment,
display name, unicode lookalike ...). Each must be refused before anything reaches
the real aiosmtpd server on 127.0.0.1, and nothing may arrive for evil.org.
"""

from __future__ import annotations

from typing import Any

import pytest
import reach_notify.plugin as notify_plugin
from notify_servers import Inbox, SmtpServer
from reach_notify.recipients import (
    RecipientRefused,
    is_recipient,
    outside_allow_list,
    parse_recipients,
)

from reach_core.testing import make_reach


@pytest.fixture(scope="module")
def reach(smtp_server: SmtpServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_reach(
        ("reach-notify", notify_plugin),
        config={"plugins": {"reach-notify": {
            "allow_recipients": ["example.com", "boss@partner.org"],
            "smtp": {"host": "127.0.0.1", "port": smtp_server.port, "from": "reach@example.com"},
        }}},
        data_dir=tmp_path_factory.mktemp("notify-data"),
    )


ROUTING = [
    "victim%evil.org@example.com", "victim%evil.org%example.com@example.com", "x%evil.org@EXAMPLE.COM",
    "evil.org!victim@example.com", "a!b!c@example.com", "victim@evil.org!example.com",
    "@evil.org:victim@example.com", "@a,@b:user@example.com", "@example.com:victim@evil.org",
    "@example.com,@evil.org:x@example.com", "victim@evil.org@example.com", "x@example.com@evil.org",
    "victim%evil.org", "x@example.com%evil.org", "x@example.com!evil.org", "x@example.com:25",
    "x@[127.0.0.1]", "x@[IPv6:::1]", "x@1.2.3.4", "x@example.com.", "x@.example.com", "x@example..com",
    "x@-example.com", "x@example.com-", ".x@example.com", "x.@example.com", "x..y@example.com",
]
QUOTED = [
    '"victim@evil.org"@example.com', '"victim"@example.com', '"x\\"@evil.org"@example.com',
    '"x@example.com"', '"a b"@example.com', '""@example.com', '"x\\@evil.org"@example.com',
    'x\\@evil.org@example.com', "x\\@example.com",
]
COMMENTS = [
    "x(comment)@example.com", "(comment)x@example.com", "x@example.com(comment)", "x@(comment)example.com",
    "x@example.com (evil.org)", "x(@evil.org)@example.com", "x@evil.org(@example.com)",
    "x@evil.org (x@example.com)",
]
DISPLAY = [
    "Ops <ops@example.com>", "<ops@example.com>", "ops@example.com <spy@evil.org>",
    "spy@evil.org <ops@example.com>", '"ops@example.com" <spy@evil.org>', "Ops Team <spy@evil.org>",
    "=?utf-8?q?ops=40example.com?= <spy@evil.org>", "ops@example.com, spy@evil.org",
    "ops@example.com; spy@evil.org", "ops@example.com\tspy@evil.org", "ops@example.com spy@evil.org",
    "ops@example.com\r\nBcc: spy@evil.org", "ops@example.com\n", "\nops@example.com", " ops@example.com",
    "ops@example.com ", "mailto:ops@example.com", "ops@example.com?cc=spy@evil.org",
    "=?utf-8?q?spy=40evil.org?=@example.com", "=?utf-8?b?c3B5QGV2aWwub3Jn?=@example.com",
    "group: spy@evil.org;", "undisclosed-recipients:;",
]
LOOKALIKES = [
    "x@ex\u0430mple.com",  # Cyrillic a
    "x@exampl\u0435.com",  # Cyrillic e
    "x\uff20example.com",  # fullwidth @
    "x@\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com",  # fullwidth letters
    "x@example\uff0ecom", "x@example\u3002com",  # fullwidth / ideographic dot
    "x@example.com\u200b", "x\u200b@example.com", "x@exa\u00admple.com",  # zero-width space, soft hyphen
    "x@example.co\u1d0d", "x@\u212aexample.com",  # small capital M, Kelvin sign
    "v\u0131ctim@example.com",  # dotless i
    "x@example.com\u202e", "x@example.com\x00", "x\x00@evil.org@example.com",
    "\u0078@example.com\u0301", "x@e\u0301xample.com",
]
ALL = [("routing", a) for a in ROUTING] + [("quoted", a) for a in QUOTED] + [
    ("comment", a) for a in COMMENTS] + [("display", a) for a in DISPLAY] + [("lookalike", a) for a in LOOKALIKES]


@pytest.mark.parametrize(("kind", "address"), ALL)
def test_tricky_addresses_are_not_recipients(kind: str, address: str) -> None:
    assert not is_recipient(address)
    with pytest.raises(RecipientRefused):
        parse_recipients([address], limit=5)


@pytest.mark.parametrize(("kind", "address"), ALL)
async def test_tricky_addresses_send_nothing(reach, inbox: Inbox, kind: str, address: str) -> None:
    for to in (address, ["ops@example.com", address]):
        result = await reach.invoke("send_email", {"to": to, "subject": "hello", "body": "b"})
        assert not result.ok and result.error.code in ("invalid_arguments", "denied"), (address, result)
    assert inbox.delivered == []


@pytest.mark.parametrize(
    "address",
    ["x@xn--exmple-cua.com", "x@example.com.evil.org", "x@evil-example.com", "x@sub.example.com",
     "x@example.org", "x@examp1e.com", "x@example.co", "intern@partner.org", "boss@partner.org.evil.org",
     "boss+x@partner.org", "boss@sub.partner.org"],
)
async def test_well_formed_addresses_on_other_domains_are_denied(reach, inbox: Inbox, address: str) -> None:
    assert is_recipient(address)
    assert outside_allow_list([address], ["@example.com", "boss@partner.org"]) == [address]
    result = await reach.invoke("send_email", {"to": address, "subject": "hello", "body": "b"})
    assert not result.ok and result.error.code == "denied"
    assert inbox.delivered == []


ACCEPTED = ["ops@example.com", "OPS@EXAMPLE.COM", "first.last@example.com", "first.last+tag@example.com",
            "o'brien@example.com", "a_b-c@example.com", "x1@Example.Com", "boss@PARTNER.org"]


@pytest.mark.parametrize("address", ACCEPTED)
async def test_plain_addresses_still_arrive_unchanged(reach, inbox: Inbox, address: str) -> None:
    result = await reach.invoke("send_email", {"to": address, "subject": "hello", "body": "b"})
    assert result.ok, result.error
    [mail] = inbox.delivered
    assert mail.rcpt_tos == [address]
    assert mail.message["To"] == address
    assert "Bcc" not in mail.message and "Cc" not in mail.message and "Reply-To" not in mail.message


async def test_many_long_recipients_fold_without_tripping_the_header_check(reach, inbox: Inbox) -> None:
    to = [f"{'a' * 50}.{i}@example.com" for i in range(10)]
    result = await reach.invoke("send_email", {"to": to, "subject": "é" * 150, "body": "b"})
    assert result.ok, result.error
    [mail] = inbox.delivered
    assert mail.rcpt_tos == to and mail.message["Subject"] == "é" * 150
