"""Tell text from binary, and name a binary file's type instead of dumping it.

A model gains nothing from a PNG's bytes and pays for every one of them, so
binary files are described: size and a type guess from the first bytes (magic
numbers) or, failing that, from the file name.
"""

from __future__ import annotations

import mimetypes

SNIFF_BYTES = 8192

_MAGIC: list[tuple[int, bytes, str]] = [
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (0, b"%PDF-", "application/pdf"),
    (0, b"PK\x03\x04", "application/zip (also docx/xlsx/jar)"),
    (0, b"\x1f\x8b", "application/gzip"),
    (0, b"BZh", "application/x-bzip2"),
    (0, b"\xfd7zXZ\x00", "application/x-xz"),
    (0, b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (0, b"\x7fELF", "application/x-executable (ELF)"),
    (0, b"SQLite format 3\x00", "application/vnd.sqlite3"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"OggS", "audio/ogg"),
    (0, b"\x00asm", "application/wasm"),
    (4, b"ftyp", "video/mp4"),
    (257, b"ustar", "application/x-tar"),
]


def looks_binary(head: bytes) -> bool:
    """NUL bytes or invalid UTF-8 (ignoring a character cut at the end) mean binary."""
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the sniff window is still text.
        return not (exc.start >= len(head) - 3 and exc.reason == "unexpected end of data")
    return False


def guess_type(head: bytes, name: str) -> str:
    """A MIME type: magic numbers first (names lie), then the extension."""
    for offset, magic, kind in _MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"


def describe_size(size: int) -> str:
    """Human-sized, because "1.2 MB" is what a model repeats to a person."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"
