"""What a confined call made that reaches past the root is undone after it: symbolic
links leading out and device files are removed, set-user/group-ID bits taken off.

The path check refuses every argument that names a place outside the root, and
every path through a link that leads out. What it cannot read are the names a
program takes from its input: GNU tar restores an archive's symlink
`esc -> /elsewhere` as it is, git checks out a symlink blob, `cp -r`/`mv` carry
links along. Such a link then lets a *later* call write outside: `tar -xf b.tar`
with a member `esc/x` writes `/elsewhere/x` (two calls, no argument to refuse).

So after each confined call the root is walked once (a walk that does not follow
links) and every symbolic link whose inode changed since the call began and whose
target resolves outside the root is unlinked, and named in the result. Links that
were there before the call (a deployment's own) are left alone, as are links that
stay inside the root. A link whose inode did not change can still come to lead out
(its folder moved up, a link on its way repointed): every link's target is
remembered from sweep to sweep (and from start-up), and one that now leads out to
another place than before is unlinked too.

Device files too: run as root, GNU tar restores an archive's character and block
devices (`disk` b 8:0, `mem` c 1:1), and reading one (`cat disk`, `grep -a`) reads
the raw disk or memory past every file permission and the root. No agent's
workspace needs one, so one made during the call is unlinked the same way. And the
set-user-ID and set-group-ID bits of files changed during the call are taken off:
run as root, tar restores an archive's setuid-root program as it is, which any local
user could then run as root (a `chmod u+s` the agent runs does the same for reach's
user). Folders keep theirs (a shared group folder).

Cost: one `scandir` per folder and one `lstat` per file of the root (94 ms for 3,030
folders of 15,000 files on a quiet 2-vCPU machine), paid only by confined calls, off
the event loop.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from .paths import resolve


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _undo(found: list[str], name: str, undo: Callable[[], object]) -> None:
    """Run `undo` and record `name`; a failure is recorded too, marked so."""
    try:
        undo()
    except (OSError, NotImplementedError) as exc:  # NotImplementedError: a platform without lchmod
        name += f" (not removed: {getattr(exc, 'strerror', None) or exc})"
    found.append(name)


#: Where each symbolic link of the root led when a sweep last saw it:
#: (st_dev, st_ino) -> the resolved targets (a hard-linked symlink has one per name).
Seen = dict[tuple[int, int], set[str]]


def _files(top: str, since: float, opened: list[str]) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under `top` but folders, with its `lstat`; links are not followed.

    A folder that reach's user cannot list or search (a call's `chmod 000 d`, or tar
    restoring an archive's `d---------` after extracting a link into it) hid its links
    from the walk, and a later call opened it and wrote through them. Such a folder gets
    its owner's bits back first (u+rwx, named in `opened`); run as root nothing is
    closed. One that stays closed (another owner's) is skipped, and named when it
    changed at or after `since` (something may have been put in it).
    """
    folders = [top]
    while folders:
        folder = folders.pop()
        _open_to_owner(folder, top, stat.S_IRUSR | stat.S_IXUSR, since, opened, stat.S_IRWXU)
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                        continue
                    yield entry.path, entry.stat(follow_symlinks=False)
                except OSError:
                    continue


_ACCESS = {stat.S_IRUSR: os.R_OK, stat.S_IWUSR: os.W_OK, stat.S_IXUSR: os.X_OK}


def _open_to_owner(folder: str, top: str, need: int, since: float, opened: list[str], bits: int = 0) -> None:
    """Give `folder` its owner's `bits` (default `need`) if reach lacks `need` there (u+rx to walk
    it, then u+rwx: what is in it may have to go; u+wx to unlink in it)."""
    if os.access(folder, sum(v for k, v in _ACCESS.items() if need & k), follow_symlinks=False):
        return
    bits = bits or need
    name = os.path.relpath(folder, top)
    letters = "".join(c for k, c in zip(_ACCESS, "rwx", strict=True) if bits & k)
    try:  # by an O_PATH handle: a folder swapped for a link meanwhile is refused, not followed
        handle = os.open(folder, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY)
    except OSError:  # gone, or no longer a folder
        return
    try:
        info = os.fstat(handle)
        try:
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(info.st_mode) | bits)
        except OSError as exc:
            if info.st_ctime >= since:
                opened.append(f"{name}/ (folder closed to reach, not checked: {exc.strerror or exc})")
            return
        opened.append(f"{name}/ (folder opened to its owner, u+{letters}: it hid what is in it)")
    finally:
        os.close(handle)


def _unlink(path: str, top: str, since: float, found: list[str]) -> None:
    """Unlink `path`; in a folder reach may not write (`chmod a-w d`), after giving it u+wx."""
    try:
        os.unlink(path)
    except PermissionError:
        _open_to_owner(os.path.dirname(path), top, stat.S_IWUSR | stat.S_IXUSR, since, found)
        os.unlink(path)


def _leads_to(path: str) -> str:
    """Where the link at `path` leads; a loop leads nowhere (the link itself: inside)."""
    try:
        return resolve(path)
    except OSError:
        return path


def links_seen(root: Path) -> Seen:
    """Where every link under `root` (resolved) leads now: the start of :func:`sweep_way_outs`'s memory."""
    seen: Seen = {}
    for path, info in _files(str(root), float("inf"), []):
        if stat.S_ISLNK(info.st_mode):
            seen.setdefault((info.st_dev, info.st_ino), set()).add(_leads_to(path))
    return seen


def links_leading_out(root: Path) -> list[str]:
    """`name -> target` of every symbolic link under `root` (resolved) that leads out of it now:
    a deployment's own, which the sweep keeps and programs following links would go through."""
    top = str(root)
    return sorted(f"{os.path.relpath(path, top)} -> {os.readlink(path)}"
                  for path, info in _files(top, float("inf"), [])
                  if stat.S_ISLNK(info.st_mode) and not _inside(_leads_to(path), top))


def sweep_way_outs(root: Path, since: float, seen: Seen | None = None) -> list[str]:
    """Unlink the links under `root` that resolve outside `root` and were changed at or after
    `since` (epoch seconds, ctime) or, with `seen`, lead elsewhere than when last seen, and
    the device files changed since; take the set-user/group-ID bits off the files changed
    since; return them as `path -> target`, `path (character device 1:1)`,
    `path (set-user-ID bit)` (paths from the root).

    A link's own ctime does not tell when it started to lead out: `a/b/x -> ../..` (the
    root) leads above it once `mv a/b b2` moves its folder up, and `x -> y/..` once `y`
    is pointed elsewhere; neither touches `x`. So with `seen` (the memory of the previous
    sweep, from :func:`links_seen` at start-up, updated in place) every link is resolved,
    and one leading out stays only when it led to that same place before: a link a
    deployment made outside reach's calls (seen for the first time) is kept.

    `root` must be resolved. Errors reading a folder skip that folder (it may be gone);
    what cannot be undone is still reported, marked so.
    """
    top = str(root)
    found: list[str] = []
    now: Seen = {}
    for path, info in _files(top, since, found):
        try:
            mode = info.st_mode
            name = os.path.relpath(path, top)
            if stat.S_ISLNK(mode):
                if info.st_ctime < since and seen is None:
                    continue
                key, real = (info.st_dev, info.st_ino), _leads_to(path)
                moved = seen is not None and key in seen and real not in seen[key]
                if not _inside(real, top) and (info.st_ctime >= since or moved):
                    _undo(found, f"{name} -> {os.readlink(path)}", partial(_unlink, path, top, since, found))
                else:
                    now.setdefault(key, set()).add(real)
                continue
            if info.st_ctime < since:
                continue
            if stat.S_ISREG(mode):
                bits = mode & (stat.S_ISUID | stat.S_ISGID)
                if bits:
                    which = " and ".join(n for b, n in ((stat.S_ISUID, "set-user-ID"),
                                                        (stat.S_ISGID, "set-group-ID")) if bits & b)
                    _undo(found, f"{name} ({which} bit)",
                          partial(os.chmod, path, stat.S_IMODE(mode) & ~bits, follow_symlinks=False))
            elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):  # FIFOs and sockets stay
                kind = "character" if stat.S_ISCHR(mode) else "block"
                device = f"{os.major(info.st_rdev)}:{os.minor(info.st_rdev)}"
                _undo(found, f"{name} ({kind} device {device})", partial(_unlink, path, top, since, found))
        except OSError:
            continue
    if seen is not None:
        seen.clear()
        seen.update(now)
    return sorted(found)
