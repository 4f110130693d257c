"""Bounded capture of a stream: the first and the last bytes, with a marker between.

A command can print gigabytes; the model needs the start (headers, first error)
and the end (summary, final error). Memory stays at `limit` bytes whatever the
program writes, because the middle is counted and dropped as it streams past.
"""

from __future__ import annotations


class HeadTail:
    """Keeps `limit // 2` bytes from the start and the rest from the end."""

    def __init__(self, limit: int) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            excess = len(self._tail) - self._tail_limit
            if excess > 0:
                del self._tail[:excess]

    @property
    def omitted(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def raw(self) -> bytes:
        """The bytes kept (all of them when nothing was omitted)."""
        return bytes(self._head + self._tail)

    def text(self) -> str:
        """Decoded output; bytes that are not UTF-8 become U+FFFD rather than failing."""
        if not self.omitted:
            return (self._head + self._tail).decode("utf-8", errors="replace")
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        return f"{head}\n…[{self.omitted} bytes omitted]…\n{tail}"
