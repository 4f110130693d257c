"""Symbolic links leading out of the root, and device files, made during a call are
removed after it.

The path check refuses every argument that names a place outside the root, and
every path through a link that leads out. What it cannot read are the names a
program takes from its input: GNU tar restores an archive's symlink
`esc -> /elsewhere` as it is, git checks out a symlink blob, `cp -r`/`mv` carry
links along. Such a link then lets a *later* call write outside: `tar -xf b.tar`
with a member `esc/x` writes `/elsewhere/x` (two calls, no argument to refuse).

So after each confined call the root is walked once (directories only: a walk does
not follow links) and every symbolic link whose inode changed since the call began
and whose target resolves outside the root is unlinked, and named in the result.
Links that were there before the call (a deployment's own) are left alone, as are
links that stay inside the root.

Device files too: run as root, GNU tar restores an archive's character and block
devices (`disk` b 8:0, `mem` c 1:1), and reading one (`cat disk`, `grep -a`) reads
the raw disk or memory past every file permission and the root. No agent's
workspace needs one, so one made during the call is unlinked the same way. Cost: one `scandir` per directory of the root
(~80 ms for 3,000 folders of 15,000 files on a loaded 2-vCPU machine), paid only by
confined calls.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def sweep_way_outs(root: Path, since: float) -> list[str]:
    """Unlink the links under `root` changed at or after `since` (epoch seconds, ctime)
    that resolve outside `root`, and the device files; return them as `path -> target`
    and `path (character device 1:1)` (paths from the root).

    `root` must be resolved. Errors reading a folder skip that folder (it may be gone);
    a link that cannot be removed is still reported, marked so.
    """
    top = str(root)
    found: list[str] = []
    folders = [top]
    while folders:
        folder = folders.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    if entry.is_symlink():
                        if entry.stat(follow_symlinks=False).st_ctime < since:
                            continue
                        if _inside(os.path.realpath(entry.path), top):
                            continue
                        target = os.readlink(entry.path)
                        name = f"{os.path.relpath(entry.path, top)} -> {target}"
                        try:
                            os.unlink(entry.path)
                        except OSError as exc:
                            name += f" (not removed: {exc.strerror})"
                        found.append(name)
                    elif entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif not entry.is_file(follow_symlinks=False):  # a device, a FIFO, a socket
                        info = entry.stat(follow_symlinks=False)
                        if info.st_ctime < since or not (stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)):
                            continue
                        kind = "character" if stat.S_ISCHR(info.st_mode) else "block"
                        name = (f"{os.path.relpath(entry.path, top)} ({kind} device "
                                f"{os.major(info.st_rdev)}:{os.minor(info.st_rdev)})")
                        try:
                            os.unlink(entry.path)
                        except OSError as exc:
                            name += f" (not removed: {exc.strerror})"
                        found.append(name)
                except OSError:
                    continue
    return sorted(found)
