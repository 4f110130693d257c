"""The tools: read_file, list_dir, search_files, write_file.

All file access goes through :class:`~reach_files.jail.Jail`: check the path
against the roots, then open it component by component without following
symlinks. The connectors are plain ``def``: the core runs them in its worker
thread pool, so blocking file I/O never touches the event loop.
"""

from __future__ import annotations

import os
import secrets
import stat
from typing import Any

from reach_core import BusinessError, Connector, InvalidArguments, NotFound

from .globs import compile_glob
from .jail import Jail, Located, PathMissing, PathRefused
from .settings import FilesSettings
from .sniff import SNIFF_BYTES, describe_size, guess_type, looks_binary

_PATH_PROP = {"type": "string", "description": "a path relative to the files folder, e.g. notes/todo.md"}


class _FilesConnector(Connector):
    tags = ("files",)

    def __init__(self, jail: Jail, settings: FilesSettings) -> None:
        self.jail = jail
        self.settings = settings

    def _locate(self, path: str) -> Located:
        try:
            return self.jail.locate(path)
        except PathRefused as exc:
            raise InvalidArguments("path", message=str(exc)) from None

    def execute(self, params: dict[str, Any], ctx: Any = None) -> Any:
        try:
            return self.run(params)
        except PathRefused as exc:
            raise InvalidArguments("path", message=str(exc)) from None
        except PathMissing as exc:
            raise NotFound(f"`{exc}`", message=f"`{exc}` does not exist; use list_dir or search_files to find the right path.") from None
        except PermissionError as exc:
            raise BusinessError(f"the operating system refused access ({exc.strerror})") from None

    def run(self, params: dict[str, Any]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class ReadFile(_FilesConnector):
    name = "read_file"
    risk = "read"

    def __init__(self, jail: Jail, settings: FilesSettings) -> None:
        super().__init__(jail, settings)
        self.description = (
            "Read a text file from the files folder. Use when the user asks what a file says. "
            f"Returns at most {settings.max_read_bytes} bytes per call with `truncated` and `next_offset` "
            "when there is more; binary files are described (size, type), not shown."
        )
        self.input_schema = {  # type: ignore[misc]
            "type": "object",
            "properties": {
                "path": _PATH_PROP,
                "offset": {"type": "integer", "minimum": 0, "description": "byte to start at (from next_offset)"},
                "max_bytes": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": settings.max_read_bytes,
                    "description": f"bytes to return (default and maximum {settings.max_read_bytes})",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        }

    def run(self, params: dict[str, Any]) -> Any:
        loc = self._locate(params["path"])
        offset = int(params.get("offset") or 0)
        limit = int(params.get("max_bytes") or self.settings.max_read_bytes)
        if not loc.parts:
            raise BusinessError("`.` is a folder; use list_dir to see what it holds")
        with self.jail.open_file(loc, os.O_RDONLY | os.O_NONBLOCK) as fd:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise BusinessError(f"`{loc.shown}` is a folder; use list_dir to see what it holds")
            if not stat.S_ISREG(st.st_mode):
                raise BusinessError(f"`{loc.shown}` is not a regular file (a device, pipe or socket); refused")
            head = os.pread(fd, SNIFF_BYTES, 0)
            if looks_binary(head):
                return {
                    "path": loc.shown,
                    "binary": True,
                    "size": st.st_size,
                    "size_text": describe_size(st.st_size),
                    "type": guess_type(head, loc.name),
                    "note": "binary file: contents not shown",
                }
            data = os.pread(fd, limit + 4, offset)
        return _text_slice(loc.shown, data, offset, limit, st.st_size)


def _text_slice(shown: str, data: bytes, offset: int, limit: int, size: int) -> dict[str, Any]:
    """Decode ``limit`` bytes at ``offset`` without splitting a UTF-8 character."""
    start = 0
    while start < min(3, len(data)) and offset + start > 0 and 0x80 <= data[start] <= 0xBF:
        start += 1  # an offset inside a character: skip its continuation bytes
    end = min(len(data), limit)
    while end > start and end < len(data) and 0x80 <= data[end] <= 0xBF:
        end -= 1  # do not cut the character that straddles the limit
    chunk = data[start:end]
    text = chunk.decode("utf-8", errors="replace")
    next_offset = offset + end
    out: dict[str, Any] = {"path": shown, "size": size, "content": text}
    if offset or next_offset < size:
        out["range"] = [offset + start, next_offset]
    if next_offset < size:
        out["truncated"] = True
        out["next_offset"] = next_offset
        out["note"] = (
            f"[truncated: showing bytes {offset + start}–{next_offset} of {size} ({describe_size(size)}); "
            f"call read_file again with offset={next_offset} for more]"
        )
    return out


class ListDir(_FilesConnector):
    name = "list_dir"
    risk = "read"

    def __init__(self, jail: Jail, settings: FilesSettings) -> None:
        super().__init__(jail, settings)
        self.description = (
            "List a folder inside the files folder: names, kinds (file, dir, symlink) and sizes. "
            "Use when you need to see which files exist. Default path is the files folder itself."
        )
        self.input_schema = {  # type: ignore[misc]
            "type": "object",
            "properties": {"path": {**_PATH_PROP, "default": "."}},
            "additionalProperties": False,
        }

    def run(self, params: dict[str, Any]) -> Any:
        loc = self._locate(params.get("path") or ".")
        with self.jail.open_dir(loc) as fd, os.scandir(fd) as it:
            entries = []
            for entry in it:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    kind = "symlink"
                elif stat.S_ISDIR(st.st_mode):
                    kind = "dir"
                elif stat.S_ISREG(st.st_mode):
                    kind = "file"
                else:
                    kind = "other"
                item: dict[str, Any] = {"name": entry.name, "type": kind}
                if kind == "file":
                    item["size"] = st.st_size
                entries.append(item)
        entries.sort(key=lambda e: (e["type"] != "dir", e["name"]))
        cap = self.settings.max_list_entries
        out: dict[str, Any] = {"path": loc.shown, "entries": entries[:cap]}
        if len(entries) > cap:
            out["more_entries"] = len(entries) - cap
            out["note"] = f"[truncated: {len(entries) - cap} more entries; use search_files with a pattern to narrow]"
        return out


class SearchFiles(_FilesConnector):
    name = "search_files"
    risk = "read"

    def __init__(self, jail: Jail, settings: FilesSettings) -> None:
        super().__init__(jail, settings)
        self.description = (
            "Find files by name pattern (glob: *.md, docs/**/*.txt) and optionally by the text they contain. "
            "Use when you do not know the exact path, or to find where something is mentioned. "
            "Returns paths, or matching lines with line numbers when `text` is given."
        )
        self.input_schema = {  # type: ignore[misc]
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "glob on file names or paths (default *)", "default": "*"},
                "text": {"type": "string", "minLength": 1, "description": "literal text the file must contain"},
                "path": {**_PATH_PROP, "description": "folder to search in (default: the files folder)"},
                "ignore_case": {"type": "boolean", "default": False, "description": "match `text` ignoring case"},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": settings.max_search_results,
                    "description": "stop after this many files or matching lines",
                },
            },
            "additionalProperties": False,
        }

    def run(self, params: dict[str, Any]) -> Any:
        loc = self._locate(params.get("path") or ".")
        pattern = params.get("pattern") or "*"
        if "\x00" in pattern:
            raise InvalidArguments("pattern", "a glob without NUL bytes", "*.md")
        if ".." in pattern.split("/"):
            raise InvalidArguments("pattern", "a glob without `..`", "docs/**/*.md")
        matcher = compile_glob(pattern)
        text = params.get("text")
        ignore_case = bool(params.get("ignore_case"))
        needle = text.casefold() if (text and ignore_case) else text
        cap = int(params.get("max_results") or self.settings.max_search_results)
        prefix = "" if loc.shown == "." else loc.shown.rstrip("/") + "/"
        hits: list[dict[str, Any]] = []
        scanned = 0
        stopped = None
        with self.jail.open_dir(loc) as top:
            for dirpath, dirnames, filenames, dfd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
                dirnames.sort()
                rel_dir = "" if dirpath == "." else dirpath[2:] + "/"
                for name in sorted(filenames):
                    rel = rel_dir + name
                    if not matcher.match(rel):
                        continue
                    scanned += 1
                    if scanned > self.settings.max_search_files:
                        stopped = f"stopped after looking at {self.settings.max_search_files} files"
                        break
                    if needle is None:
                        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                        if stat.S_ISREG(st.st_mode):
                            hits.append({"path": prefix + rel, "size": st.st_size})
                    else:
                        hits.extend(self._grep(dfd, name, prefix + rel, needle, ignore_case, cap - len(hits)))
                    if len(hits) >= cap:
                        stopped = f"stopped at {cap} results"
                        break
                if stopped:
                    break
        key = "files" if needle is None else "matches"
        out: dict[str, Any] = {key: hits[:cap], "files_looked_at": min(scanned, self.settings.max_search_files)}
        if stopped:
            out["truncated"] = True
            out["note"] = f"[truncated: {stopped}; narrow the pattern or the folder]"
        return out

    def _grep(self, dfd: int, name: str, shown: str, needle: str, ignore_case: bool, room: int) -> list[dict[str, Any]]:
        """Matching lines of one regular text file (symlinks, binaries and huge files skipped)."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except OSError:
            return []
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > self.settings.max_search_file_bytes:
                return []
            data = os.pread(fd, st.st_size, 0)
        finally:
            os.close(fd)
        if looks_binary(data[:SNIFF_BYTES]):
            return []
        found: list[dict[str, Any]] = []
        width = self.settings.max_line_chars
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            hay = line.casefold() if ignore_case else line
            if needle in hay:
                shown_line = line if len(line) <= width else line[:width] + f"… [{len(line) - width} more chars]"
                found.append({"path": shown, "line": number, "text": shown_line})
                if len(found) >= room:
                    break
        return found


class WriteFile(_FilesConnector):
    name = "write_file"
    risk = "write"

    def __init__(self, jail: Jail, settings: FilesSettings) -> None:
        super().__init__(jail, settings)
        self.description = (
            "Write a UTF-8 text file inside the files folder. Use when the user asks to save or change a file. "
            "mode `create` (default) refuses to replace an existing file, `overwrite` replaces it atomically, "
            "`append` adds to its end. Missing folders are created."
        )
        self.input_schema = {  # type: ignore[misc]
            "type": "object",
            "properties": {
                "path": _PATH_PROP,
                "content": {"type": "string", "description": f"the text (at most {settings.max_write_bytes} bytes)"},
                "mode": {
                    "type": "string",
                    "enum": ["create", "overwrite", "append"],
                    "default": "create",
                    "description": "create a new file (default), overwrite an existing one, or append to it",
                },
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        }

    def run(self, params: dict[str, Any]) -> Any:
        loc = self._locate(params["path"])
        mode = params.get("mode") or "create"
        data = params["content"].encode("utf-8")
        if len(data) > self.settings.max_write_bytes:
            raise InvalidArguments(
                "content", message=f"`content` is {len(data)} bytes; the limit is {self.settings.max_write_bytes}. "
                "Write it in parts with mode `append`."
            )
        if not loc.parts:
            raise InvalidArguments("path", "a file path, not the folder itself", "notes/todo.md")
        if mode == "overwrite":
            self._replace(loc, data)
        else:
            flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if mode == "create" else os.O_APPEND)
            try:
                with self.jail.open_file(loc, flags | os.O_NONBLOCK, create_parents=True) as fd:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise BusinessError(f"`{loc.shown}` is not a regular file; refused")
                    _write_all(fd, data)
            except FileExistsError:
                raise BusinessError(
                    f"`{loc.shown}` already exists; send the call again with mode `overwrite` to replace it "
                    "or `append` to add to it"
                ) from None
            except IsADirectoryError:
                raise BusinessError(f"`{loc.shown}` is a folder; choose a file name inside it") from None
        return {"path": loc.shown, "mode": mode, "bytes_written": len(data)}

    def _replace(self, loc: Located, data: bytes) -> None:
        """Write a temporary file beside the target, then rename it over the target (atomic)."""
        name = loc.parts[-1]
        with self.jail.parent_dir(loc, create=True) as parent:
            try:
                if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                    raise BusinessError(f"`{loc.shown}` is a folder; choose a file name inside it")
            except FileNotFoundError:
                pass
            tmp = f".{name}.reach-{secrets.token_hex(4)}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=parent)
            try:
                try:
                    _write_all(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=parent)
                except FileNotFoundError:
                    pass
                raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
