"""Red-team round 6: mentions of the other chat services reach-notify posts to.

``neutralise_mentions`` knew Slack's ``<!channel>``/``<@U1>``, Discord's ``@everyone``/
``@here`` and Teams' ``<at>``. The docs name Mattermost and Rocket.Chat as targets too
(``text_field = "text"``), and chat webhooks are also Zulip, Matrix (hookshot) and Google
Chat. Their mentions went out unchanged, so a model told to page everyone still could:
Mattermost and Rocket.Chat ``@all``, ``@channel`` for a word written in another case is
covered already, Matrix ``@room``, Zulip ``@**all**``/``@**everyone**``/``@**stream**``/
``@**topic**``, Google Chat ``<users/all>``, and any single person by name (``@alice``,
``@**Alice**``, ``<users/123>``), which Slack's ``<@U123>`` was already kept from doing.
Now an ``@`` that starts a word (not one inside an address like ``ops@example.com``) gets
a zero-width space after it, and so does the ``<`` of ``<users/...>`` and ``<at ...>``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from notify_servers import WebhookReceiver
from reach_notify.webhook import neutralise_mentions

MENTIONS = [
    # Mattermost / Rocket.Chat
    "@all", "@ALL", "@All", "@channel", "@here", "@alice", "@alice.smith", "@bob_jones", "@dev-team", "@ops1",
    # Matrix (Element), Rocket.Chat
    "@room", "@ROOM", "@room!",
    # Zulip wildcards, persons and groups (also silent forms)
    "@**all**", "@**everyone**", "@**stream**", "@**channel**", "@**topic**", "@**Alice Smith**", "@*support*",
    "@_**all**", "@**alice|42**",
    # Google Chat
    "<users/all>", "<USERS/all>", "<users/123456789>", "<users/alice@example.com>",
    # Teams with attributes
    "<at id=\"0\">Jane</at>", "<AT>Jane</AT>",
]
PLACES = ["{m}", "hey {m}", "({m})", "**{m}**", "_{m}_", "~{m}~", "cc:{m}", "\n{m}\n", "«{m}»", "—{m}", "{m}, thanks"]
CASES = [place.format(m=m) for m in MENTIONS for place in PLACES]

_WORD_START_AT = re.compile(r"(?<![^\W_])(?<!/)@(?=[^\s\u200b])")


def _defused(text: str) -> bool:
    low = text.lower()
    return not _WORD_START_AT.search(text) and "<users/" not in low and "<at" not in low


@pytest.mark.parametrize("text", CASES)
def test_a_mention_of_any_service_is_broken(text: str) -> None:
    out = neutralise_mentions(f"Deploy done {text}")
    assert _defused(out), repr(out)
    assert out.replace("\u200b", "") == f"Deploy done {text}"  # the same text to a reader


@pytest.mark.parametrize("text", ["mail ops@example.com", "ops@allianz.example and x@room.example",
                                  "user_name@roomy.example", "an @ sign alone", "email me: ops@example.com",
                                  "<https://example.com/users/all>", "a<b and c>d", "50% @ 3 pm",
                                  "see https://medium.com/@alice/post", "https://mastodon.example/@ops",
                                  "npm: https://www.npmjs.com/package/@types/node"])
def test_text_without_a_mention_reads_the_same(text: str) -> None:
    assert neutralise_mentions(text) == text


@pytest.mark.parametrize("text", ["ping @all now", "ping @**all** now", "ping <users/all> now", "ping @room now",
                                  "ping @alice now"])
async def test_a_mention_sent_through_a_real_webhook_is_broken(text: str, receiver: WebhookReceiver,
                                                               make_notify: Any) -> None:
    reach = make_notify({"webhooks": {"ops": {"url": receiver.url("/ok"), "timeout": 3}}})
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": text})
    assert result.ok, result.error
    sent = receiver.received[0].body["text"]
    assert _defused(sent), sent
    assert sent.replace("\u200b", "") == text


async def test_allow_mentions_sends_them_as_written(receiver: WebhookReceiver, make_notify: Any) -> None:
    reach = make_notify({"webhooks": {"ops": {"url": receiver.url("/ok"), "timeout": 3, "allow_mentions": True}}})
    text = "ping @all @**all** <users/all> @room @alice"
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": text})
    assert result.ok and receiver.received[0].body["text"] == text
