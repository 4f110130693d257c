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
import json
import os
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reach_core import BusinessError, Denied

from .settings import NotesSettings

try:  # POSIX only; elsewhere the in-process lock is all there is.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


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
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
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
        for record in _parse(chunk):
            if isinstance(record.get("key"), str):
                self._keys[record["key"]] = record
        self._scanned = size

    def _read_all(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size > self.settings.max_file_bytes * 2:
                    raise BusinessError(
                        f"the notes file is too large to read ({_human(size)}); "
                        "ask the user to archive old notes."
                    )
                data = handle.read()
        except FileNotFoundError:
            return []
        return list(_parse(data))


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


def _parse(data: bytes) -> Iterator[dict[str, Any]]:
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("content"), str):
            yield record


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
                store = self._stores[path] = NoteStore(path, self.settings)
            return store
