"""The installed ``reach`` entry points: read by ``importlib_metadata``, remembered between runs.

Why remember them: ``reach plugins`` has a start-up target (≤ 150 ms), and importing
``importlib_metadata`` and parsing every installed distribution's ``entry_points.txt``
costs about 45 ms of it on every run, for an answer that only changes when something
is installed, removed or edited. :func:`entry_points` with ``cache=True`` stores the
answer beside a fingerprint of everything ``importlib_metadata`` reads to give it,
and answers from the store while the fingerprint is unchanged. ``importlib_metadata``
stays the only reader: the store holds its answer, never a second parser's.

The fingerprint (cheap: one ``listdir`` per ``sys.path`` entry, a few ``stat`` calls
per distribution, no file read):

* the interpreter (``sys.executable``, ``sys.version``) and ``sys.path`` in order;
* per directory on ``sys.path``: the names of its metadata directories (``*.dist-info``,
  ``*.egg-info``, an egg's ``EGG-INFO``) and the stat (mtime in ns, size, inode) of
  what is read in each: ``entry_points.txt`` and ``METADATA`` (``PKG-INFO`` and the
  directory itself for the egg formats, whose ``*.egg-info`` may also be a file);
* a file on ``sys.path`` (a zip) by its stat.

So ``pip install`` / ``uninstall`` (and uv's) show at once: they add or remove a
metadata directory, and a reinstall or an in-place edit changes a stat. Nothing is
stored, and ``importlib_metadata`` reads every time, when a finder other than the
standard path finder provides distributions (the fingerprint would not see them),
or when something read changed less than :data:`RACY_NS` ago (a second change in the
same clock tick, same size, would not show: git's "racy" case). A store that cannot
be read or written is ignored: the answer is then read as without one.

The store is one JSON file per interpreter and ``sys.path`` in ``$XDG_CACHE_HOME/reach``
(default ``~/.cache/reach``), about 20 kB with a hundred distributions installed.
Only ``plugins.inventory`` (``reach plugins``, the CLI's command discovery) uses it:
``Reach`` reads afresh, and a host embedding reach gets no file in its home.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from typing import Any

__all__ = ["RACY_NS", "EntryPointRef", "cache_dir", "cache_file", "entry_points", "fingerprint"]

GROUP = "reach"
#: bump when the stored layout changes: an older store is then a miss
FORMAT = 1
#: a stat younger than this (3 s: FAT-like filesystems keep 2 s mtimes) is not trusted
RACY_NS = 3_000_000_000
_META_SUFFIXES = (".dist-info", ".egg-info")


@functools.cache
def _pattern() -> re.Pattern[str]:
    """importlib_metadata's ``EntryPoint.pattern``: ``module``, ``module:attr.attr``, ``[extras]``."""
    return re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class EntryPointRef:
    """One ``reach`` entry point with its distribution's name and version.

    ``load()`` does what ``importlib_metadata.EntryPoint.load`` does (import the module,
    follow the attribute path), so an answer from the store loads like a fresh one.
    """

    __slots__ = ("distribution", "name", "value", "version")
    group = GROUP

    def __init__(self, name: str, value: str, distribution: str | None, version: str | None) -> None:
        self.name = name
        self.value = value
        self.distribution = distribution
        self.version = version

    def __repr__(self) -> str:
        return f"EntryPointRef(name={self.name!r}, value={self.value!r}, distribution={self.distribution!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EntryPointRef) and self._row() == other._row()

    def __hash__(self) -> int:
        return hash(self._row())

    def _row(self) -> tuple[str, str, str | None, str | None]:
        return self.name, self.value, self.distribution, self.version

    def load(self) -> Any:
        import importlib

        match = _pattern().match(self.value)
        if match is None:
            raise ValueError("Invalid object reference. See https://packaging.python.org"
                             "/en/latest/specifications/entry-points/#data-model", self.value)
        module = importlib.import_module(match.group("module"))
        return functools.reduce(getattr, filter(None, (match.group("attr") or "").split(".")), module)


def _header(text: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from the header of a core-metadata text (stops at the body)."""
    name = version = None
    for line in text.splitlines():
        if not line.strip():
            break  # end of the header
        if name is None and line.startswith("Name:"):
            name = line[5:].strip()
        elif version is None and line.startswith("Version:"):
            version = line[8:].strip()
        if name is not None and version is not None:
            break
    return name, version


def name_version(ep: Any) -> tuple[str | None, str | None]:
    """The distribution name and version of an ``importlib_metadata`` entry point, from its
    metadata's header (``dist.name`` and ``dist.version`` would parse the whole file as an
    e-mail message)."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None, None
    try:
        name, version = _header(dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "")
    except Exception:  # noqa: BLE001 - unusual finders: fall back to the library
        name = version = None
    return (name or dist.name), (version or dist.version)


def read() -> list[EntryPointRef]:
    """The installed ``reach`` entry points as ``importlib_metadata`` reads them, by name; of two
    distributions of one name on ``sys.path``, the first (the one ``import`` would use) wins."""
    from importlib_metadata import entry_points as read_entry_points

    found = [EntryPointRef(ep.name, ep.value, *name_version(ep)) for ep in read_entry_points(group=GROUP)]
    return sorted(found, key=lambda e: e.name)


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def _standard_finders() -> bool:
    """Whether only the standard path finder (or ``importlib_metadata``'s own, which searches
    ``sys.path`` the same way) provides distributions: what the fingerprint can see."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if getattr(finder, "find_distributions", None) is None or finder is PathFinder:
            continue
        kind = finder if isinstance(finder, type) else type(finder)  # importlib_metadata installs an instance
        if (kind.__module__, kind.__name__) == ("importlib_metadata", "MetadataPathFinder"):
            continue
        return False
    return True


def fingerprint(paths: list[Any] | None = None) -> tuple[list[Any], int] | None:
    """What ``importlib_metadata`` reads to find distributions on ``paths`` (default ``sys.path``),
    as comparable data (see the module docstring), and the newest mtime in it (ns); ``None``
    when it cannot be taken."""
    if not _standard_finders():
        return None
    out: list[Any] = [FORMAT, sys.executable, sys.version]
    stats: list[list[int] | None] = []  # every stat taken, for the newest mtime
    sep = os.sep
    for entry in sys.path if paths is None else paths:
        try:
            given = os.fspath(entry)
        except TypeError:
            return None
        if not isinstance(given, str):
            return None
        root = given or "."
        try:
            children = os.listdir(root)
        except OSError:  # a zip, a file, or nothing: its stat
            stats.append(_stat(root))
            out.append([given, stats[-1]])
            continue
        base_is_egg = os.path.basename(given).lower().endswith(".egg")
        metas = []
        for child in sorted(children):
            low = child.lower()
            if not low.endswith(_META_SUFFIXES) and not (base_is_egg and low == "egg-info"):
                continue
            path = root + sep + child
            if low.endswith(".dist-info"):
                row = [_stat(path + sep + "entry_points.txt"), _stat(path + sep + "METADATA")]
            else:  # the egg formats: *.egg-info may be a file (PKG-INFO's text)
                row = [_stat(path), _stat(path + sep + "entry_points.txt"), _stat(path + sep + "PKG-INFO")]
            stats += row
            metas.append([child, *row])
        out.append([given, metas])
    newest = max((st[0] for st in stats if st is not None), default=0)
    return out, newest


def cache_dir() -> str | None:
    """reach's folder of stores, ``$XDG_CACHE_HOME/reach`` (default ``~/.cache/reach``), or
    ``None`` without a home directory."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "reach")


def cache_file() -> str | None:
    """Where this interpreter's store lives, or ``None`` without a home directory."""
    import zlib

    base = cache_dir()
    if base is None:
        return None
    # one store per interpreter and sys.path: `reach` and `python -m reach_core` (whose sys.path
    # starts with the working directory) do not overwrite each other's
    where = "\0".join([sys.executable, sys.prefix, *(p for p in sys.path if isinstance(p, str))])
    tag = zlib.crc32(where.encode("utf-8", "surrogateescape"))
    return os.path.join(base, f"entry-points-{tag:08x}.json")


def _load(path: str, key: list[Any]) -> list[EntryPointRef] | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if data["key"] != key:
            return None
        return [EntryPointRef(str(n), str(v), d, ver) for n, v, d, ver in data["entry_points"]]
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _store(path: str, key: list[Any], found: list[EntryPointRef]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"key": key, "entry_points": [list(e._row()) for e in found]}, f)
        os.replace(tmp, path)  # readers see the old store or the new one, never half of one
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def entry_points(*, cache: bool = False) -> list[EntryPointRef]:
    """The installed ``reach`` entry points, by name (see :func:`read`); with ``cache``, from the
    store while nothing ``importlib_metadata`` reads has changed."""
    if not cache:
        return read()
    import time

    now = time.time_ns()
    taken = fingerprint()  # taken before reading: a change while reading makes the next run miss
    path = cache_file() if taken is not None else None
    if taken is None or path is None:
        return read()
    key, newest = taken
    found = _load(path, key)
    if found is None:
        found = read()
        if newest <= now - RACY_NS:  # else a change in the same clock tick could go unseen
            _store(path, key, found)
    return found
