"""Red-team family: git reading files and repositories outside the root through its own config.

`.git/config` and `.git/objects/info/alternates` are as writable as any file in the root, and
git reads the paths they name: `format.signatureFile` is appended to every patch
(`format-patch --stdout` printed it), `blame.ignoreRevsFile`'s first line came back in the error
(`fatal: invalid object name: <line>`), a remote whose `url` (or an `url.<base>.insteadOf`
rewrite) is a folder outside made `git fetch` copy another repository of this machine into the
root and `ls-remote` list its refs, and an alternates line made that repository's objects
readable in place (`cat-file -p <blob>`), and an `include.path` (or `includeIf`) to a config
file outside printed it (`git config --list`: another user's tokens). None of these paths is in
the arguments. Every call below leaked before the fix (the controls run each without reach); now git is not run
(`denied`, naming the key), while the same keys pointing inside the root still work.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import GIT, append_config, make_repo, setup_git

from reach_core import Denied

_LEAK = "OTHER-REPO-SECRET-41c2"


@pytest.fixture
def other(outside: Path) -> tuple[Path, str]:
    """A repository beside the root holding the secret; (its path, the secret blob's id)."""
    repo = outside / "other"
    repo.mkdir()
    (outside / "x.cfg").write_text("[http]\n\textraheader = Authorization: Bearer OUT-TOKEN\n")
    setup_git("init", "-q", "-b", "main", cwd=repo)
    (repo / "s.txt").write_text(_LEAK + "\n")
    setup_git("add", "s.txt", cwd=repo)
    setup_git("commit", "-q", "-m", "s", cwd=repo)
    return repo, setup_git("rev-parse", "HEAD:s.txt", cwd=repo).strip()


def _cases(other: Path, blob: str) -> list[tuple[str, list[str], str]]:
    """(what the agent writes: config text, or `alternates:<line>`; the call; what leaks)."""
    secret = other / "s.txt"
    rel_secret = "../outside/other/s.txt"
    remote = "[remote \"o\"]\n\turl = {}\n\tfetch = +refs/heads/*:refs/remotes/o/*"
    return [
        (f"[format]\n\tsignatureFile = {rel_secret}", ["format-patch", "-1", "--stdout"], _LEAK),
        (f"[format]\n\tsignatureFile = {secret}", ["format-patch", "-1", "--stdout"], _LEAK),
        (f"[FORMAT]\n\tSignatureFILE = {secret}", ["format-patch", "-1", "--stdout"], _LEAK),
        (f"[blame]\n\tignoreRevsFile = {rel_secret}", ["blame", "a.txt"], _LEAK),
        (f"[blame]\n\tignoreRevsFile = {secret}", ["blame", "a.txt"], _LEAK),
        (remote.format("../outside/other"), ["ls-remote", "o"], "refs/heads/main"),
        (remote.format(str(other)), ["ls-remote", "o"], "refs/heads/main"),
        (remote.format(f"file://{other}"), ["ls-remote", "o"], "refs/heads/main"),
        (remote.format(f"{other}/.git"), ["ls-remote", "o"], "refs/heads/main"),
        (remote.format("../outside/other"), ["fetch", "o"], "FETCHED"),
        (remote.format(str(other)), ["fetch", "o"], "FETCHED"),
        (f"[url \"{other.parent}/\"]\n\tinsteadOf = x:", ["ls-remote", "x:other"], "refs/heads/main"),
        (f"[url \"{other.parent}/\"]\n\tinsteadOf = x:", ["fetch", "x:other", "main"], "FETCHED"),
        (f"alternates:{other}/.git/objects", ["cat-file", "-p", blob], _LEAK),
        ("alternates:../../../outside/other/.git/objects", ["cat-file", "-p", blob], _LEAK),
        (f"alternates:{other}/.git/objects", ["cat-file", "--batch-all-objects", "--batch-check"], blob),
        ("[include]\n\tpath = ../../outside/x.cfg", ["config", "--list"], "OUT-TOKEN"),
        (f"[include]\n\tpath = {other.parent}/x.cfg", ["config", "--get", "http.extraheader"], "OUT-TOKEN"),
        (f"[includeIf \"onbranch:main\"]\n\tpath = {other.parent}/x.cfg", ["config", "--list"], "OUT-TOKEN"),
        ("[includeIf \"gitdir:/**\"]\n\tpath = ../../outside/x.cfg", ["config", "--list"], "OUT-TOKEN"),
    ]


_COUNT = 20


def _arm(root: Path, written: str) -> None:
    if written.startswith("alternates:"):
        (root / ".git" / "objects" / "info" / "alternates").write_text(written[len("alternates:"):] + "\n")
    else:
        append_config(root, written)


def _leaked(root: Path, out: str, blob: str, wanted: str) -> bool:
    if wanted == "FETCHED":  # the other repository's objects were copied into the root
        done = subprocess.run([GIT, "cat-file", "-e", blob], cwd=root, capture_output=True, check=False,
                              env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)})
        alternates = root / ".git" / "objects" / "info" / "alternates"
        return done.returncode == 0 and not alternates.exists()
    return wanted in out


@pytest.mark.parametrize("index", range(_COUNT))
def test_control_each_write_leaks_without_reach(root: Path, other: tuple[Path, str], index: int) -> None:
    make_repo(root)
    written, args, wanted = _cases(*other)[index]
    _arm(root, written)
    done = subprocess.run([GIT, *args], cwd=root, capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root / "sub"),
                               "GIT_CONFIG_GLOBAL": "/dev/null"})
    assert _leaked(root, done.stdout + done.stderr, other[1], wanted), (written, args, done.stderr)


@pytest.mark.parametrize("index", range(_COUNT))
async def test_git_reads_nothing_outside_through_its_config(root: Path, other: tuple[Path, str], index: int) -> None:
    make_repo(root)
    written, args, wanted = _cases(*other)[index]
    _arm(root, written)
    tool = RunCommand(ShellSettings(root=root, commands={"git": {}}, timeout=20))
    out = ""
    with pytest.raises(Denied) as denied:
        result = await tool.execute({"command": "git", "args": args})
        out = result["stdout"] + result["stderr"]
    assert not _leaked(root, out, other[1], wanted)
    assert "outside the working root" in str(denied.value)


@pytest.mark.parametrize(
    ("written", "args"),
    [
        ("[format]\n\tsignatureFile = sig.txt", ["format-patch", "-1", "--stdout"]),
        ("[blame]\n\tignoreRevsFile = revs.txt", ["blame", "a.txt"]),
        ("[remote \"o\"]\n\turl = sub/mirror\n\tfetch = +refs/heads/*:refs/remotes/o/*", ["fetch", "o"]),
        ("[remote \"gh\"]\n\turl = https://example.invalid/x.git", ["remote", "-v"]),
        ("[remote \"gh\"]\n\turl = git@example.invalid:x/y.git", ["remote", "-v"]),
        ("alternates:sub/mirror/.git/objects", ["log", "--oneline"]),
    ],
)
async def test_the_same_keys_inside_the_root_still_work(root: Path, written: str, args: list[str]) -> None:
    make_repo(root)
    (root / "sig.txt").write_text("-- \nsigned\n")
    (root / "revs.txt").write_text("")
    setup_git("clone", "-q", str(root), str(root / "sub" / "mirror"), cwd=root)
    if written.startswith("alternates:"):
        (root / ".git" / "objects" / "info" / "alternates").write_text(
            str(root / written[len("alternates:"):]) + "\n")
    else:
        append_config(root, written)
    tool = RunCommand(ShellSettings(root=root, commands={"git": {}}, timeout=20))
    result = await tool.execute({"command": "git", "args": args})
    assert result["exit_code"] == 0, result["stderr"]
