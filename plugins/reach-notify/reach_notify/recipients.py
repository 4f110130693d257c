"""E-mail recipients: strict parsing and the allow-list.

Only bare ASCII addresses (`name@example.com`) are accepted: no display names,
quotes, comments, commas or line breaks. That closes header injection through
`To` and keeps the allow-list check exact, because what is checked is what is sent.

The local part of a recipient the model names is stricter still: letters, digits
and `. _ + - '` only. RFC 5321 allows more, and mail servers give some of it a
routing meaning the allow-list cannot see: `victim%evil.org@example.com` and
`evil.org!victim@example.com` are relayed by some servers to evil.org (the
percent hack, UUCP bang paths), `@a,@b:user@example.com` is a source route,
`"x@evil.org"@example.com` and `x(comment)@example.com` read differently to
different parsers. With one `@` and nothing but plain characters before it, the
domain after the `@` is the only domain there is, and that is what the
allow-list compares.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_LOCAL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DOMAIN = rf"{_LABEL}(?:\.{_LABEL})+"
_ADDRESS = re.compile(rf"^{_LOCAL}@{_DOMAIN}$")
_PLAIN_LOCAL = r"[A-Za-z0-9_+'-]{1,64}(?:\.[A-Za-z0-9_+'-]{1,64})*"
_PLAIN = re.compile(rf"^{_PLAIN_LOCAL}@{_DOMAIN}$")
_DOMAIN_ONLY = re.compile(rf"^{_DOMAIN}$")
_MAX_ADDRESS = 254


@dataclass
class RecipientRefused(Exception):
    """Which recipient failed and why; the connector turns it into a model-facing error."""

    field: str
    expected: str
    example: str


def is_address(text: str) -> bool:
    """A bare RFC 5321 address (settings: the sender, allow-list entries)."""
    return len(text) <= _MAX_ADDRESS and bool(_ADDRESS.fullmatch(text))


def is_recipient(text: str) -> bool:
    """A bare address whose only routing part is its domain (what a model may send to)."""
    if len(text) > _MAX_ADDRESS or not text.isascii() or not _PLAIN.fullmatch(text):
        return False
    local, domain = text.rsplit("@", 1)
    return len(local) <= 64 and len(domain) <= 253 and any(c.isalpha() for c in domain.rsplit(".", 1)[1])


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
    """`to` as one address or a list of them; duplicates dropped, order kept.

    Spellings that differ only in letter case are one recipient (the first is kept): the
    allow-list compares them that way, and one RCPT per spelling put up to ``limit``
    copies of a message in one inbox."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise RecipientRefused("to", "an address or a list of addresses", '"ops@example.com"')
    if len(items) > limit:
        raise RecipientRefused("to", f"at most {limit} addresses", '["ops@example.com"]')
    seen: dict[str, str] = {}
    for index, item in enumerate(items):
        field = "to" if isinstance(value, str) else f"to[{index}]"
        if not isinstance(item, str) or not is_recipient(item):
            raise RecipientRefused(
                field,
                "one plain address per entry: letters, digits and . _ + - ' before a single @, then "
                "a domain (no names, quotes, comments, commas, line breaks, %, ! or routes)",
                '"ops@example.com"',
            )
        seen.setdefault(item.lower(), item)
    return list(seen.values())


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
