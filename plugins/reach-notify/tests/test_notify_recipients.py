"""Address parsing and allow-list rules on their own."""

from __future__ import annotations

import pytest
from reach_notify.recipients import (
    RecipientRefused,
    normalise_rule,
    outside_allow_list,
    parse_recipients,
)
from reach_notify.settings import NotifySettings


def test_rules_are_normalised() -> None:
    assert normalise_rule(" Ops@Example.COM ") == "ops@example.com"
    assert normalise_rule("example.com") == "@example.com"
    assert normalise_rule("@example.com") == "@example.com"
    for bad in ("*", "*.example.com", "example", "a@b@c.com", "ex ample.com"):
        with pytest.raises(ValueError):
            NotifySettings(allow_recipients=[bad])


def test_domain_rules_match_exactly() -> None:
    rules = ["@example.com", "boss@partner.org"]
    addresses = [
        "a@example.com",
        "a@EXAMPLE.COM",
        "a@sub.example.com",
        "a@xexample.com",
        "boss@partner.org",
        "intern@partner.org",
    ]
    assert outside_allow_list(addresses, rules) == [
        "a@sub.example.com",
        "a@xexample.com",
        "intern@partner.org",
    ]


def test_parse_keeps_order_and_drops_duplicates() -> None:
    assert parse_recipients(["b@x.org", "a@x.org", "b@x.org"], limit=5) == ["b@x.org", "a@x.org"]
    assert parse_recipients("a@x.org", limit=1) == ["a@x.org"]


@pytest.mark.parametrize(
    "value",
    [[], "", "a@x.org;b@x.org", '"a"@x.org', "a@x", "a@-x.org", "a @x.org", ["a@x.org"] * 3, 42],
)
def test_parse_refuses_anything_but_plain_addresses(value: object) -> None:
    with pytest.raises(RecipientRefused):
        parse_recipients(value, limit=2)
