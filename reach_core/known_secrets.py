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
* for a secret with lines (a PEM key; one longer than 256 characters has no per-character
  pattern): its words in order with any line break or white space between them, in any
  escape (``\\n`` in JSON, twice-escaped, ``\\r\\n``, ``<br>``, ``&#10;``, YAML indentation,
  none at all: joined on one line), ``/`` also as ``\\/``,
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
import html
import os
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote, quote_plus, unquote_plus

__all__ = ["MIN_PIECE", "MIN_SECRET", "KnownSecrets"]

MIN_SECRET = 6
MIN_PIECE = 4
_MAX_EXACT = 256  # longest value matched with each character escaped its own way
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


def _trie(words: Iterable[str], char: Callable[[str], str] = re.escape) -> str:
    """A regex for "one of these (lower-case) literals", as a trie: ``re`` tries a flat
    alternation's branches one by one at every position (30 forms of two secrets made a
    10 kB text a 4 ms scan); a trie costs one comparison per branch, longest match first.
    A run without a branch is written at once, so the nesting is the number of branch
    points, not the length of the longest literal."""
    words = sorted(set(words))
    end = "" in words
    words = [w for w in words if w]
    if not words:
        return ""
    common = os.path.commonprefix(words)
    if common and not end:
        return "".join(char(c) for c in common) + _trie([w[len(common):] for w in words], char)
    groups: dict[str, list[str]] = {}
    for w in words:
        groups.setdefault(w[0], []).append(w[1:])
    alts = [char(c) + _trie(rest, char) for c, rest in groups.items()]
    body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    return f"(?:{body})?" if end else body


def _char(c: str) -> str:
    """One character of a literal, matched in either case without ``(?i)`` (which slows ``re``)."""
    up, low = c.upper(), c.lower()
    if up != low and len(up) == 1 and len(low) == 1:
        return f"[{re.escape(low)}{re.escape(up)}]"
    return re.escape(c)


# Between the lines (words) of a long or multi-line secret: any run of white space, also
# written as JSON/C escapes (\n, \\n, \r\n), HTML line breaks and character references.
_BREAK = r"(?:\s|\\+[nrt]|<br\s*/?>|&#0*(?:9|10|13|32);|&#x0*(?:9|a|d|20);|%0[ad]|%20|%09)*"


def _wrapped(secret: str) -> bool:
    r"""Is ``secret`` one whose lines text re-wraps (a PEM key: too long for the per-character
    pattern, and written with ``\n`` escapes in JSON, ``\r\n``, ``<br>``, indented in YAML,
    or joined on one line)?"""
    return len(secret.split()) >= 2 and (len(secret) > _MAX_EXACT or "\n" in secret or "\r" in secret)


def _spaced_pattern(secret: str) -> str:
    r"""The secret's words in order, with any line break or white space (in any escape) between
    them; a ``/`` may be written ``\/`` (as PHP's and some Java encoders write JSON)."""
    words = ["".join(r"\\*/" if c == "/" else re.escape(c) for c in w) for w in secret.split()]
    return _BREAK.join(words)


def _hint(secret: str) -> str:
    """A piece (lower-case) every spacing of ``secret`` holds: its longest run of letters and
    digits, looked for with ``in`` before the pattern runs."""
    return max(re.findall(r"[A-Za-z0-9]+", secret) or [secret.split()[0]], key=len).lower()


_ESCAPED = re.compile(r"(?i)\\+u([0-9a-f]{4})|\\+x([0-9a-f]{2})|\\+([\"'/\\])")


def _decoded(text: str) -> str:
    """``text`` with its escapes undone (percent, ``+``, JSON/C ``\\u``/``\\x``, HTML), lower-cased:
    only to learn whether a secret hides in it, so the slow exact pattern runs rarely."""
    if "&" in text:
        text = html.unescape(text)
    if "\\" in text:
        text = _ESCAPED.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)) if m.group(3) is None
                            else m.group(3), text)
    if "%" in text or "+" in text:
        text = unquote_plus(text, errors="replace")
    return text.lower()


def mask_spans(value: str, spans: list[tuple[int, int]]) -> str:
    """``value`` with each span replaced by ``[REDACTED]`` (spans in any order; overlapping
    and empty ones allowed). One splice for this module's scans and ``reach_core.redact``'s."""
    spans = sorted(s for s in spans if s[1] > s[0])
    if not spans:
        return value
    parts, pos = [], 0
    for start, end in spans:
        if end <= pos:
            continue
        start = max(start, pos)
        parts.append(value[pos:start])
        parts.append(_MASK)
        pos = end
    parts.append(value[pos:])
    return "".join(parts)


class KnownSecrets:
    """A set of exact secret values, found in any of their spellings.

    Three scans, cheapest first: one regex of every whole encoded form as a literal
    (the secret in any case, its URL, hex, base64 and JSON forms); one exact pattern
    that lets each character be escaped its own way, run only when the text holds an
    escape (``%``, ``\\``, ``&``, ``+``) and, decoded, holds a secret; and the cut
    pieces at the text's two ends, looked for only when the text's first or last
    ``MIN_PIECE`` characters occur in some form.
    """

    __slots__ = ("values", "_literal", "_literal_any", "_exact", "_lowered", "_forms", "_grams", "_span",
                 "_spaced", "_spaced_hints")

    def __init__(self) -> None:
        self.values: frozenset[str] = frozenset()
        self._literal: re.Pattern[str] | None = None  # on lower-cased text
        self._literal_any: re.Pattern[str] | None = None  # either case, on text whose lower() changes its length
        self._exact: re.Pattern[str] | None = None
        self._lowered: tuple[str, ...] = ()
        self._forms: tuple[str, ...] = ()
        self._grams: frozenset[str] = frozenset()
        self._span = 0
        self._spaced: re.Pattern[str] | None = None
        self._spaced_hints: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.values)

    def add(self, values: Iterable[str]) -> bool:
        """Add secret values (shorter than ``MIN_SECRET`` characters are ignored); True if any was new."""
        new = {v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET} - self.values
        if not new:
            return False
        self.values = self.values | new
        forms: set[str] = set()
        for secret in self.values:
            forms |= _literal_forms(secret)
        ordered = sorted(forms, key=len, reverse=True)
        self._forms = tuple(ordered)
        self._literal = re.compile(_trie(ordered))
        self._literal_any = re.compile(_trie(ordered, _char))
        # each character in any escape: for values of a sane length (a PEM key is found by its literal forms)
        exact = [v for v in sorted(self.values, key=len, reverse=True) if len(v) <= _MAX_EXACT]
        self._exact = re.compile("(?i)" + "|".join("".join(_char_forms(ch) for ch in v) for v in exact)
                                 if exact else "(?!)")
        self._lowered = tuple(v.lower() for v in self.values)
        self._grams = frozenset(f[i:i + MIN_PIECE] for f in ordered for i in range(len(f) - MIN_PIECE + 1))
        self._span = max(len(f) for f in ordered) - 1
        spaced = [v for v in sorted(self.values, key=len, reverse=True) if _wrapped(v)]
        self._spaced = re.compile("(?i)" + "|".join(_spaced_pattern(v) for v in spaced)) if spaced else None
        self._spaced_hints = tuple(_hint(v) for v in spaced)
        return True

    def found_in(self, text: str) -> bool:
        """Does ``text`` hold one of the secrets (whole, in any spelling)?"""
        if self._literal is None:
            return False
        if self._literal_spans(text):
            return True
        if self._spaced is not None and self._spaced.search(text) is not None:
            return True
        return self._escaped(text) and self._exact is not None and self._exact.search(text) is not None

    def _literal_spans(self, text: str) -> list[tuple[int, int]]:
        """Where the whole forms are in ``text`` (searched in its lower-cased copy: a trie of
        plain literals is the fast case of ``re``; positions agree when lowering keeps the length)."""
        assert self._literal is not None and self._literal_any is not None
        if len(text) < MIN_SECRET:
            return []
        low = text.lower()
        if len(low) != len(text):
            return [m.span() for m in self._literal_any.finditer(text)]
        if len(low) > 200:  # on long text, str.find in C per form is the fast "no"
            if not any(form in low for form in self._forms):
                return []
        elif self._literal.search(low) is None:
            return []
        return [m.span() for m in self._literal.finditer(low)]

    def _escaped(self, text: str) -> bool:
        """Could ``text`` hold a secret written with escapes? (Decoded, it holds one.)"""
        if "%" not in text and "\\" not in text and "&" not in text and "+" not in text:
            return False
        decoded = _decoded(text)
        return any(v in decoded for v in self._lowered)

    def mask(self, text: str) -> str:
        """``text`` with every secret (whole, encoded, or cut at its start or end) as ``[REDACTED]``."""
        if self._literal is None or not text:
            return text
        spans = self._literal_spans(text)
        out = mask_spans(text, spans) if spans else text
        if self._escaped(out):
            assert self._exact is not None
            out = self._exact.sub(_MASK, out)
        if self._spaced is not None:
            low = out.lower()
            if any(hint in low for hint in self._spaced_hints):
                out = self._spaced.sub(_MASK, out)
        if len(out) >= MIN_PIECE:
            low = out.lower()
            if low[:MIN_PIECE] in self._grams or low[-MIN_PIECE:] in self._grams:
                out = self._mask_cuts(out, low)
        return out

    def _mask_cuts(self, text: str, low: str) -> str:
        """Mask a piece of a secret at the very start or end of ``text`` (see the module docstring)."""
        n = len(low)
        head = tail = 0
        for form in self._forms:
            # the end of text is the start of the form: longest piece first
            for k in range(min(len(form) - 1, n), MIN_PIECE - 1, -1):
                if k <= tail:
                    break
                if low.endswith(form[:k]):
                    tail = k
                    break
            # the start of text is the end of the form
            for k in range(min(len(form) - 1, n), MIN_PIECE - 1, -1):
                if k <= head:
                    break
                if low.startswith(form[-k:]):
                    head = k
                    break
        if not head and not tail:
            return text
        if head + tail >= n:
            return _MASK
        if tail:
            text = text[:n - tail] + _MASK
        if head:
            text = _MASK + text[head:]
        return text

    def mask_data(self, data: Any, _depth: int = 0) -> Any:
        """A copy of JSON-like ``data`` with every known secret masked in its strings, keys and
        numbers. Nothing else is changed: unlike the key and pattern rules (for logs), this
        is for what a model reads, which must stay as the tool gave it but for the secrets."""
        if isinstance(data, str):
            return self.mask(data)
        if isinstance(data, bool) or data is None:
            return data
        if isinstance(data, int | float):
            return _MASK if str(data) in self.values else data
        if _depth >= 64:  # deeper (the core lets results nest ~450 levels): no recursion, no level left out
            return self._mask_deep(data)
        if isinstance(data, dict):
            return {(self.mask(k) if isinstance(k, str) else k): self.mask_data(v, _depth + 1) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.mask_data(v, _depth + 1) for v in data]
        return data

    def _mask_deep(self, data: Any) -> Any:
        """:meth:`mask_data` for a deep subtree, with a stack instead of recursion: a secret
        65 levels down is as visible to the model as one at the top, so no depth is skipped."""
        def copy(value: Any) -> Any:  # a leaf masked, or an empty container whose items come later
            if isinstance(value, dict):
                out: dict[Any, Any] = {}
                stack.append((value, out))
                return out
            if isinstance(value, list | tuple):
                items: list[Any] = []
                stack.append((value, items))
                return items
            return self.mask_data(value, 0)  # a string or a number: no recursion

        stack: list[tuple[Any, Any]] = []
        top = copy(data)
        while stack:
            src, dst = stack.pop()
            if isinstance(dst, dict):
                for k, v in src.items():
                    dst[self.mask(k) if isinstance(k, str) else k] = copy(v)
            else:
                dst.extend(copy(v) for v in src)
        return top

    def mask_result(self, result: Any) -> Any:
        """``result`` (a ``ToolResult``) with every known secret masked in its content, error
        message and meta (``fix`` hints, delivered items): what the model and the caller see.
        A JSON text already cached (a post-invoke hook asked ``to_json()``) is dropped when the
        content changed: adapters send ``to_json()``, and a stale cache is the unmasked result."""
        content = self.mask_data(result.content)
        changed = content != result.content if getattr(result, "_json", None) is not None else False
        result.content = content
        if result.error is not None:
            message = self.mask(result.error.message)
            changed = changed or message != result.error.message
            result.error.message = message
        if changed:
            result._json = None
        if result.meta:  # its keys are reach's and plugins' own names: only the values can hold a secret
            result.meta = {k: self.mask_data(v) for k, v in result.meta.items()}
        return result
