"""Red team: a broadcast mention glued to what follows it still pings everyone.

``neutralise_mentions`` broke ``@everyone``, ``@here`` and ``@channel`` only when a
word boundary followed (``\\b``), so ``@everyone1``, ``@here_``, ``@channelz``,
``@hereé`` or ``@EVERYONEx`` went out unchanged. Discord finds ``@everyone`` and
``@here`` anywhere in a message's text, whatever comes after them, so a model told
(by a prompt injection) to page everyone only had to add one character. Every such
spelling is now broken by a zero-width space; text that merely holds the letters
(``nowhere``) is unchanged, and an address such as ``ops@hereford.example`` reads the same
(its ``@here`` gets the zero-width space too: Discord would ping for it).
"""

from __future__ import annotations

from typing import Any

import pytest
from notify_servers import WebhookReceiver
from reach_notify.webhook import neutralise_mentions

WORDS = ["everyone", "here", "channel", "Everyone", "HERE", "cHaNnEl"]
GLUED = ["1", "_", "x", "s", "é", "ß", "_x", "123", "everyone", "\u0301", "ー", "٣", "ǅ"]
CASES = [f"@{w}{g}" for w in WORDS for g in GLUED] + [
    f"{pre}@{w}{g}" for pre in ("x", "(", "**", "_", "~~", "||") for w in ("everyone", "here") for g in ("1", "z")]


def _defused(text: str) -> bool:
    low = text.lower()
    return not any(f"@{word}" in low for word in ("everyone", "here", "channel"))


@pytest.mark.parametrize("text", CASES)
def test_a_glued_broadcast_mention_is_broken(text: str) -> None:
    out = neutralise_mentions(f"Deploy done {text}")
    assert _defused(out), out
    assert out.replace("\u200b", "") == f"Deploy done {text}"  # the same text to a reader


@pytest.mark.parametrize("text", ["Deploy 1.2 finished", "mail ops@example.com", "nowhere here", "everyone ok",
                                  "channel 5", "ops@hereford.example", "see https://example.com/@here-docs"])
def test_text_without_a_broadcast_reads_the_same(text: str) -> None:
    out = neutralise_mentions(text)
    assert out.replace("\u200b", "") == text


async def test_a_glued_mention_sent_through_the_webhook_is_broken(receiver: WebhookReceiver, make_notify: Any) -> None:
    reach = make_notify({"webhooks": {"ops": {"url": receiver.url("/ok"), "allow_private": True, "timeout": 3}}})
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "ping @everyone1 and @here_ now"})
    assert result.ok, result.error
    sent = receiver.received[0].body["text"]
    assert _defused(sent), sent
