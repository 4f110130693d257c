"""Header text a model writes (the subject): one line, also after MIME decoding.

Python's ``email`` package decodes RFC 2047 encoded words when a header is set
(``=?utf-8?q?hi=0D=0ABcc:_x@evil.org?=`` becomes ``hi\\r\\nBcc: x@evil.org``) and
writes the decoded line breaks out as they are: a subject could add a ``Bcc``,
``Reply-To`` or a second ``To``. So a value is checked as written and in every
decoded reading (our own lenient decoder — q and b, any charset, any case, with or
without surrounding whitespace, folded — the standard library's ``decode_header``
and the header parser the message itself uses), and refused if any reading holds
a line break or control character. :func:`reach_notify.mail.render` then checks
the bytes that will be sent, as a second line of defence.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re

from reach_core import InvalidArguments

__all__ = ["BREAKING", "decoded_readings", "has_breaking", "one_line"]

BREAKING = frozenset(
    {chr(c) for c in range(0x20) if c != 0x09}
    | {"\x7f"}
    | {chr(c) for c in range(0x80, 0xA0)}  # C1 controls, NEL (\x85) among them
    | {"\u2028", "\u2029"}
)
"""Characters that end a line for some reader (``str.splitlines`` and mail software) or
have no place in a header: C0 controls but tab, DEL, C1 controls, U+2028, U+2029."""

_ENCODED_WORD = re.compile(r"=\?([^?\s]*)\?([qQbB])\?([^?]*)(?:\?=|\?|$)")
"""An encoded word; also one whose closing ``?=`` is cut short (``...?`` or nothing), which
lenient readers (webmail, some MUAs) still decode."""
_FOLD = re.compile(r"\?=[ \t]*(?:\r\n|\r|\n)?[ \t]+=\?")
_Q_ESCAPE = re.compile(rb"=([0-9A-Fa-f]{2})")
_MAX_ROUNDS = 4


def has_breaking(text: str) -> bool:
    """Whether ``text`` holds a line break or a control character (tab excepted)."""
    return any(ch in BREAKING for ch in text)


def _word_bytes(encoding: str, payload: str) -> bytes:
    if encoding in "bB":
        cleaned = re.sub(r"[^A-Za-z0-9+/]", "", payload)
        try:
            return base64.b64decode(cleaned + "=" * (-len(cleaned) % 4))
        except (binascii.Error, ValueError):
            return payload.encode("latin-1", "replace")
    raw = payload.replace("_", " ").encode("latin-1", "replace")
    return _Q_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), raw)


def _decode_word(match: re.Match[str]) -> str:
    charset = match.group(1).split("*", 1)[0] or "ascii"  # RFC 2231 language suffix
    data = _word_bytes(match.group(2), match.group(3))
    try:
        codecs.lookup(charset)
        text = data.decode(charset, "replace")
        ascii_compatible = "a\r\n".encode(charset) == b"a\r\n"
    except (LookupError, ValueError, UnicodeError):
        text, ascii_compatible = data.decode("latin-1"), True  # unknown charset: a reader may show the bytes
    if ascii_compatible and any(b < 0x20 and b != 0x09 or b == 0x7F for b in data):
        return text + "\n"  # a raw control byte (CR, LF ...) is a break whatever the charset claims
    return text


def _lenient_decode(text: str) -> str:
    """Every encoded word replaced by its text, whitespace between adjacent words dropped."""
    return _ENCODED_WORD.sub(_decode_word, _FOLD.sub("?==?", text))


def decoded_readings(value: str, *, with_policy: bool = True) -> list[str]:
    """``value`` and what different decoders make of it (repeatedly: a decoded text may
    itself hold encoded words). ``with_policy=False`` leaves out the ``email`` package's
    header parser (the slowest reader) for text the package itself just encoded."""
    readings = [value]
    if "=?" not in value:
        return readings  # no encoded word: every decoder gives the text back as it is
    current = value
    for _ in range(_MAX_ROUNDS):
        decoded = _lenient_decode(current)
        if decoded == current:
            break
        readings.append(decoded)
        current = decoded
    try:
        from email.header import decode_header, make_header

        readings.append(str(make_header(decode_header(value))))
    except Exception:  # noqa: BLE001 - a decoder failing on hostile input is not a finding
        pass
    if not with_policy:
        return readings
    try:
        from email import policy

        readings.append(str(policy.default.header_factory("Subject", value)))
    except Exception:  # noqa: BLE001
        pass
    return readings


def one_line(field: str, value: object, limit: int, example: str) -> str:
    """``value`` if it is a non-empty single line in every reading; ``InvalidArguments`` otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArguments(field, "a non-empty line of text", example)
    if len(value) > limit:
        raise InvalidArguments(field, f"at most {limit} characters", example)
    if any(has_breaking(reading) for reading in decoded_readings(value)):
        raise InvalidArguments(
            field,
            "a single line without line breaks or control characters, also once MIME encoded "
            "words (=?charset?q?...?=) are decoded; write the text itself, not an encoding of it",
            example,
        )
    return value
