"""Helpers of the attack tests: a real git repository, a real tar archive, a marker, a snapshot."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

GIT = shutil.which("git") or "/usr/bin/git"
#: What the `outside` fixture (conftest.py) writes in `outside/secret.txt`, beside the root.
SECRET = "TOP-SECRET-7f3a"
TAR = shutil.which("tar") or "/usr/bin/tar"

_SETUP_ENV = {
    "PATH": "/usr/bin:/bin",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "LANG": "C.UTF-8",
}


def setup_git(*args: str, cwd: Path) -> str:
    """git for building fixtures, before anything malicious is written."""
    env = {**_SETUP_ENV, "HOME": str(cwd)}
    done = subprocess.run([GIT, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def make_repo(where: Path) -> Path:
    """A repository with one commit and one modified tracked file (so diff has work)."""
    where.mkdir(parents=True, exist_ok=True)
    setup_git("init", "-q", "-b", "main", cwd=where)
    (where / "a.txt").write_text("alpha\n")
    (where / "notes.md").write_text("one\n")
    setup_git("add", "a.txt", "notes.md", cwd=where)
    setup_git("commit", "-q", "-m", "first", cwd=where)
    (where / "a.txt").write_text("alpha\nbeta\n")
    return where


def append_config(repo: Path, text: str) -> None:
    """What an agent with write_file does to `.git/config`."""
    with open(repo / ".git" / "config", "a") as handle:
        handle.write("\n" + text + "\n")


def snapshot(top: Path, skip: Path) -> set[str]:
    """Every path under `top` except inside `skip` (the root): proof of no write outside."""
    seen = set()
    for dirpath, dirnames, filenames in os.walk(top):
        here = Path(dirpath)
        if here == skip or here.is_relative_to(skip):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            path = here / name
            if path != skip:
                seen.add(str(path))
    return seen


def make_archive(root: Path, gz: bool = False) -> str:
    """`a.tar` (or `a.tgz`) in the root holding `a.txt`."""
    name = "a.tgz" if gz else "a.tar"
    flags = "-czf" if gz else "-cf"
    subprocess.run([TAR, flags, name, "a.txt"], cwd=root, check=True, env={"PATH": "/usr/bin:/bin"})
    return name


def exists(path: Path) -> bool:
    """`path.exists()` outside the async tests (a blocking call is fine here, and ruff knows it)."""
    return path.exists()


def lexists(path: Path) -> bool:
    """The name is there, even as a dangling link (sync: the async tests call it)."""
    return os.path.lexists(path)


def tar_archive(
    path: Path, members: list[tuple[str, str | None, bytes]], hard_links: dict[str, str] | None = None
) -> None:
    """A GNU tar archive at `path`: (name, symlink target or None, data) members, then
    `hard_links` members (name -> the member it links to)."""
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for name, target, data in members:
            info = tarfile.TarInfo(name)
            if target is not None:
                info.type, info.linkname = tarfile.SYMTYPE, target
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        for name, target in (hard_links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.LNKTYPE, target
            tar.addfile(info)
