"""Webhook names are checked to their last character: a trailing newline (which `$`
lets through) or any other odd character is refused when the settings load."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from reach_notify.settings import NotifySettings

BAD = ["ops\n", "ops\r\n", "ops\n\n", "ops\x00", "ops ", " ops", "o ps", "ops\t", "\nops", "ops\u2028", "ops/x",
       "", "-ops", ".ops", "ops\u200b"]


@pytest.mark.parametrize("name", BAD)
def test_odd_webhook_names_are_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="webhook name"):
        NotifySettings.model_validate({"webhooks": {name: {"url": "https://hooks.example.com/x"}}})


@pytest.mark.parametrize("name", ["ops", "on-call", "team.alerts", "a_1", "A"])
def test_simple_webhook_names_load(name: str) -> None:
    settings = NotifySettings.model_validate({"webhooks": {name: {"url": "https://hooks.example.com/x"}}})
    assert list(settings.webhooks) == [name]
