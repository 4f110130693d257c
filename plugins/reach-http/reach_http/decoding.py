"""Undoing a response's Content-Encoding without letting it grow past the body cap.

httpx decodes ``gzip``/``deflate`` itself, but each network chunk in one
``decompress`` call with no output limit: deflate expands up to ~1000x, and a
server that stacks encodings (``Content-Encoding: gzip, gzip``) multiplies that,
so a few kilobytes on the wire became gigabytes in memory before the body cap
was ever compared. Any server a redirect reaches can send that. Here every
stage has an output budget (``max_length``), so memory stays within a small
multiple of ``max_response_bytes`` whatever the server sends.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

__all__ = ["DecodeFailed", "bounded_body"]

_GZIP = zlib.MAX_WBITS | 16
_ZLIB = zlib.MAX_WBITS
_RAW = -zlib.MAX_WBITS
_MAX_STAGES = 4


class DecodeFailed(Exception):
    """The body does not decode as its Content-Encoding says (or stacks too many)."""


class _Stage:
    """One decoding step (gzip or deflate) with a total output budget."""

    def __init__(self, kind: str, budget: int) -> None:
        self.kind = kind
        self.budget = budget
        self.produced = 0
        self.full = False
        self._d: zlib._Decompress | None = None  # chosen on the first bytes (deflate: zlib or raw)
        self._pending = b""

    def _start(self, data: bytes) -> None:
        if self.kind == "gzip":
            self._d = zlib.decompressobj(_GZIP)
        else:  # "deflate" is zlib-wrapped by the standard, raw by some servers
            wrapped = len(data) >= 2 and (data[0] & 0x0F) == 8 and ((data[0] << 8) | data[1]) % 31 == 0
            self._d = zlib.decompressobj(_ZLIB if wrapped else _RAW)

    def feed(self, data: bytes) -> bytes:
        if self.full or not data:
            return b""
        if self._d is None:
            data = self._pending + data
            if self.kind == "deflate" and len(data) < 2:
                self._pending = data
                return b""
            self._pending = b""
            self._start(data)
        out: list[bytes] = []
        try:
            while data and not self.full:
                assert self._d is not None
                room = self.budget - self.produced
                chunk = self._d.decompress(data, room)
                self.produced += len(chunk)
                out.append(chunk)
                if self.produced >= self.budget:
                    self.full = True
                    break
                if self._d.eof and self.kind == "gzip":  # a further gzip member follows
                    data = self._d.unused_data
                    self._d = zlib.decompressobj(_GZIP) if data else self._d
                else:
                    data = self._d.unconsumed_tail
        except zlib.error as exc:
            raise DecodeFailed(f"the body is not valid {self.kind} data ({exc})") from None
        return b"".join(out)


def _stages(content_encoding: str, limit: int) -> list[_Stage]:
    """Decoders in the order to apply them (the last encoding applied is undone first)."""
    names = [t.strip().lower() for t in content_encoding.split(",") if t.strip()]
    names = [n for n in names if n != "identity"]
    known = [{"x-gzip": "gzip"}.get(n, n) for n in names]
    if any(n not in ("gzip", "deflate") for n in known):
        return []  # an encoding reach cannot undo: the bytes are kept as sent (as httpx did)
    if len(known) > _MAX_STAGES:
        raise DecodeFailed(f"the body stacks {len(known)} content encodings; at most {_MAX_STAGES} are read")
    inner = limit + 1  # one byte more than kept: tells a cut body from one that fits exactly
    middle = 4 * limit + 65_536  # an intermediate stage may need more input than the final output
    return [_Stage(n, inner if i == len(known) - 1 else middle) for i, n in enumerate(reversed(known))]


async def bounded_body(raw: AsyncIterator[bytes], content_encoding: str, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` decoded bytes of the body; True when more was sent (or would decode) and dropped."""
    stages = _stages(content_encoding, limit)
    chunks: list[bytes] = []
    size = 0
    async for data in raw:
        for stage in stages:
            data = stage.feed(data)
        chunks.append(data)
        size += len(data)
        if size > limit or any(s.full for s in stages):
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False
