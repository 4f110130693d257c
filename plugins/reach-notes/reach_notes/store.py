"""The notes file: atomic appends, idempotent by key, bounded in size.

Each note is one JSON line written with a single ``os.write`` on a descriptor
opened with ``O_APPEND``, so the kernel places every record whole at the end of
the file even when several processes append at once. A lock (a thread lock in
the process, ``flock`` across processes where the platform has it) makes the
read-check-write of the size limit and of the idempotency key one step.
File work runs in a worker thread so the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import re
import secrets
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reach_core import BusinessError, Denied
from reach_core.logs import plugin_logger

from .settings import NotesSettings

try:  # POSIX only; elsewhere the in-process lock is all there is.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


_SURROGATE = re.compile("[\ud800-\udfff]")

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


def _refuse_not_regular(mode: int, path: Path) -> None:
    """The notes file must be a plain file: reading a FIFO waits for a writer forever,
    ``/dev/zero`` never ends, a folder or socket cannot hold notes."""
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "not a plain file")
    raise BusinessError(
        f"the notes file {path} is not a regular file (it is {kind}); no note was read or saved. "
        "Tell the user; the operator must point [plugins.reach-notes] path at a plain file."
    )


def _open_regular(path: Path, flags: int) -> int:
    """Open ``path`` without blocking on a FIFO and refuse anything but a regular file
    (looked at before the open, so a device is never opened, and again on the descriptor)."""
    try:
        before = os.stat(path)
    except FileNotFoundError:
        before = None
    if before is not None:
        _refuse_not_regular(before.st_mode, path)
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except IsADirectoryError:
        _refuse_not_regular(stat.S_IFDIR, path)
        raise
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing without a reader
            _refuse_not_regular(stat.S_IFSOCK, path)
        raise
    try:
        _refuse_not_regular(os.fstat(fd).st_mode, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def utc_now() -> str:
    """UTC timestamp with second precision and a Z, e.g. 2026-05-01T07:30:00Z."""
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class NoteStore:
    """One notes file. Safe to share between connectors and concurrent calls."""

    path: Path
    settings: NotesSettings
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Idempotency keys seen so far, and how far into the file they were read.
    _keys: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    _scanned: int = field(default=0, repr=False)
    # damaged lines already reported in the log (reported again only when more appear)
    _warned: int = field(default=0, repr=False)
    #: the Reach's redactor: the warning on ``reach.notes`` names the file, which may hold a secret
    redactor: Any = field(default=None, repr=False)

    async def append(self, content: str, tags: list[str], key: str | None) -> tuple[dict[str, Any], bool]:
        """Append a note; returns (record, created). A known key returns the old record."""
        return await asyncio.to_thread(self._append, content, tags, key)

    async def read_all(self) -> list[dict[str, Any]]:
        """Every readable note, oldest first (a damaged line is skipped, not fatal)."""
        return await asyncio.to_thread(self._read_all)

    def _append(self, content: str, tags: list[str], key: str | None) -> tuple[dict[str, Any], bool]:
        record: dict[str, Any] = {
            "id": f"n_{secrets.token_hex(6)}",
            "created_at": utc_now(),
            "content": content,
            "tags": tags,
        }
        if key:
            record["key"] = key
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            fd = _open_regular(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            try:
                with _file_lock(fd):
                    size = os.fstat(fd).st_size
                    if key:
                        self._scan_keys(fd, size)
                        if key in self._keys:
                            return _same_note(self._keys[key], content, tags, key), False
                    # A crash mid-write can leave a last line without its newline;
                    # start on a fresh line so that one damaged note stays alone.
                    if size and os.pread(fd, 1, size - 1) != b"\n":
                        data = b"\n" + data
                    if size + len(data) > self.settings.max_file_bytes:
                        raise BusinessError(
                            f"the notes file is full ({_human(size)} of "
                            f"{_human(self.settings.max_file_bytes)}); this note was not saved. "
                            "Tell the user; they can archive old notes or raise "
                            "[plugins.reach-notes] max_file_bytes."
                        )
                    written = os.write(fd, data)
                    if written != len(data):
                        raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes")
                    if self.settings.fsync:
                        os.fsync(fd)
                    if key:
                        self._keys[key] = record
                        self._scanned = size + len(data)
            finally:
                os.close(fd)
        return record, True

    def _scan_keys(self, fd: int, size: int) -> None:
        """Learn the keys written since the last scan (by us or another process)."""
        if size < self._scanned:  # the file was truncated or replaced: start over
            self._keys.clear()
            self._scanned = 0
        if size == self._scanned:
            return
        chunk = os.pread(fd, size - self._scanned, self._scanned)
        for record in _parse(chunk, []):
            if isinstance(record.get("key"), str):
                self._keys[record["key"]] = record
        self._scanned = size

    def _read_all(self) -> list[dict[str, Any]]:
        try:
            fd = _open_regular(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return []
        with open(fd, "rb") as handle:
            size = os.fstat(fd).st_size
            if size > self.settings.max_file_bytes * 2:
                raise BusinessError(
                    f"the notes file is too large to read ({_human(size)}); "
                    "ask the user to archive old notes."
                )
            data = handle.read(size)
        skipped: list[int] = []
        notes = list(_parse(data, skipped))
        if len(skipped) > self._warned:
            plugin_logger("notes", self.redactor).warning(
                "reach-notes: %d damaged line(s) of %s skipped (first at line %d); the other notes are used. "
                "Repair or remove those lines to get rid of this warning.", len(skipped), self.path, skipped[0],
            )
        self._warned = len(skipped)
        return notes


def _same_note(record: dict[str, Any], content: str, tags: list[str], key: str) -> dict[str, Any]:
    """The note saved under ``key``, if it is this note; a different note under the same key
    is refused, not reported as saved (it would be lost while the model believes it kept).

    reach's ledger checks this too, but only for calls that share its ledger: two Reach
    instances with their own data dirs can write to one configured notes file."""
    if record.get("content") != content or list(record.get("tags") or []) != tags:
        raise Denied(
            f"idempotency key {key!r} was already used for a different note, which is the one kept; "
            "this note was not saved. Send it as a new call (a new tool-call id)."
        )
    return record


def _parse(data: bytes, skipped: list[int]) -> Iterator[dict[str, Any]]:
    """The notes in ``data``, one JSON object per line; a line that is not a note (damaged by
    a crash, a hand edit, a disk error) is left out and its number added to ``skipped``.

    Fields a note is used by are made the types the tools expect (a damaged ``tags`` would
    otherwise break every later search), and lone surrogates become U+FFFD (they cannot be
    sent to a model as UTF-8)."""
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.removeprefix(b"\xef\xbb\xbf"))
        except (ValueError, RecursionError):
            skipped.append(number)
            continue
        if not isinstance(record, dict) or not isinstance(record.get("content"), str):
            skipped.append(number)
            continue
        tags = record.get("tags")
        note: dict[str, Any] = {
            "id": _text(record.get("id")),
            "created_at": _text(record.get("created_at")),
            "content": _clean(record["content"]),
            "tags": [_clean(t) for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
        }
        if isinstance(record.get("key"), str):
            note["key"] = record["key"]
        yield note


def _clean(text: str) -> str:
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _text(value: Any) -> str | None:
    return _clean(value) if isinstance(value, str) else None


@contextlib.contextmanager
def _file_lock(fd: int) -> Iterator[None]:
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _human(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f} MiB"
    if size >= 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size} B"


class Notebook:
    """Finds the notes file for a call and hands out one ``NoteStore`` per path.

    The default path depends on the Reach instance's data dir, which is known
    only at call time (``ctx.reach.data_dir``), so resolution is lazy.
    """

    def __init__(self, settings: NotesSettings) -> None:
        self.settings = settings
        self._stores: dict[Path, NoteStore] = {}
        self._guard = threading.Lock()

    def path_for(self, ctx: Any) -> Path:
        data_dir = getattr(getattr(ctx, "reach", None), "data_dir", None)
        base = Path(data_dir) if data_dir is not None else Path(".reach")
        if self.settings.path is None:
            return (base / "notes.jsonl").resolve()
        configured = Path(self.settings.path).expanduser()
        return (configured if configured.is_absolute() else base / configured).resolve()

    def store(self, ctx: Any) -> NoteStore:
        path = self.path_for(ctx)
        with self._guard:
            store = self._stores.get(path)
            if store is None:
                redactor = getattr(getattr(ctx, "reach", None), "redactor", None)
                store = self._stores[path] = NoteStore(path, self.settings, redactor=redactor)
            return store
