"""Red-team round 6: one mailbox written in several letter cases got one copy per spelling.

The allow-list compares addresses case-insensitively (``OPS@Example.COM`` is allowed by
``ops@example.com``), but duplicates were dropped only when spelled identically, so
``["ops@example.com", "OPS@example.com", "ops@EXAMPLE.com", ...]`` made one RCPT per
spelling: up to ``max_recipients`` copies of one message in one person's inbox, and a
``To`` header listing the same person ten times. Domains are case-insensitive (RFC 5321
2.4) and no mail system in use treats local-part case as another mailbox, so spellings
that differ only in case are now one recipient (the first spelling is kept).

Real aiosmtpd server on 127.0.0.1; what it received is counted.
"""

from __future__ import annotations

from typing import Any

import pytest
from notify_servers import Inbox

BASE = "ops.team@example.com"
SPELLINGS = ["OPS.TEAM@example.com", "ops.team@EXAMPLE.COM", "Ops.Team@Example.Com", "oPs.TeAm@eXaMpLe.cOm",
             "ops.team@example.COM", "OPS.team@example.com"]
LISTS = [[BASE, other] for other in SPELLINGS] + [[BASE, *SPELLINGS], SPELLINGS, [
    SPELLINGS[0], BASE, SPELLINGS[1]]]


@pytest.fixture
def reach(make_notify: Any, smtp_server: Any) -> Any:
    return make_notify({"allow_recipients": ["example.com"], "max_recipients": 10,
                        "smtp": {"host": "127.0.0.1", "port": smtp_server.port, "from": "reach@example.com"}})


@pytest.mark.parametrize("to", LISTS, ids=[f"list{i}" for i in range(len(LISTS))])
async def test_one_mailbox_gets_one_copy(to: list[str], reach: Any, inbox: Inbox) -> None:
    result = await reach.invoke("send_email", {"to": to, "subject": "Deploy", "body": "done"})
    assert result.ok, result.error
    assert result.content["to"] == [to[0]]
    assert len(inbox.delivered) == 1 and inbox.delivered[0].rcpt_tos == [to[0]]
    assert str(inbox.delivered[0].message["To"]) == to[0]


async def test_different_mailboxes_still_get_one_copy_each(reach: Any, inbox: Inbox) -> None:
    to = ["ops@example.com", "ops+alerts@example.com", "ops.team@example.com", "Dev@example.com"]
    result = await reach.invoke("send_email", {"to": to, "subject": "Deploy", "body": "done"})
    assert result.ok, result.error
    assert inbox.delivered[0].rcpt_tos == to
