"""Masking configured secrets in what a service answers, before anything is cut.

A service that reflects what it received (an echo endpoint, an error quoting the
key it rejected: ``invalid key sk-...``) would otherwise hand the credential to the
model, and a prompt injection could send it anywhere another tool reaches.

Order matters: an answer is decoded (charset, JSON escapes such as ``\\u0073k-``)
and then shortened to fit a model's budget. Masking only the raw bytes misses a
secret written as JSON escapes or in UTF-16; masking only the shortened result
misses a secret the cut went through, leaving its first part visible. So the
decoded text and every decoded string are masked first, and whatever was cut
(by the byte cap on the wire, or by shaping) has a trailing partial secret masked.
"""

from __future__ import annotations

import base64
import functools
import re
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = ["MASK", "MIN_SCRUBBED", "Masker"]

MIN_SCRUBBED = 6
"""Shorter secret values are not masked (they would garble ordinary text); no real key is that short."""
MASK = "[redacted credential]"
MIN_TAIL = 4
"""A cut text ending in this many leading characters of a secret (or more) has them masked."""


def _spellings(secret: str) -> set[str]:
    """The secret as written, percent-encoded once and twice, and base64-encoded.

    Twice: a sign-in redirect or an error that quotes the URL it was asked for
    (``/login?next=%2Fx%3Fapi_key%3Dab%252Bcd``) encodes the query key a second time,
    and one decoding gives it back.
    """
    raw = secret.encode()
    b64 = base64.b64encode(raw).decode("ascii")
    once = {quote(secret, safe=""), quote_plus(secret), quote(secret)}
    return {
        secret, *once, *(quote(s, safe="") for s in once), *(quote_plus(s) for s in once),
        b64, b64.rstrip("="), base64.urlsafe_b64encode(raw).decode("ascii").rstrip("="),
    }


@functools.lru_cache(maxsize=256)
def _texts(secrets: tuple[str, ...]) -> tuple[str, ...]:
    found = {t for s in secrets if len(s) >= MIN_SCRUBBED for t in _spellings(s) if len(t) >= MIN_SCRUBBED}
    return tuple(sorted(found, key=len, reverse=True))


@functools.lru_cache(maxsize=256)
def _pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    texts = _texts(secrets)
    return re.compile("|".join(re.escape(t) for t in texts), re.IGNORECASE) if texts else None


@functools.lru_cache(maxsize=256)
def _bytes_pattern(secrets: tuple[str, ...]) -> re.Pattern[bytes] | None:
    text = _pattern(secrets)
    return None if text is None else re.compile(text.pattern.encode(), re.IGNORECASE)


class Masker:
    """Masks ``secrets`` (as written, percent- and base64-encoded, any case) in answers."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        self.secrets = secrets
        self._re = _pattern(secrets)

    def __bool__(self) -> bool:
        return self._re is not None

    def text(self, text: str) -> str:
        return text if self._re is None else self._re.sub(MASK, text)

    def raw(self, body: bytes) -> bytes:
        pattern = _bytes_pattern(self.secrets)
        return body if pattern is None else pattern.sub(MASK.encode(), body)

    def value(self, value: Any) -> Any:
        """``value`` (a parsed answer: dicts, lists, strings) with every string and key masked."""
        if self._re is None:
            return value
        if isinstance(value, str):
            return self._re.sub(MASK, value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def tail(self, text: str) -> str:
        """``text``, which was cut, with a secret's first characters at its very end masked."""
        if self._re is None:
            return text
        folded = text[-200:].casefold()
        for secret in _texts(self.secrets):
            start = secret.casefold()
            for n in range(min(len(start) - 1, len(folded)), MIN_TAIL - 1, -1):
                if folded.endswith(start[:n]):
                    return text[:-n] + MASK
        return text

    def cut(self, text: str, limit: int) -> str:
        """The first ``limit`` characters of an already masked ``text``, no partial secret at the end.

        A cut through a mask keeps the whole mask: ``...key=[`` would hide that a credential
        stood there (like :meth:`tail`, the result may then pass ``limit`` by the mask's length).
        """
        if len(text) <= limit:
            return text
        through = text.find(MASK, max(0, limit - len(MASK) + 1))
        if self._re is not None and 0 <= through < limit:
            return text[:through] + MASK
        return self.tail(text[:limit])
