"""Confinement of every file operation to the configured roots.

Two steps, because each alone is not enough:

1. **Check** (``Jail.locate``): refuse NUL bytes and ``..`` outright, resolve
   the path with ``realpath`` (following symlinks) and require the result to
   lie inside a root by whole path components, so root ``/data`` does not
   contain ``/data_evil``. A symlink inside a root that points outside
   resolves outside and is refused here.
2. **Open without following** (``Jail.open_dir`` / ``Jail.open_file``): the
   resolved path is walked from an fd of the root, one component at a time,
   with ``O_NOFOLLOW`` (``openat``-style via ``dir_fd``). The resolved path
   contains no symlinks by construction, so if one appears during the walk it
   was swapped in after the check, and the open fails instead of escaping. The
   root's own descriptor is opened the same way from ``/`` (`Jail._root_fd`).

Linux/POSIX only (``O_NOFOLLOW``, ``O_DIRECTORY``, ``dir_fd``). Hard links are
not symlinks and are not detected: do not put hard links to outside files in
a root.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .protect import device_name, through_magic

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PASS = getattr(os, "O_PATH", os.O_RDONLY)  # a folder above a root: passed through, never read
NAME_MAX = 255  # bytes in one file or folder name (Linux, macOS; pathconf may say less)
PATH_MAX = 4096  # bytes in a whole path, terminating NUL included
_DRIVE = re.compile(r"[A-Za-z]:([\\/]|$)")  # C:\, C:/, C:
_MAGIC_TEXT = re.compile(r"/+(proc|dev)(/|$)")


class PathRefused(Exception):
    """The path may not be used; ``str()`` tells the model why and what to send instead."""


class PathMissing(Exception):
    """The path is allowed but nothing is there."""


class NotRegular(Exception):
    """A pipe, socket or device: never opened (opening a device can act: a watchdog arms,
    a tape rewinds); ``str()`` is the path as shown to the model."""


@dataclass(frozen=True)
class Located:
    """A checked path: its root, the components below it, and how to show it to the model."""

    root: str
    parts: tuple[str, ...]
    shown: str
    via: tuple[str, ...] = ()  # the components as given (below the root), before symlinks were followed

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else "."


@dataclass(frozen=True)
class Made:
    """A folder a write made: its components below the root, and which folder it was."""

    parts: tuple[str, ...]
    dev: int
    ino: int


class Jail:
    """The configured roots; the first one is where relative paths start."""

    def __init__(self, roots: list[str | Path], hidden: Sequence[str] = ()) -> None:
        if not roots:
            raise ValueError("reach-files needs at least one root")
        self.roots = [os.path.realpath(os.path.expanduser(str(r))) for r in roots]
        #: per root, reach's own files and folders strictly inside it (``protect.reach_paths``);
        #: a root inside one of them (the default ``<data_dir>/files``) does not hide itself
        self.hidden = {r: tuple(h for h in hidden if h != r and _inside(h, r) and not _inside(r, h))
                       for r in self.roots}
        #: all of them, also those the text puts outside every root: a bind mount, a hard link or a
        #: case-insensitive file system reaches them by other spellings (`is_state`)
        self.state = tuple(dict.fromkeys(hidden))
        self._state_names = {_ci(os.path.basename(h)) for h in self.state}
        self.name_max = min(_pathconf(r, "PC_NAME_MAX", NAME_MAX) for r in self.roots)
        self.path_max = min(_pathconf(r, "PC_PATH_MAX", PATH_MAX) for r in self.roots)
        self._short = min(self.name_max, self.path_max) // 4  # shorter (in characters) is always fine

    def describe(self) -> str:
        return ", ".join(self.roots)

    def show(self, root: str, parts: tuple[str, ...]) -> str:
        """Relative to the first root (the common case); absolute for the other roots."""
        if root == self.roots[0]:
            return "/".join(parts) if parts else "."
        return os.path.join(root, *parts)

    def locate(self, path: str) -> Located:
        """Check ``path`` (step 1 above) and return where it lives."""
        if "\x00" in path:
            raise PathRefused("`path` contains a NUL byte; send a plain file name such as notes/todo.md")
        try:
            path.encode("utf-8")
        except UnicodeEncodeError as exc:  # only a lone surrogate cannot be encoded
            raise PathRefused(
                f"`path` contains a lone surrogate (U+{ord(path[exc.start]):04X} at character {exc.start}), "
                "which is not valid Unicode text and cannot name a file; send the name's characters themselves, "
                "e.g. notes/todo.md"
            ) from None
        raw = path.strip() or "."
        if len(raw) >= self._short:
            self._check_lengths(raw, "`path`")
        if "\\" in raw or _DRIVE.match(raw):
            _refuse_windows_style(raw)
        given = PurePosixPath(raw).parts
        if any(device_name(p) for p in given):
            raise PathRefused(
                "`path` uses a Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9, also with an "
                "extension such as nul.txt) as a file or folder name; such a file cannot exist once the folder "
                "is shared with Windows. Choose another name, e.g. notes/console.txt"
            )
        if ".." in given:
            raise PathRefused(
                f"`path` may not contain `..`; give a path inside {self.describe()} "
                "(relative paths start at the first of them)"
            )
        candidate = raw if os.path.isabs(raw) else os.path.join(self.roots[0], raw)
        lexical = os.path.normpath(candidate)
        if len(lexical) >= self._short:
            self._check_lengths(lexical, "`path` joined to its folder")
        magic = (f"`{path}` goes through /proc or /dev/fd (a process's view of the file system), which is "
                 "outside the allowed folders; use a path relative to the first one, e.g. notes/todo.md")
        if _MAGIC_TEXT.match(lexical):
            raise PathRefused(magic)
        try:
            real = os.path.realpath(candidate)
        except OSError as exc:  # a link the OS will not read (another user's /proc entry)
            raise PathRefused(f"`{path}` cannot be followed ({exc.strerror}); use a plain path such as "
                              "notes/todo.md") from None
        if len(real) >= self._short:
            self._check_lengths(real, "`path` after following its symlinks")
        if real != lexical and through_magic(candidate):
            raise PathRefused(magic)
        for root in self.roots:
            if _inside(real, root):
                rel = os.path.relpath(real, root)
                parts = () if rel == "." else tuple(rel.split(os.sep))
                self._refuse_hidden(root, real, path)
                via = next((tuple(p for p in os.path.relpath(lexical, r).split(os.sep) if p != ".")
                            for r in self.roots if _inside(lexical, r)), given)
                return Located(root, parts, self.show(root, parts), via)
        if any(_inside(lexical, root) for root in self.roots):
            raise PathRefused(
                f"`{path}` goes through a symlink that points outside the allowed folders; "
                "only files inside them can be used"
            )
        raise PathRefused(
            f"`{path}` is outside the allowed folders ({self.describe()}); "
            "use a path relative to the first one, e.g. notes/todo.md"
        )

    def _refuse_hidden(self, root: str, real: str, path: str) -> None:
        if self.is_state(root, real):
            raise PathRefused(
                    f"`{path}` is reach's own state (its data folder, state store, pin file, audit log or "
                    "config file), which no tool reads or changes; use another file"
                )

    def is_hidden(self, root: str, real: str) -> bool:
        """Is ``real`` (a path below ``root``) reach's own state by its text? (The walks' quick test;
        `state_ids` and `is_state_entry` look at what each entry is.)"""
        return any(_inside(real, h) for h in self.hidden[root])

    def state_ids(self) -> frozenset[tuple[int, int]]:
        """The (device, inode) of each of reach's own files and folders that exists now (the
        side files of SQLite come and go, so this is asked once per call, not once for all)."""
        ids = set()
        for h in self.state:
            try:
                st = os.stat(h)
            except (OSError, ValueError):
                continue
            ids.add((st.st_dev, st.st_ino))
        return frozenset(ids)

    def is_state(self, root: str, real: str) -> bool:
        """Is ``real`` (a path below ``root``, resolved) reach's own state, or inside it?

        Path text alone is not enough: a bind mount of the data dir, a hard link to the pin file or a
        case-insensitive file system (``REACH.DB`` is ``reach.db`` on macOS) reaches the same file by
        a spelling ``realpath`` keeps. So the path and each folder between it and the root are
        compared by identity (device and inode) with the state that exists, and a name not made yet
        by its folded form (case, Unicode normalisation) in the folder of a state file: created
        first as ``PINS.JSON``, on such a file system it *is* the pin file reach reads next."""
        if self.is_hidden(root, real):
            return True
        ids = self.state_ids()
        path = real
        while path != root and _inside(path, root):
            try:
                st = os.lstat(path)
            except (OSError, ValueError):
                pass
            else:
                if (st.st_dev, st.st_ino) in ids:
                    return True
            path = os.path.dirname(path)
        return self.state_twin(real)

    def is_state_entry(self, root: str, real: str, st: os.stat_result | None,
                       ids: frozenset[tuple[int, int]]) -> bool:
        """`is_state` for an entry a walk found in a folder already let through (``st`` its
        ``lstat``): only the entry itself is compared."""
        return (self.is_hidden(root, real) or (st is not None and (st.st_dev, st.st_ino) in ids)
                or self.state_twin(real))

    def state_twin(self, real: str) -> bool:
        """Does ``real`` fold (case, Unicode normalisation) to the name of a state file in that
        file's own folder (the folder compared by identity)?"""
        name = _ci(os.path.basename(real))
        if name not in self._state_names:
            return False
        for h in self.state:
            if _ci(os.path.basename(h)) == name:
                try:
                    if os.path.samefile(os.path.dirname(real), os.path.dirname(h)):
                        return True
                except (OSError, ValueError):
                    continue
        return False

    def _check_lengths(self, path: str, what: str) -> None:
        """Names and paths the OS would refuse (``ENAMETOOLONG``), refused here with the limit."""
        if len(path) >= 4 * self.path_max:  # too long in any encoding: skip looking at every name
            raise PathRefused(
                f"{what} is {len(path)} characters long; a path can be at most {self.path_max - 1} bytes "
                "(UTF-8) on this system. Use fewer or shorter folder names."
            )
        for part in path.split("/"):
            if len(part) * 4 <= self.name_max:
                continue
            n = len(part.encode("utf-8", "surrogateescape"))
            if n > self.name_max:
                raise PathRefused(
                    f"the name `{part[:40]}…` in `path` is {n} bytes long; a file or folder name can be at most "
                    f"{self.name_max} bytes (UTF-8) on this system. Use a shorter name."
                )
        size = len(path.encode("utf-8", "surrogateescape"))
        if size >= self.path_max:
            raise PathRefused(
                f"{what} is {size} bytes long; a path can be at most "
                f"{self.path_max - 1} bytes (UTF-8) on this system. Use fewer or shorter folder names."
            )

    # -- opening without following symlinks -----------------------------------

    def _root_fd(self, root: str) -> int:
        """An fd of the root, opened from ``/`` one component at a time with ``O_NOFOLLOW``.

        The roots are real paths (no symlinks in them), so a symlink met here was swapped in
        after the check: the root itself, or a folder above it, by whoever may write there.
        Opened by its path, the root would follow it and every open below would lead outside.
        The folders above are opened with ``O_PATH`` (Linux), which needs only the permission
        to pass through them, as opening the path did."""
        parts = [p for p in root.split("/") if p]
        fd = os.open("/", (_PASS if parts else os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for i, part in enumerate(parts):
                flags = (os.O_RDONLY if i == len(parts) - 1 else _PASS) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                nfd = os.open(part, flags, dir_fd=fd)
                os.close(fd)
                fd = nfd
        except FileNotFoundError:
            os.close(fd)
            raise PathRefused(f"the configured folder {root} does not exist; ask the operator to create it") from None
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise PathRefused(
                    f"the allowed folder {root} (or a folder above it) is no longer a plain folder: a symlink "
                    "was put in its place after the path was checked; refused"
                ) from None
            raise
        return fd

    @contextmanager
    def open_dir(self, loc: Located, *, create: bool = False, parts: tuple[str, ...] | None = None,
                 made: list[Made] | None = None) -> Iterator[int]:
        """An fd of the directory ``parts`` (default: the located path), walked with O_NOFOLLOW.
        With ``create``, missing folders are made, each added to ``made`` (outermost first) so
        that a write that fails afterwards can take them away again (`remove_made`)."""
        parts = loc.parts if parts is None else parts
        fd = self._root_fd(loc.root)
        try:
            for i, part in enumerate(parts):
                try:
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise PathMissing(self.show(loc.root, parts[: i + 1])) from None
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                        mine = True
                    except FileExistsError:
                        mine = False
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                    if mine and made is not None:
                        st = os.fstat(nfd)
                        made.append(Made(parts[: i + 1], st.st_dev, st.st_ino))
                except OSError as exc:
                    raise _swapped_or_not_dir(self.show(loc.root, parts[: i + 1]), exc) from None
                os.close(fd)
                fd = nfd
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def open_file(self, loc: Located, flags: int, mode: int = 0o644, *, create_parents: bool = False,
                  made: list[Made] | None = None) -> Iterator[int]:
        """An fd of the located file, opened relative to its parent's fd with O_NOFOLLOW."""
        if not loc.parts:
            raise PathRefused("`path` names the root folder itself; give a file path such as notes/todo.md")
        with self.open_dir(loc, parts=loc.parts[:-1], create=create_parents, made=made) as parent:
            refuse_special(parent, loc.parts[-1], loc.shown)
            try:
                fd = os.open(loc.parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)
            except FileNotFoundError:
                raise PathMissing(loc.shown) from None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK):
                    raise PathRefused(
                        f"`{loc.shown}` became a symlink while it was being opened; refused"
                    ) from None
                raise
            try:
                refuse_linked(fd, loc.shown)
                yield fd
            finally:
                os.close(fd)

    @contextmanager
    def parent_dir(self, loc: Located, *, create: bool, made: list[Made] | None = None) -> Iterator[int]:
        """The fd of the located path's parent directory (for atomic replace)."""
        if not loc.parts:
            raise PathRefused("`path` names the root folder itself; give a file path such as notes/todo.md")
        with self.open_dir(loc, parts=loc.parts[:-1], create=create, made=made) as fd:
            yield fd

    def remove_made(self, loc: Located, made: list[Made]) -> None:
        """Remove the folders a failed write made (`open_dir`'s ``made``), innermost first, each
        only while it is still that folder and empty: what someone else put there stays."""
        for folder in reversed(made):
            try:
                with self.open_dir(loc, parts=folder.parts[:-1]) as parent:
                    st = os.stat(folder.parts[-1], dir_fd=parent, follow_symlinks=False)
                    if (st.st_dev, st.st_ino) != (folder.dev, folder.ino):
                        return
                    os.rmdir(folder.parts[-1], dir_fd=parent)
            except (OSError, PathMissing, PathRefused):
                return  # not empty, gone or replaced: the folders above it stay too


def is_special(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def refuse_special(dir_fd: int, name: str, shown: str) -> None:
    """Looked at before the open: a device, pipe or socket is refused without being opened.
    (The type is checked again on the descriptor after the open.)"""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return  # missing (create) or unreadable: the open itself answers
    if is_special(st.st_mode):
        raise NotRegular(shown)


def refuse_linked(fd: int, shown: str) -> None:
    """A regular file with more than one name may be a hard link to a file outside the roots.

    A hard link is the file itself, not a pointer to it, so no path check can see where
    its other names are; the open descriptor is checked instead (no race)."""
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise PathRefused(
            f"`{shown}` is a hard link (the file has {st.st_nlink} names), and a hard link can be a "
            "file outside the allowed folders, so reach-files neither reads nor changes it; "
            "ask the operator for a plain copy"
        )


def _refuse_windows_style(raw: str) -> None:
    """Backslashes are name characters on POSIX, so `..\\x` stays inside the root here; but a
    name like that is a way out once the folder is shared with Windows (SMB, zip), and a
    drive or UNC path never means what the model thinks. Refused with the POSIX spelling."""
    if raw.startswith("\\\\") or raw.startswith("\\"):
        what = "a Windows network (UNC) path" if raw.startswith("\\\\") else "a Windows absolute path"
    elif _DRIVE.match(raw):
        what = "a Windows drive path"
    elif ".." in re.split(r"[\\/]", raw):
        what = "a Windows-style path with `..`"
    else:
        return
    raise PathRefused(
        f"`path` is {what}; paths here are POSIX: `/` between folders, relative to the first "
        "allowed folder, without `..` or a drive letter, e.g. notes/todo.md"
    )


def _pathconf(path: str, name: str, default: int) -> int:
    try:
        value = os.pathconf(path, name)
    except (OSError, ValueError):
        return default
    return min(value, default) if value > 0 else default


def _ci(name: str) -> str:
    """A name as a case-insensitive file system compares it (APFS, NTFS, ext4 ``casefold``):
    Unicode-normalised and case-folded."""
    return unicodedata.normalize("NFC", name).casefold()


def _inside(path: str, root: str) -> bool:
    """Containment by whole components: ``/data`` holds ``/data/x`` but not ``/data_evil``."""
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def _swapped_or_not_dir(shown: str, exc: OSError) -> PathRefused:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return PathRefused(
            f"`{shown}` is not a plain folder (a symlink appeared there after the path was checked, "
            "or it is a file); refused"
        )
    return PathRefused(f"`{shown}` cannot be opened: {exc.strerror}")
