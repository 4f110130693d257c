"""The tools: read_file, list_dir, search_files, write_file.

All file access goes through :class:`~reach_files.jail.Jail`: check the path
against the roots, then open it component by component without following
symlinks. The connectors are plain ``def``: the core runs them in its worker
thread pool, so blocking file I/O never touches the event loop. A thread
cannot be stopped from outside, so the work that can grow with the tree
(search, listing) checks a :class:`~reach_files.walk.Budget` -- the call's
deadline and an entry count -- as it goes, and stops with what it has.
"""

from __future__ import annotations

import errno
import math
import os
import re
import secrets
import stat
import time
from contextlib import closing
from typing import Any

from reach_core import BusinessError, Connector, InvalidArguments, NotFound
from reach_core.redact import MASK

from .confcreds import config_kind, config_spans
from .gitcreds import MASK_BYTES, git_config_name, git_config_text, hooks_paths, mask, merged_spans, secret_spans
from .globs import GlobError, compile_glob
from .jail import Jail, Located, Made, NotRegular, PathMissing, PathRefused, is_special
from .protect import (
    AUTORUN_PLACES,
    KEY_REACH,
    YARNRC_NAMES,
    autorun_place,
    env_file,
    git_dir_after,
    git_dir_on_disk,
    key_file,
    private_key_in,
    python_env_on_disk,
    secret_store,
    vcs_name,
    yarn_programs,
)
from .settings import FilesSettings
from .sniff import SNIFF_BYTES, describe_size, guess_type, looks_binary
from .walk import Budget, walk

_PATH_PROP = {"type": "string", "description": "a path relative to the files folder, e.g. notes/todo.md"}
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED = re.compile("[\udc80-\udcff]")


class _FilesConnector(Connector):
    tags = ("files",)

    def __init__(self, jail: Jail, settings: FilesSettings) -> None:
        self.jail = jail
        self.settings = settings

    def _locate(self, path: Any) -> Located:
        if not isinstance(path, str):
            raise InvalidArguments("path", "a string", "notes/todo.md")
        try:
            return self.jail.locate(path)
        except PathRefused as exc:
            raise InvalidArguments("path", message=str(exc)) from None

    def execute(self, params: dict[str, Any], ctx: Any = None) -> Any:
        try:
            return self.run(params, ctx)
        except PathRefused as exc:
            raise InvalidArguments("path", message=str(exc)) from None
        except GlobError as exc:
            raise InvalidArguments("pattern", message=str(exc)) from None
        except NotRegular as exc:
            raise BusinessError(
                f"`{exc}` is not a regular file (a device, pipe or socket); refused. Use a regular file."
            ) from None
        except PathMissing as exc:
            raise NotFound(
                f"`{exc}`", message=f"`{exc}` does not exist; use list_dir or search_files to find the right path."
            ) from None
        except PermissionError as exc:
            raise BusinessError(f"the operating system refused access ({exc.strerror})") from None
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO without a reader, a socket: opened for writing
                raise BusinessError(
                    "the path names a pipe or socket, not a regular file; refused. Use a regular file."
                ) from None
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise BusinessError(
                    f"the write did not fit ({exc.strerror}: the disk or the user's quota is full, or the file "
                    "would pass the system's file-size limit); nothing was changed. Tell the user, or write less."
                ) from None
            if exc.errno == errno.ENAMETOOLONG:  # the jail checks lengths; a filesystem may allow less
                raise InvalidArguments(
                    "path", message="`path` (or a name in it) is longer than this filesystem allows; use shorter names."
                ) from None
            raise

    def _budget(self, ctx: Any) -> Budget:
        return Budget(self._deadline(ctx), self.settings.max_search_entries)

    def _deadline(self, ctx: Any) -> float:
        """When work must stop (``time.monotonic()``), a little before the call's deadline
        so that the partial answer arrives before the core gives up on the call.

        ``ctx.deadline`` is on the event loop's clock, which is ``time.monotonic()`` for
        asyncio's loops (and uvloop's); the tool's timeout from now bounds it in any case.
        """
        now = time.monotonic()
        tool = getattr(ctx, "tool", None)
        end = now + float(getattr(tool, "timeout", None) or self.timeout)
        deadline = getattr(ctx, "deadline", None)
        if isinstance(deadline, (int, float)):
            end = min(end, float(deadline))
        return end - min(0.25, 0.1 * max(0.0, end - now))

    def run(self, params: dict[str, Any], ctx: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


def _int_arg(params: dict[str, Any], field: str, default: int, low: int, high: int | None, hint: str) -> int:
    """A whole-number argument checked here too (the schema may be bypassed or loose):
    JSON gives floats such as 1e30, which must not reach the OS as an overflowing offset."""
    value = params.get(field)
    if value is None:
        return default
    whole = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if isinstance(value, bool) or not whole:
        raise InvalidArguments(field, message=f"`{field}` must be a whole number; you sent {repr(value)[:40]}. {hint}")
    number = int(value)
    if number < low or (high is not None and number > high):
        allowed = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise InvalidArguments(field, message=f"`{field}` must be {allowed}; you sent {repr(value)[:40]}. {hint}")
    return number


def _text_arg(value: Any, field: str) -> str:
    """Text that can be encoded: a lone surrogate (``"\\ud800"`` in JSON) is not Unicode text."""
    if not isinstance(value, str):
        raise InvalidArguments(field, "a string", "notes")
    if "\x00" in value:
        raise InvalidArguments(
            field,
            message=f"`{field}` contains a NUL byte (character {value.index(chr(0))}), which is not text; "
            + ("send a plain glob such as *.md" if field == "pattern"
               else "send text without it (binary files cannot be written or searched for)"),
        )
    bad = _SURROGATE.search(value)
    if bad:
        raise InvalidArguments(
            field,
            message=f"`{field}` contains a lone surrogate (U+{ord(bad.group()):04X} at character {bad.start()}), "
            "which is not valid Unicode text; send the characters themselves (an emoji as the emoji, "
            "not half of an escaped pair).",
        )
    return value


def _shown_name(name: str) -> str:
    """A name as the model sees it: bytes that are not UTF-8 (kept by the OS as surrogates)
    written as ``\\xff`` so the answer stays valid text."""
    if name.isascii() or _ESCAPED.search(name) is None:
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


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

    def run(self, params: dict[str, Any], ctx: Any) -> Any:
        loc = self._locate(params["path"])
        offset = _int_arg(params, "offset", 0, 0, None, "Use next_offset from the previous answer, or leave it out.")
        limit = _int_arg(
            params, "max_bytes", self.settings.max_read_bytes, 1, self.settings.max_read_bytes,
            "Leave it out to get the most.",
        )
        if not loc.parts:
            raise BusinessError("`.` is a folder; use list_dir to see what it holds")
        _refuse_secret(loc, self.settings, "read_file")
        with self.jail.open_file(loc, os.O_RDONLY | os.O_NONBLOCK) as fd:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise BusinessError(f"`{loc.shown}` is a folder; use list_dir to see what it holds")
            if not stat.S_ISREG(st.st_mode):
                raise BusinessError(f"`{loc.shown}` is not a regular file (a device, pipe or socket); refused")
            if offset > st.st_size:
                raise InvalidArguments(
                    "offset",
                    message=f"`offset` {offset} is past the end of `{loc.shown}`, which has {st.st_size} bytes; "
                    f"send an offset from 0 to {st.st_size} (next_offset from the previous answer), "
                    "or leave it out to start at the beginning.",
                )
            head = os.pread(fd, SNIFF_BYTES, 0)
            binary = looks_binary(head)
            guard = not self.settings.allow_secret_files
            # the whole file when it is no larger than a searched one (keys are small), else its head
            head_only = st.st_size <= len(head) or st.st_size > self.settings.max_search_file_bytes
            whole = None
            if guard:
                if not binary and _key_named(loc):  # text in a *.key is a key; a Keynote document is binary
                    raise InvalidArguments("path", message=_secret_message(loc, "read_file"))
                whole = head[:st.st_size] if st.st_size <= len(head) else None if head_only else os.pread(
                    fd, st.st_size, 0)
                if private_key_in(head if whole is None else whole):
                    raise InvalidArguments("path", message=_secret_message(loc, "read_file"))
            if binary:
                return {
                    "path": loc.shown,
                    "binary": True,
                    "size": st.st_size,
                    "size_text": describe_size(st.st_size),
                    "type": guess_type(head, loc.name),
                    "note": "binary file: contents not shown",
                }
            if not guard:
                return _text_slice(loc.shown, os.pread(fd, limit + 4, offset), offset, limit, st.st_size)
            # The page is cut from the very bytes the guards judge, read once: a writer between two
            # reads (a log appended to, a config rewritten in place) cannot make the page differ.
            if whole is not None:
                base, view = 0, whole
            else:  # a big file: the page and KEY_REACH bytes on each side, where a key's armour lies
                base = max(0, offset - KEY_REACH)  # (and the whole line of a token cut by the page edge)
                view = os.pread(fd, offset - base + limit + 4 + KEY_REACH, base)
                if private_key_in(view):
                    raise InvalidArguments("path", message=_secret_message(loc, "read_file"))
            data = view[offset - base: offset - base + limit + 4]
            spans: list[tuple[int, int]] = []
            if (git_config_name(loc.via) or git_config_name(loc.parts)
                    or git_config_text(head if whole is None else whole)):
                spans = secret_spans(view, base)
            kind = config_kind(loc.via) or config_kind(loc.parts)
            if kind is not None:  # database.yml, *.properties, terraform.tfvars ... (`confcreds`)
                spans = merged_spans([*spans, *config_spans(view, kind, base)])
        return _text_slice(loc.shown, data, offset, limit, st.st_size, spans)


def _text_slice(shown: str, data: bytes, offset: int, limit: int, size: int,
                spans: list[tuple[int, int]] | None = None) -> dict[str, Any]:
    """Decode ``limit`` bytes at ``offset`` without splitting a UTF-8 character; credentials at
    ``spans`` (file offsets, `gitcreds`) are shown as ``[REDACTED]``."""
    start = 0
    while start < min(3, len(data)) and offset + start > 0 and 0x80 <= data[start] <= 0xBF:
        start += 1  # an offset inside a character: skip its continuation bytes
    end = min(len(data), limit)
    while end > start and end < len(data) and 0x80 <= data[end] <= 0xBF:
        end -= 1  # do not cut the character that straddles the limit
    chunk = data[start:end]
    masked = 0
    if spans:
        chunk, masked = mask(chunk, spans, offset + start)
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
    if masked:
        out["redacted"] = masked
        out["note"] = (out.get("note", "") + " " + (
            f"[{masked} credential(s) (in git configuration a URL's user:password, extraheader, a password; in "
            "a configuration file the value of a key named password, secret, token ...) "
            f"shown as {MASK}; the file itself keeps them. Writing this text back would replace them. "
            "[plugins.reach-files] allow_secret_files shows them]")).strip()
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

    def run(self, params: dict[str, Any], ctx: Any) -> Any:
        loc = self._locate(params.get("path") or ".")
        if not self.settings.allow_secret_files and (
                secret_store(loc.via, reading=True, file=False)
                or secret_store(loc.parts, reading=True, file=False, above=_above(loc.root))):
            raise InvalidArguments("path", message=_secret_message(loc, "list_dir"))
        most = self.settings.max_search_entries
        deadline = None  # worked out when a folder is big enough to need it
        stopped = None
        entries: list[dict[str, Any]] = []
        state = self.jail.state_ids()
        base = os.path.join(loc.root, *loc.parts)
        with self.jail.open_dir(loc) as fd, os.scandir(fd) as it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # removed while listing
                if self.jail.is_state_entry(loc.root, os.path.join(base, entry.name), st, state):
                    continue  # reach's own state is not shown either
                if len(entries) >= most:
                    stopped = f"stopped after looking at {most} folder entries"
                    break
                if len(entries) & 255 == 255:
                    deadline = deadline or self._deadline(ctx)
                    if time.monotonic() >= deadline:
                        stopped = f"stopped at the time limit after looking at {len(entries)} entries"
                        break
                if stat.S_ISLNK(st.st_mode):
                    kind = "symlink"
                elif stat.S_ISDIR(st.st_mode):
                    kind = "dir"
                elif stat.S_ISREG(st.st_mode):
                    kind = "file"
                else:
                    kind = "other"
                item: dict[str, Any] = {"name": _shown_name(entry.name), "type": kind}
                if kind == "file":
                    item["size"] = st.st_size
                entries.append(item)
        entries.sort(key=lambda e: (e["type"] != "dir", e["name"]))
        cap = self.settings.max_list_entries
        out: dict[str, Any] = {"path": loc.shown, "entries": entries[:cap]}
        if stopped:
            out["more_entries"] = max(0, len(entries) - cap)
            out["note"] = (
                f"[truncated: {stopped} of this folder, which holds more; "
                "use search_files with a pattern to narrow]"
            )
        elif len(entries) > cap:
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

    def run(self, params: dict[str, Any], ctx: Any) -> Any:
        loc = self._locate(params.get("path") or ".")
        budget = self._budget(ctx)
        glob = compile_glob(_text_arg(params.get("pattern") or "*", "pattern"))
        text = params.get("text")
        if text is not None:
            text = _text_arg(text, "text")
        ignore_case = bool(params.get("ignore_case"))
        needle = text.casefold() if (text and ignore_case) else text
        most = self.settings.max_search_results
        cap = _int_arg(params, "max_results", most, 1, most, "Leave it out to get the most.")
        prefix = "" if loc.shown == "." else loc.shown.rstrip("/") + "/"
        hits: list[dict[str, Any]] = []
        scanned = 0
        stopped: str | None = None
        skipped: list[str] = []
        secrets_skipped = 0
        guard = needle is not None and not self.settings.allow_secret_files
        hide = not self.settings.allow_secret_files  # a secret folder's names are not listed either
        above = _above(loc.root)
        base_secret = hide and (secret_store(loc.via, reading=True, file=False)
                                or secret_store(loc.parts, reading=True, file=False, above=above))
        names_hidden = 0

        secret_folders: dict[str, bool] = {"": base_secret}

        def secret_folder(rel: str) -> bool:
            """Is the folder ``rel`` (``"a/b/"``) a secret one? Worked out from its parent's answer (the
            walk yields a parent first) and its own name, so a deep tree costs one check per folder."""
            known = secret_folders.get(rel)
            if known is None:
                parts = (*loc.parts, *rel.split("/")[:-1])
                parent = rel[: rel.rstrip("/").rfind("/") + 1]
                known = secret_folders.get(parent, base_secret) or _secret_in(parts[:-1], parts[-1], above, file=False)
                secret_folders[rel] = known
            return known

        def enter(states: frozenset[int], name: str) -> frozenset[int] | None:
            nxt = glob.step(states, name)
            return nxt if glob.can_continue(nxt) else None

        with self.jail.open_dir(loc) as top, closing(
            walk(top, glob.start(), enter, budget, self.settings.max_search_depth, skipped)
        ) as folders:
            state = self.jail.state_ids()
            base = os.path.join(loc.root, *loc.parts)
            pruned: tuple[str, ...] = ()  # folders that are reach's state: nothing below them is searched
            for folder in folders:
                if pruned and folder.rel.startswith(pruned):
                    continue
                if self.jail.is_state_entry(loc.root, os.path.join(base, folder.rel), os.fstat(folder.fd), state):
                    pruned += (folder.rel,)
                    continue  # reach's own state: never searched
                matches = glob.file_predicate(folder.state)
                path_parts = (*loc.parts, *folder.rel.split("/")[:-1])
                in_secret = hide and secret_folder(folder.rel)
                for index, name in enumerate(folder.files):
                    # one huge folder: its names are matched here, after the listing's own clock checks
                    if index & 63 == 63 and not budget.check_clock():
                        break
                    if not matches(name):
                        continue
                    try:
                        st = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
                    except OSError:
                        continue  # removed while searching
                    if self.jail.is_state_entry(loc.root, os.path.join(base, folder.rel, name), st, state):
                        continue
                    scanned += 1
                    if scanned > self.settings.max_search_files:
                        stopped = f"stopped after looking at {self.settings.max_search_files} files"
                        break
                    if needle is None:
                        if in_secret:
                            names_hidden += 1  # inside a secret folder: the names are its secrets too
                            continue
                        if stat.S_ISREG(st.st_mode):
                            hits.append({"path": _shown_name(prefix + folder.rel + name), "size": st.st_size})
                    else:
                        if time.monotonic() >= budget.deadline:  # reading files is the slow part of a text search
                            budget.stopped = budget.out_of_time()
                            break
                        if guard and (in_secret or _secret_in(path_parts, name, above, file=True)):
                            secrets_skipped += 1  # never opened: its lines are the secrets
                            continue
                        shown = _shown_name(prefix + folder.rel + name)
                        found = self._grep(folder.fd, name, shown, needle, ignore_case, cap - len(hits),
                                           key=guard and key_file(name),
                                           git=guard and git_config_name((*path_parts, name)))
                        if found is None:
                            secrets_skipped += 1
                            continue
                        hits.extend(found)
                    if len(hits) >= cap:
                        stopped = f"stopped at {cap} results"
                        break
                if stopped or budget.stopped:
                    break
        key = "files" if needle is None else "matches"
        out: dict[str, Any] = {key: hits[:cap], "files_looked_at": min(scanned, self.settings.max_search_files)}
        reasons = [r for r in (stopped, budget.stopped) if r]
        if reasons:
            out["truncated"] = True
            out["note"] = f"[truncated: {'; '.join(reasons)}; narrow the pattern or the folder]"
        if skipped:
            out["truncated"] = True
            out["note"] = (out.get("note", "") + " " + f"[{skipped[0]}]").strip()
        if secrets_skipped:
            out["note"] = (out.get("note", "") + " " + (
                f"[{secrets_skipped} secret file(s) (.env, credentials, private keys) not searched; "
                "[plugins.reach-files] allow_secret_files opens them]")).strip()
        if names_hidden:
            out["note"] = (out.get("note", "") + " " + (
                f"[{names_hidden} file(s) inside secret folders (.gnupg, .aws, .password-store, .env.d ...) not "
                "listed: their names are secrets too; [plugins.reach-files] allow_secret_files opens them]")).strip()
        return out

    def _grep(self, dfd: int, name: str, shown: str, needle: str, ignore_case: bool,
              room: int, *, key: bool = False, git: bool = False) -> list[dict[str, Any]] | None:
        """Matching lines of one regular text file (symlinks, devices, binaries and huge files skipped);
        ``None`` for a secret store by its content: a file holding a private key, or text in a
        ``*.key`` (``key``). Git configuration (``git``: by its name; or by its sections) is searched
        with its credentials masked, so a search cannot find a token piece by piece either."""
        try:
            if is_special(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                return []  # never opened: opening a device can act
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except OSError:
            return []
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > self.settings.max_search_file_bytes:
                return []
            if st.st_nlink > 1:
                return []  # a hard link may be a file outside the roots (jail.refuse_linked)
            data = os.pread(fd, st.st_size, 0)
        finally:
            os.close(fd)
        if looks_binary(data[:SNIFF_BYTES]):
            return []
        if key or (not self.settings.allow_secret_files and private_key_in(data)):
            return None
        if not self.settings.allow_secret_files:
            spans = secret_spans(data) if git or git_config_text(data) else []
            kind = config_kind((name,))
            if kind is not None:
                spans = merged_spans([*spans, *config_spans(data, kind)])
            if spans:
                data = mask(data, spans)[0]
        text = data.decode("utf-8", errors="replace")
        if needle not in (text.casefold() if ignore_case else text):
            return []  # most files: one linear search in C, no lines split
        found: list[dict[str, Any]] = []
        width = self.settings.max_line_chars
        for number, line in enumerate(text.splitlines(), start=1):
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

    def run(self, params: dict[str, Any], ctx: Any) -> Any:
        loc = self._locate(params["path"])
        mode = params.get("mode") or "create"
        if mode not in ("create", "overwrite", "append"):
            raise InvalidArguments("mode", "one of create, overwrite, append", "create")
        data = _text_arg(params["content"], "content").encode("utf-8")
        if len(data) > self.settings.max_write_bytes:
            raise InvalidArguments(
                "content", message=f"`content` is {len(data)} bytes; the limit is {self.settings.max_write_bytes}. "
                "Write it in parts with mode `append`."
            )
        if not loc.parts:
            raise InvalidArguments("path", "a file path, not the folder itself", "notes/todo.md")
        self._refuse_guarded(loc)
        if mode == "overwrite":
            self._refuse_masked_write_back(loc, data)
        if len(data) > self.settings.max_file_bytes:
            raise InvalidArguments("content", message=self._too_big(loc, len(data)))
        _refuse_low_disk(loc, len(data), self.settings.min_free_bytes)
        made: list[Made] = []  # the folders this write makes: a failed write takes them away again
        try:
            self._write(loc, mode, data, made)
        except BaseException:
            if made:
                self.jail.remove_made(loc, made)
            raise
        return {"path": loc.shown, "mode": mode, "bytes_written": len(data)}

    def _refuse_masked_write_back(self, loc: Located, data: bytes) -> None:
        """Refuse to overwrite a file whose secrets ``read_file`` shows masked with text that still
        holds the mask: the model edits what it read, and writing that back would replace every
        real password or token in the file with ``[REDACTED]`` (`gitcreds`, `confcreds`).

        Why refuse rather than put the values back: the model cannot see them, and text that
        moved them (into a comment, another key) would be read back unmasked."""
        if MASK_BYTES not in data or self.settings.allow_secret_files:
            return
        old = self._regular_file_text(loc)
        if old is None:
            return  # nothing there to lose (a missing file, a folder: the write itself says so)
        spans: list[tuple[int, int]] = []
        if git_config_name(loc.via) or git_config_name(loc.parts) or git_config_text(old):
            spans = secret_spans(old)
        kind = config_kind(loc.via) or config_kind(loc.parts)
        if kind is not None:
            spans = [*spans, *config_spans(old, kind)]
        if spans:
            raise InvalidArguments("content", message=(
                f"`{loc.shown}` holds {len(spans)} secret value(s) that read_file shows as [REDACTED], and this "
                "content still has [REDACTED] in it: overwriting would replace the real values with that mask, "
                "and they cannot be recovered. Nothing was written. Ask the user to make this change, or "
                "write only new text with mode `append`."))

    def _write(self, loc: Located, mode: str, data: bytes, made: list[Made]) -> None:
        """The write itself, after every check on the path and the size; all or nothing."""
        if mode == "overwrite":
            self._replace(loc, data, made)
        else:
            # `append` to a missing file creates it, exclusively, so a failed write knows the file is its own
            creates = mode == "create" or not _exists(loc)
            flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if creates else 0) | (os.O_APPEND if mode == "append" else 0)
            try:
                with self.jail.open_file(loc, flags | os.O_NONBLOCK, create_parents=True, made=made) as fd:
                    st = os.fstat(fd)
                    try:
                        if not stat.S_ISREG(st.st_mode):
                            raise BusinessError(f"`{loc.shown}` is not a regular file; refused")
                        if not creates:  # a file this call made is ours, whatever bits the umask gave it
                            _refuse_write_protected(st, loc.shown)
                        if st.st_size + len(data) > self.settings.max_file_bytes:
                            raise InvalidArguments("content", message=self._too_big(loc, st.st_size + len(data)))
                        _write_all(fd, data)
                    except BaseException:
                        # all or nothing: a write cut short (disk full, a size limit) leaves the file as it was
                        if stat.S_ISREG(st.st_mode):
                            os.ftruncate(fd, st.st_size)
                        if creates:
                            self._remove_created(loc, st)
                        raise
            except FileExistsError:
                if _is_folder(loc):
                    raise BusinessError(f"`{loc.shown}` is a folder; choose a file name inside it") from None
                if mode == "append":
                    raise BusinessError(f"`{loc.shown}` was created by someone else during this call; "
                                        "send the call again to append to it") from None
                raise BusinessError(
                    f"`{loc.shown}` already exists; send the call again with mode `overwrite` to replace it "
                    "or `append` to add to it"
                ) from None
            except IsADirectoryError:
                raise BusinessError(f"`{loc.shown}` is a folder; choose a file name inside it") from None

    def _refuse_guarded(self, loc: Located) -> None:
        """Places no write goes by default (``protect``): version-control metadata, .env files,
        and folders deeper than ``max_write_depth``. Both the path as given and the path its
        symlinks lead to are looked at."""
        s = self.settings
        if len(loc.parts) - 1 > s.max_write_depth:
            raise InvalidArguments("path", message=(
                f"`path` is {len(loc.parts) - 1} folders deep; write_file goes at most {s.max_write_depth} "
                "folders below the files folder ([plugins.reach-files] max_write_depth). Use a shorter path."))
        names = (*loc.via, *loc.parts)
        if not s.allow_vcs_writes and (any(vcs_name(n) for n in names) or self._in_git_dir(loc)):
            raise InvalidArguments("path", message=(
                f"`{loc.shown}` is version-control metadata (.git, .hg, .svn, .bzr or a git repository "
                "folder, in any spelling); writing there could run code when git is next used, so "
                "write_file refuses it unless the operator sets [plugins.reach-files] allow_vcs_writes = true. "
                "Write the file elsewhere."))
        if not s.allow_secret_files and not s.allow_env_writes and any(env_file(n) for n in names):
            raise InvalidArguments("path", message=(
                f"`{loc.shown}` is a .env file (.env, .envrc, .env.*, NAME.env, or inside a folder so named): it holds "
                "secrets or code run on entering the folder, so write_file refuses it unless the operator sets "
                "[plugins.reach-files] allow_env_writes = true (or allow_secret_files = true). "
                "Write the file elsewhere."))
        if not s.allow_secret_files and (secret_store(loc.via, reading=False, env=False)
                                         or secret_store(loc.parts, reading=False, env=False, above=_above(loc.root))):
            raise InvalidArguments("path", message=_secret_message(loc, "write_file"))
        if "*" not in s.allow_autorun_writes:
            places = [autorun_place(loc.via), autorun_place(loc.parts)]
            if "git-hooks" not in s.allow_autorun_writes and self._in_hooks_path(loc):
                places.append("git-hooks")
            if "package-manager" not in s.allow_autorun_writes and self._is_yarn_program(loc):
                places.append("package-manager")
            if "python-env" not in s.allow_autorun_writes and self._in_python_env(loc):
                places.append("python-env")
            for place in places:
                if place is not None and place not in s.allow_autorun_writes:
                    raise InvalidArguments("path", message=(
                        f"`{loc.shown}` is {AUTORUN_PLACES[place]}: another program runs it by itself later, so "
                        f"write_file does not change it unless the operator adds \"{place}\" to "
                        "[plugins.reach-files] allow_autorun_writes. Reading it is allowed; show the user the "
                        "change to make instead."))

    def _remove_created(self, loc: Located, made: os.stat_result) -> None:
        """Unlink the file a failed `create` made (only if the name still holds that file)."""
        with self.jail.parent_dir(loc, create=False) as parent:
            try:
                now = os.stat(loc.parts[-1], dir_fd=parent, follow_symlinks=False)
                if (now.st_dev, now.st_ino) == (made.st_dev, made.st_ino):
                    os.unlink(loc.parts[-1], dir_fd=parent)
            except OSError:
                pass  # already gone or replaced: not ours to remove

    @staticmethod
    def _in_git_dir(loc: Located) -> bool:
        """Does the file lie in a git directory, or would this write make a folder on its way one
        (`protect.git_dir_after`: a repository planted one harmless-looking file at a time)?"""
        path = loc.root
        last = len(loc.parts) - 1
        for i, part in enumerate(loc.parts):
            if git_dir_after(path, part, i == last):
                return True
            path = os.path.join(path, part)
        return git_dir_on_disk(path)

    @staticmethod
    def _in_python_env(loc: Located) -> bool:
        """Does the file lie in a Python environment known by its contents (`protect.python_env_on_disk`)?"""
        path = loc.root
        for part in ("", *loc.parts[:-1]):
            path = os.path.join(path, part) if part else path
            if python_env_on_disk(path):
                return True
        return False

    def _is_yarn_program(self, loc: Located) -> bool:
        """Is the file a program the Yarn config of a folder above it names (``yarnPath``, a plugin's
        ``path``, Yarn 1's ``yarn-path``)? Yarn runs it on every command there, wherever it lies:
        ``.yarn/releases/`` is only the usual place. Each config is opened inside the root without
        following links, like the `_in_hooks_path` configs."""
        target = os.path.join(loc.root, *loc.parts)
        for depth in range(len(loc.parts)):
            top = loc.parts[:depth]
            for rc in YARNRC_NAMES:
                if not os.path.lexists(os.path.join(loc.root, *top, rc)):
                    continue  # most folders: three lstats, nothing opened
                data = self._regular_file_text(Located(loc.root, (*top, rc), ""))
                if data is None:
                    continue
                for program in yarn_programs(data):
                    if os.path.realpath(os.path.join(loc.root, *top, os.path.expanduser(program))) == target:
                        return True
        return False

    def _in_hooks_path(self, loc: Located) -> bool:
        """Does the file lie in the folder a repository above it runs hooks from (``core.hooksPath``
        in its ``.git/config``)? Each config is opened inside the root without following links."""
        target = os.path.join(loc.root, *loc.parts)
        for depth in range(len(loc.parts)):
            top = loc.parts[:depth]
            if not os.path.lexists(os.path.join(loc.root, *top, ".git")):
                continue  # most folders: one lstat, no walk
            data = self._regular_file_text(Located(loc.root, (*top, ".git", "config"), ""))
            if data is None:
                continue  # no repository here (or not one this tool can open)
            for hooks in hooks_paths(data):
                folder = os.path.realpath(os.path.join(loc.root, *top, os.path.expanduser(hooks)))
                if target == folder or target.startswith(folder.rstrip("/") + "/"):
                    return True
        return False

    def _regular_file_text(self, loc: Located) -> bytes | None:
        """The first ``max_search_file_bytes`` of the regular file at ``loc``, opened inside the root
        without following links, or None (missing, not a regular file, refused): what the write
        guards read of the configs that decide them and of the file a write would replace."""
        try:
            with self.jail.open_file(loc, os.O_RDONLY | os.O_NONBLOCK) as fd:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    return None
                return os.pread(fd, min(st.st_size, self.settings.max_search_file_bytes), 0)
        except (OSError, PathMissing, PathRefused, NotRegular):
            return None

    def _too_big(self, loc: Located, size: int) -> str:
        return (f"`{loc.shown}` would be {size} bytes; files written here may be at most "
                f"{self.settings.max_file_bytes} bytes ([plugins.reach-files] max_file_bytes). "
                "Write a smaller file or split it into several.")

    def _replace(self, loc: Located, data: bytes, made: list[Made]) -> None:
        """Write a temporary file beside the target, then rename it over the target (atomic)."""
        name = loc.parts[-1]
        with self.jail.parent_dir(loc, create=True, made=made) as parent:
            try:
                old = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if old is not None and stat.S_ISDIR(old.st_mode):
                raise BusinessError(f"`{loc.shown}` is a folder; choose a file name inside it")
            if old is not None and stat.S_ISREG(old.st_mode):
                _refuse_write_protected(old, loc.shown)
            elif old is not None and not stat.S_ISLNK(old.st_mode):
                raise BusinessError(
                    f"`{loc.shown}` is not a regular file (a device, pipe or socket); refused. Use a regular file."
                )
            tmp = f".{name}.reach-{secrets.token_hex(4)}.tmp"
            if len(tmp.encode("utf-8", "surrogateescape")) > self.jail.name_max:
                tmp = f".reach-{secrets.token_hex(8)}.tmp"  # a name near NAME_MAX: its temporary twin would not fit
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=parent)
            try:
                try:
                    if old is not None and stat.S_ISREG(old.st_mode):
                        _keep_owner_and_mode(fd, old)
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


def _refuse_secret(loc: Located, settings: FilesSettings, tool: str) -> None:
    """Secret stores (``protect.secret_store``) are not read: their content is the secrets.
    Both the path as given and the path its symlinks lead to are looked at."""
    if not settings.allow_secret_files and (secret_store(loc.via, reading=True)
                                            or secret_store(loc.parts, reading=True, above=_above(loc.root))):
        raise InvalidArguments("path", message=_secret_message(loc, tool))


def _secret_in(folders: tuple[str, ...], name: str, above: tuple[str, ...], *, file: bool) -> bool:
    """`protect.secret_store` for ``name`` in ``folders`` (below the root) when the folders were judged
    already: only ``name`` and the folder it lies in (its context) are looked at, or the root's own
    path when it lies in the root itself. A deep tree costs one check per entry, not one per level."""
    return secret_store((*folders[-1:], name), reading=True, file=file, above=() if folders else above)


def _above(root: str) -> tuple[str, ...]:
    """The folders of a root's own path (`protect.secret_store`'s ``above``): a root may lie inside a store."""
    return tuple(p for p in root.split("/") if p)


def _key_named(loc: Located) -> bool:
    """Is the file a ``*.key`` by the name it was asked by or the name its links lead to?"""
    return bool(loc.parts) and key_file(loc.parts[-1]) or bool(loc.via) and key_file(loc.via[-1])


def _secret_message(loc: Located, tool: str) -> str:
    return (f"`{loc.shown}` is a secret store (.env, .envrc, .env.*, NAME.env, .netrc, .pgpass, .git-credentials, "
            "a credential file of a common tool such as pip.conf, .npmrc or .m2/settings.xml, an application file "
            "that holds credentials such as wp-config.php or terraform.tfstate, a folder such as "
            ".aws, .gnupg or .password-store, a shell history, a private key such as id_rsa, a *.key holding "
            "text, a *.pem to write, a key store such as *.p12 or *.kdbx, or any "
            "file holding a -----BEGIN ... PRIVATE KEY----- block, a key without it, or credentials such as a "
            "service-account JSON, in any spelling or through a link) "
            f"or lies inside one; {tool} refuses it so that its secrets do not reach the model, unless the "
            "operator sets [plugins.reach-files] allow_secret_files = true. Templates such as .env.example "
            "can be read.")


def _refuse_low_disk(loc: Located, size: int, min_free: int) -> None:
    """Refuse a write that would leave less than ``min_free`` bytes free where it lands (the
    nearest existing folder of the path: the file system a new folder would be made on)."""
    if min_free <= 0:
        return
    path = os.path.join(loc.root, *loc.parts[:-1])
    while True:
        try:
            st = os.statvfs(path)
            break
        except FileNotFoundError:
            if path == loc.root:
                return
            path = os.path.dirname(path)
        except OSError:
            return
    free = st.f_bavail * st.f_frsize
    if free - size < min_free:
        raise BusinessError(
            f"the disk holding `{loc.shown}` has {describe_size(free)} free; this write would leave less than "
            f"{describe_size(min_free)} ([plugins.reach-files] min_free_bytes), so it was not made. "
            "Tell the user the disk is nearly full."
        )


def _exists(loc: Located) -> bool:
    return os.path.lexists(os.path.join(loc.root, *loc.parts))


def _is_folder(loc: Located) -> bool:
    try:
        return stat.S_ISDIR(os.stat(os.path.join(loc.root, *loc.parts), follow_symlinks=False).st_mode)
    except OSError:
        return False


def _refuse_write_protected(st: os.stat_result, shown: str) -> None:
    """A file without any write permission was made read-only on purpose; reach may run as
    root, which the OS lets write anyway (and `overwrite` renames over it, which only needs
    the folder writable), so the bits are honoured here."""
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise BusinessError(
            f"`{shown}` is write-protected (mode {stat.S_IMODE(st.st_mode):04o}); "
            "reach-files does not change read-only files. Write a new file instead, or ask the operator."
        )


def _keep_owner_and_mode(fd: int, old: os.stat_result) -> None:
    """The replacement keeps the replaced file's permissions (a 0600 file must not become
    0644, readable by everyone) and, when the process may, its owner and group; the
    set-ID bits are dropped (new content in a set-user-ID file would run as its owner)."""
    try:
        os.fchown(fd, old.st_uid, old.st_gid)
    except OSError:
        pass  # not root: the new file is ours, as any file we create
    os.fchmod(fd, stat.S_IMODE(old.st_mode) & 0o777)  # never set-user-ID, set-group-ID or sticky


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
