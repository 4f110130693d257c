"""Known secrets: values reach itself was configured with (API keys, tokens, passwords),
found again wherever they turn up, in the spellings text gives them.

The key and pattern rules of :mod:`reach_core.redact` guess at secrets from their
context; a configured secret needs no guess: reach knows the exact value, so it is
masked wherever it appears, whatever surrounds it. A connector that echoes its
token in an error, a server that reflects an ``Authorization`` header back, a
model asked to "print your config" must all come out masked, and not only as
written: text carries a value in many forms. Each secret is found

* as is, in any letter case (hex and percent escapes have two cases, and a
  case-folded copy is still the secret),
* with any of its characters percent-escaped (``%73ecret``, ``+`` for a space),
  JSON-escaped (``\\u0073``, ``\\"``, also escaped twice), written as a C/Python
  byte escape (``\\x73``) or an HTML character reference (``&#115;``),
* base64-encoded (standard and URL-safe alphabets, at each of the three byte
  offsets it may have inside a longer encoded text: ``Basic dXNlcjpzZWNyZXQ=``),
* hex-encoded,
* cut: a piece of at least ``MIN_PIECE`` characters at the start or end of a text
  that the secret (or one of its encoded forms) continues or began (a result
  truncated mid-token, a stream that splits a token over two chunks). The price:
  a text that happens to end with a secret's first four characters (or start
  with its last four) loses them too.

Values shorter than ``MIN_SECRET`` characters are not taken: they would mask
ordinary words.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = ["MIN_PIECE", "MIN_SECRET", "KnownSecrets"]

MIN_SECRET = 6
MIN_PIECE = 4
_MASK = "[REDACTED]"


def _char_forms(ch: str) -> str:
    """A regex for one character of a secret, in every escaped form text may give it."""
    data = ch.encode("utf-8", "surrogatepass")
    forms = [re.escape(ch)]
    forms.append("".join(f"%{b:02x}" for b in data))  # percent escape (either case: the pattern is (?i))
    forms.append("".join(rf"\\+x{b:02x}" for b in data))  # \x73 (C, Python bytes)
    code = ord(ch)
    if code > 0xFFFF:  # JSON writes it as a surrogate pair
        hi, lo = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms.append(rf"\\+u{hi:04x}\\+u{lo:04x}")
    else:
        forms.append(rf"\\+u{code:04x}")
    forms.append(f"&#0*{code};|&#x0*{code:x};")
    if ch in "\"\\/'":
        forms.append(r"\\+" + re.escape(ch))
    short = {"\n": "n", "\t": "t", "\r": "r", "\b": "b", "\f": "f"}.get(ch)
    if short:
        forms.append(r"\\+" + short)
    if ch == " ":
        forms.append(r"\+")
    return "(?:" + "|".join(forms) + ")"


def _b64_fragments(data: bytes) -> set[str]:
    """The parts of the base64 of ``data`` that do not depend on what surrounds it, for
    each of the three offsets ``data`` may start at inside a longer encoded text."""
    out: set[str] = set()
    for offset in range(3):
        n = len(data)
        first, last = -(-8 * offset // 6), 8 * (offset + n) // 6  # chars fully made of data's bits
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            text = enc(b"\0" * offset + data).decode("ascii")[first:last]
            if len(text) >= MIN_SECRET:
                out.add(text)
    return out


def _literal_forms(secret: str) -> set[str]:
    """Whole encoded spellings of ``secret`` (lower-cased), whose pieces are looked for at cuts."""
    data = secret.encode("utf-8", "surrogatepass")
    forms = {secret, quote(secret, safe=""), quote(secret), quote_plus(secret), data.hex(),
             secret.replace("\\", "\\\\").replace('"', '\\"')}
    forms |= _b64_fragments(data) | {base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode()}
    return {f.lower() for f in forms if len(f) >= MIN_SECRET}


class KnownSecrets:
    """A set of exact secret values and the one regex that finds them in any of their spellings."""

    __slots__ = ("values", "_regex", "_literals")

    def __init__(self) -> None:
        self.values: frozenset[str] = frozenset()
        self._regex: re.Pattern[str] | None = None
        self._literals: tuple[tuple[str, str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.values)

    def add(self, values: Iterable[str]) -> bool:
        """Add secret values (shorter than ``MIN_SECRET`` characters are ignored); True if any was new."""
        new = {v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET} - self.values
        if not new:
            return False
        self.values = self.values | new
        alternatives: list[str] = []
        literals: set[str] = set()
        for secret in sorted(self.values, key=len, reverse=True):
            alternatives.append("".join(_char_forms(ch) for ch in secret))
            b64 = _b64_fragments(secret.encode("utf-8", "surrogatepass"))
            alternatives += [re.escape(f) for f in sorted(b64, key=len, reverse=True)]
            alternatives.append(re.escape(secret.encode("utf-8", "surrogatepass").hex()))
            literals |= _literal_forms(secret)
        self._regex = re.compile("(?i)" + "|".join(alternatives))
        self._literals = tuple((f, f[:MIN_PIECE], f[-MIN_PIECE:]) for f in sorted(literals, key=len, reverse=True))
        return True

    def found_in(self, text: str) -> bool:
        """Does ``text`` hold one of the secrets (whole, in any spelling)?"""
        return self._regex is not None and self._regex.search(text) is not None

    def mask(self, text: str) -> str:
        """``text`` with every secret (whole, encoded, or cut at its start or end) as ``[REDACTED]``."""
        if self._regex is None or not text:
            return text
        out = self._regex.sub(_MASK, text)
        if len(out) >= MIN_PIECE:
            out = self._mask_cuts(out)
        return out

    def _mask_cuts(self, text: str) -> str:
        """Mask a piece of a secret at the very start or end of ``text`` (see the module docstring)."""
        low = text.lower()
        head = tail = 0
        for form, first, last in self._literals:
            span = len(form) - 1
            # the end of text is the start of the form: find its first MIN_PIECE chars near the end
            zone_start = max(0, len(low) - span)
            pos = low.find(first, zone_start)
            while pos != -1:
                if form.startswith(low[pos:]):
                    tail = max(tail, len(low) - pos)
                    break
                pos = low.find(first, pos + 1)
            # the start of text is the end of the form: find its last MIN_PIECE chars near the start
            zone = low[:span]
            pos = zone.rfind(last)
            while pos != -1:
                if form.endswith(low[:pos + MIN_PIECE]):
                    head = max(head, pos + MIN_PIECE)
                    break
                pos = zone.rfind(last, 0, pos + MIN_PIECE - 1)
        if head + tail >= len(text) and (head or tail):
            return _MASK
        if tail:
            text = text[:len(text) - tail] + _MASK
        if head:
            text = _MASK + text[head:]
        return text

    def mask_data(self, data: object, _depth: int = 0) -> object:
        """A copy of JSON-like ``data`` with every known secret masked in its strings, keys and
        numbers. Nothing else is changed: unlike the key and pattern rules (for logs), this
        is for what a model reads, which must stay as the tool gave it but for the secrets."""
        if isinstance(data, str):
            return self.mask(data)
        if isinstance(data, bool) or data is None:
            return data
        if isinstance(data, int | float):
            return _MASK if str(data) in self.values else data
        if _depth >= 64:
            return data
        if isinstance(data, dict):
            return {(self.mask(k) if isinstance(k, str) else k): self.mask_data(v, _depth + 1) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.mask_data(v, _depth + 1) for v in data]
        return data

    def mask_result(self, result: Any) -> Any:
        """``result`` (a ``ToolResult``) with every known secret masked in its content, error
        message and meta (``fix`` hints, delivered items): what the model and the caller see."""
        result.content = self.mask_data(result.content)
        if result.error is not None:
            result.error.message = self.mask(result.error.message)
        if result.meta:
            result.meta = self.mask_data(result.meta)
        return result
