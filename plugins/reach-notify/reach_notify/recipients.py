"""E-mail recipients: strict parsing and the allow-list.

Only bare addresses (`name@example.com`) are accepted: no display names, quotes,
comments, commas or line breaks. That closes header injection through `To` and
keeps the allow-list check exact, because what is checked is what is sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_LOCAL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DOMAIN = rf"{_LABEL}(?:\.{_LABEL})+"
_ADDRESS = re.compile(rf"^{_LOCAL}@{_DOMAIN}$")
_DOMAIN_ONLY = re.compile(rf"^{_DOMAIN}$")
_MAX_ADDRESS = 254


@dataclass
class RecipientRefused(Exception):
    """Which recipient failed and why; the connector turns it into a model-facing error."""

    field: str
    expected: str
    example: str


def is_address(text: str) -> bool:
    return len(text) <= _MAX_ADDRESS and bool(_ADDRESS.fullmatch(text))


def normalise_rule(rule: str) -> str:
    """`Ops@Example.com` -> `ops@example.com`; `@example.com` and `example.com` -> `@example.com`."""
    rule = rule.strip().lower()
    if rule.startswith("@"):
        rule = rule[1:]
    if "@" in rule:
        if not is_address(rule):
            raise ValueError(f"allow_recipients entry {rule!r} is not a plain address")
        return rule
    if not _DOMAIN_ONLY.fullmatch(rule):
        raise ValueError(f"allow_recipients entry {rule!r} is neither an address nor a domain")
    return "@" + rule


def parse_recipients(value: object, *, limit: int) -> list[str]:
    """`to` as one address or a list of them; duplicates dropped, order kept."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise RecipientRefused("to", "an address or a list of addresses", '"ops@example.com"')
    if len(items) > limit:
        raise RecipientRefused("to", f"at most {limit} addresses", '["ops@example.com"]')
    seen: dict[str, None] = {}
    for index, item in enumerate(items):
        field = "to" if isinstance(value, str) else f"to[{index}]"
        if not isinstance(item, str) or not is_address(item):
            raise RecipientRefused(
                field,
                "one plain address per entry (no names, commas or line breaks)",
                '"ops@example.com"',
            )
        seen.setdefault(item, None)
    return list(seen)


def outside_allow_list(addresses: Iterable[str], rules: list[str]) -> list[str]:
    """The addresses no rule allows. Domains match exactly: `@example.com` does not
    allow `x@mail.example.com` or `x@evil-example.com`."""
    allowed = set(rules)
    refused = []
    for address in addresses:
        lowered = address.lower()
        domain = "@" + lowered.rsplit("@", 1)[1]
        if lowered not in allowed and domain not in allowed:
            refused.append(address)
    return refused


def describe_rules(rules: list[str]) -> str:
    if not rules:
        return "none (the allow-list is empty)"
    return ", ".join(f"any address at {r[1:]}" if r.startswith("@") else r for r in rules)
