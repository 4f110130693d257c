"""Secret redaction applied to every record, log event and span before it leaves memory.

Two nets, because either alone leaks: key names catch structured secrets
(``{"password": ...}``, ``headers.Authorization``) whatever their shape, and
patterns catch secrets pasted into free text (``"call me with key sk-..."``,
``?api_key=...`` inside a URL, a raw JSON string that failed to parse).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

MASK = "[REDACTED]"

# A normalised key (lower case, only letters and digits) is secret when it
# contains one of these ...
SECRET_KEY_PARTS: tuple[str, ...] = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "authorization",
    "cookie",
    "privatekey",
    "credential",
    "accesskey",
    "sessionid",
    "signature",
)
# ... or equals one of these (too short to match inside other words).
SECRET_KEYS_EXACT: frozenset[str] = frozenset(
    {"auth", "pwd", "pass", "pin", "session", "sig", "jwt", "bearer", "otp", "ssn", "cvv"}
)
# Counters that merely contain a secret word: token usage is a figure, not a secret.
NOT_SECRET_SUFFIXES: tuple[str, ...] = ("tokens", "tokencount", "tokenizer")

_KEYWORDS = r"password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|authorization|cookie|session[_-]?id|client[_-]?secret"

BUILTIN_PATTERNS: tuple[str, ...] = (
    # key=value / "key": "value" inside free text, URLs, raw JSON that did not parse
    rf"(?i)(?:{_KEYWORDS})(?:\"|')?\s*[:=]\s*(?:\"|')?(?P<secret>(?:(?:bearer|basic|digest|token)\s+)?[^\"'\s&,;}}]+)",
    r"(?i)\bbearer\s+(?P<secret>[a-z0-9._~+/=-]{8,})",
    r"(?i)\bbasic\s+(?P<secret>[a-z0-9+/=]{8,})",
    r"\b(?:sk|pk|rk)[-_](?:live|test|proj)?[-_]?[A-Za-z0-9]{16,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bxox[abpr]-[A-Za-z0-9-]{10,}",
    r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWT
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
)

_MAX_DEPTH = 32
# A JSON object key in a compact dump: a string followed by a colon. Strings inside
# values can look like keys too; that only sends the value down the slow path.
_JSON_KEY = re.compile(r'"([^"]*)":')  # dumps with a backslash never get here


def _normalise(key: str) -> str:
    return "".join(ch for ch in key.lower() if ch.isalnum())


class Redactor:
    """Masks secrets in nested JSON-like data and in text.

    Built once per Reach from the settings; key decisions are cached because the
    same few argument names repeat on every call.
    """

    def __init__(self, extra_keys: Iterable[str] = (), extra_patterns: Iterable[str] = ()) -> None:
        self._extra_exact = frozenset(_normalise(k) for k in extra_keys)
        sources = (*BUILTIN_PATTERNS, *extra_patterns)
        self._patterns = [re.compile(p) for p in sources]
        # One combined search first: most strings hold no secret, and one scan of
        # an alternation is far cheaper than a sub() per pattern.
        self._any = re.compile("|".join(_scoped(p) for p in sources))
        self._key_cache: dict[str, bool] = {}
        # Scanning a whole dump equals scanning each string only for patterns that do
        # not look at string boundaries; anchored extra patterns turn the fast path off.
        self._fast = not any(re.search(r"\^|\$|\\A|\\Z|\(\?<[=!]", p) for p in extra_patterns)

    def is_secret_key(self, key: Any) -> bool:
        """True when a value stored under ``key`` must never be written down."""
        cached = self._key_cache.get(key)
        if cached is not None:
            return cached
        if not isinstance(key, str):
            return False
        norm = _normalise(key)
        secret = (
            norm in SECRET_KEYS_EXACT
            or norm in self._extra_exact
            or any(extra and extra in norm for extra in self._extra_exact)
            or (
                any(part in norm for part in SECRET_KEY_PARTS)
                and not norm.endswith(NOT_SECRET_SUFFIXES)
            )
        )
        if len(self._key_cache) < 4096:
            self._key_cache[key] = secret
        return secret

    def scan(self, data: Any) -> bytes | None:
        """The compact JSON of ``data`` when it holds nothing to redact, else ``None``.

        The writer's fast path: one orjson dump and two C-level regex scans instead
        of a Python walk. It may answer ``None`` for clean data (a string that merely
        looks like a key, say); never the JSON of data that holds a secret, because
        every key of the dump and every pattern is checked on it.
        """
        if not self._fast:
            return None
        try:
            dumped = orjson.dumps(data)
        except TypeError:  # not plain JSON data: let value() walk it
            return None
        if b"\\" in dumped:  # escapes (quotes, newlines) could hide a pattern from the scan
            return None
        text = dumped.decode("utf-8")  # str patterns: the same Unicode rules as value()
        if self._any.search(text):
            return None
        secret = self.is_secret_key
        for key in _JSON_KEY.findall(text):
            if secret(key):
                return None
        return dumped

    def text(self, value: str) -> str:
        """Mask every pattern match in ``value`` (only the named group ``secret`` when present)."""
        if not self._any.search(value):
            return value
        for pattern in self._patterns:
            if "secret" in pattern.groupindex:
                value = pattern.sub(_mask_group, value)
            else:
                value = pattern.sub(MASK, value)
        return value

    def value(self, data: Any, _depth: int = 0) -> Any:
        """Return a redacted copy of JSON-like ``data`` (dicts, lists, strings, scalars)."""
        kind = type(data)
        if kind is str:
            return self.text(data)
        if data is None or kind is int or kind is float or kind is bool:
            return data
        if _depth >= _MAX_DEPTH:
            return "[TOO DEEP]"
        if kind is dict:
            secret = self.is_secret_key
            return {
                (k if type(k) is str else str(k)): (MASK if secret(k) else self.value(v, _depth + 1))
                for k, v in data.items()
            }
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, bool | int | float):
            return data
        if isinstance(data, Mapping):
            return {
                str(k): (MASK if self.is_secret_key(k) else self.value(v, _depth + 1))
                for k, v in data.items()
            }
        if isinstance(data, list | tuple | set | frozenset):
            return [self.value(v, _depth + 1) for v in data]
        if isinstance(data, bytes):
            return f"[{len(data)} bytes]"
        return self.text(str(data))

    def structlog_processor(self, _logger: Any, _method: str, event_dict: dict) -> dict:
        """A structlog processor: add it to any logger chain to redact its events too."""
        return self.value(event_dict)


_GLOBAL_FLAGS = re.compile(r"^\(\?([aiLmsux]+)\)")


def _scoped(pattern: str) -> str:
    """Make a pattern safe inside an alternation: global flags become scoped, groups unnamed."""
    pattern = pattern.replace("(?P<secret>", "(?:")
    match = _GLOBAL_FLAGS.match(pattern)
    if match:
        return f"(?{match.group(1)}:{pattern[match.end():]})"
    return f"(?:{pattern})"


def _mask_group(match: re.Match[str]) -> str:
    start, end = match.span("secret")
    whole_start = match.start()
    text = match.group(0)
    return text[: start - whole_start] + MASK + text[end - whole_start :]
