"""A deployment's own link leading out, followed by programs that take names from their input.

The sweep keeps the links a deployment made (`data -> /srv/data`), and the path check refuses
every argument through them. But programs follow links they meet in their *input*: `tar -xf
a.tar` with a member `data/x` wrote `/srv/data/x`, a hard-link member `h` to `data/secret` left a
name in the root for the file outside (writable through it later), `unzip` did the same, and
`cp -rL`, `cp -alL`, `grep -R`, `find -L`, `du -L`, `tar -ch` and `zip -r` read or linked what a
link in a folder led to. While paths are confined and the root holds a link leading out, the
calls that follow links (extraction, dereferencing options) are refused; listing, `grep -r`,
`zip -ry` and a root without such links run as before.
"""

from __future__ import annotations

import asyncio
import os
import zipfile
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import SECRET, snapshot, tar_archive

from reach_core import InvalidArguments

COMMANDS = ("tar", "unzip", "cp", "grep", "find", "du", "zip", "diff", "ls")


@pytest.fixture
def outside(outside: Path, root: Path) -> Path:
    """conftest's `outside/secret.txt` beside the root; the deployment's links `data` and `sub/more` lead there."""
    where = outside
    os.symlink("../outside", root / "data")
    os.symlink("../../outside", root / "sub" / "more")
    tar_archive(root / "a.tar", [("data/x.txt", None, b"pwned\n")])
    tar_archive(root / "h.tar", [("sub/h0.txt", None, b"pwned\n")], {"h": "data/secret.txt"})
    tar_archive(root / "d.tar", [("data/secret.txt", None, b"guess\n")])
    (root / "empty").mkdir()
    with zipfile.ZipFile(root / "c.zip", "w") as archive:
        archive.writestr("data/y.txt", "pwned\n")
    return where


ATTACKS = [
    ("tar", ["-xf", "a.tar"]), ("tar", ["xf", "a.tar"]), ("tar", ["-xvf", "a.tar"]),
    ("tar", ["--extract", "--file=a.tar"]), ("tar", ["--get", "-f", "a.tar"]), ("tar", ["--ext", "-fa.tar"]),
    ("tar", ["-x", "-f", "a.tar", "-C", "."]), ("tar", ["-f", "a.tar", "-x"]), ("tar", ["xf", "h.tar"]),
    ("tar", ["-xkf", "h.tar"]), ("tar", ["-df", "d.tar"]), ("tar", ["--diff", "--file", "d.tar"]),
    ("tar", ["--compare", "-f", "d.tar"]), ("tar", ["-chf", "s.tar", "sub"]), ("tar", ["chf", "s.tar", "sub"]),
    ("tar", ["-c", "--dereference", "-f", "s.tar", "sub"]), ("tar", ["--create", "--deref", "-fs.tar", "sub"]),
    ("unzip", ["c.zip"]), ("unzip", ["-o", "c.zip"]), ("unzip", ["-qo", "c.zip"]), ("unzip", ["c.zip", "-d", "."]),
    ("unzip", ["-n", "c.zip"]),
    ("cp", ["-rL", "sub", "copy"]), ("cp", ["-aL", "sub", "copy"]), ("cp", ["-alL", "sub", "copy"]),
    ("cp", ["-r", "--dereference", "sub", "copy"]), ("cp", ["-R", "-L", "sub", "copy"]),
    ("cp", ["--recursive", "--deref", "sub", "copy"]),
    ("grep", ["-R", SECRET[:10], "."]), ("grep", ["-Rl", "SECRET", "sub"]), ("grep", ["-nR", "SECRET"]),
    ("grep", ["--dereference-recursive", "SECRET", "sub"]), ("grep", ["--dereference-r", "SECRET", "sub"]),
    ("find", ["-L", ".", "-name", "secret.txt"]), ("find", [".", "-follow", "-name", "secret.txt"]),
    ("find", ["-L", "sub", "-type", "f"]),
    ("du", ["-aL", "sub"]), ("du", ["-a", "--dereference", "sub"]),
    ("zip", ["-r", "s.zip", "sub"]), ("zip", ["-qr", "s.zip", "sub"]), ("zip", ["--recurse-paths", "s.zip", "sub"]),
    ("diff", ["-rN", "sub", "empty"]), ("diff", ["-Nr", "sub", "empty"]), ("diff", ["-ruN", "sub", "empty"]),
    ("diff", ["--recursive", "-N", "sub", "empty"]), ("diff", ["-r", "--new-file", "sub", "empty"]),
    ("ls", ["-RL", "sub"]), ("ls", ["-LR", "sub"]), ("ls", ["-R", "--dereference", "sub"]), ("ls", ["-lRL", "."]),
]


def _ids() -> list[str]:
    return [f"{program}:{' '.join(args)}" for program, args in ATTACKS]


def _what_outside(where: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_nlink, p.read_bytes()) for p in sorted(where.iterdir())}


def _reached(root: Path, outside: Path, before: dict[str, tuple[int, bytes]], content: object) -> list[str]:
    """How the call reached outside: a file written or linked there, the secret in the answer or the root."""
    found = []
    if _what_outside(outside) != before:
        found.append("outside changed")
    if SECRET in str(content) or "secret.txt" in str(content):
        found.append("answer")
    for path in root.rglob("*"):
        if path.is_file() and path.suffix not in (".tar", ".zip") and path.resolve().is_relative_to(root) \
                and SECRET.encode() in path.read_bytes():
            found.append(str(path))
    for archive in ("s.tar", "s.zip"):
        if (root / archive).exists() and SECRET.encode() in (root / archive).read_bytes():
            found.append(archive)
    return found


@pytest.mark.parametrize(("program", "args"), ATTACKS, ids=_ids())
async def test_programs_do_not_follow_a_deployment_link_out_of_the_root(
    root: Path, tmp_path: Path, outside: Path, program: str, args: list[str]
) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={name: {} for name in COMMANDS}))
    before, around = _what_outside(outside), snapshot(tmp_path, root)
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": program, "args": args})
    assert "links leading out" in str(refused.value) and "data -> ../outside" in str(refused.value)
    assert _reached(root, outside, before, None) == []
    assert snapshot(tmp_path, root) == around


@pytest.mark.parametrize(("program", "args"), ATTACKS, ids=_ids())
async def test_unconfined_the_same_calls_reach_outside(
    root: Path, outside: Path, program: str, args: list[str]
) -> None:
    """Control: without confinement each call writes, links or reads through the link."""
    tool = RunCommand(ShellSettings(root=root, confine_paths=False, commands={name: {} for name in COMMANDS}))
    before = _what_outside(outside)
    content = await tool.execute({"command": program, "args": args})
    assert _reached(root, outside, before, content), content


async def test_a_link_the_deployment_adds_after_start_up_counts_too(root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    tool = RunCommand(ShellSettings(root=root, commands={"tar": {}}))
    tar_archive(root / "a.tar", [("data/x.txt", None, b"pwned\n")])
    os.symlink("../outside", root / "data")
    with pytest.raises(InvalidArguments):
        await tool.execute({"command": "tar", "args": ["-xf", "a.tar"]})
    assert not (tmp_path / "outside" / "x.txt").exists()


HONEST = [
    ("tar", ["-tf", "a.tar"], "data/x.txt\n", 0),
    ("tar", ["-cf", "s.tar", "sub"], "", 0),
    ("unzip", ["-l", "c.zip"], "data/y.txt", 0),
    ("unzip", ["-p", "c.zip"], "pwned\n", 0),
    ("grep", ["-r", "alpha", "."], "./a.txt:alpha\n", 0),
    ("cp", ["-r", "sub", "copy"], "", 0),  # copies the link itself, which the sweep then removes
    ("find", [".", "-name", "a.txt"], "./a.txt\n", 0),
    ("du", ["-s", "--apparent-size", "-b", "a.txt"], "6\ta.txt\n", 0),
    ("zip", ["-qry", "s.zip", "sub"], "", 0),
    ("diff", ["-r", "--no-dereference", "sub", "empty"], "Only in sub: more", 1),
    ("ls", ["-R", "sub"], "more", 0),
]


async def test_calls_that_do_not_follow_links_still_run_beside_them(root: Path, outside: Path) -> None:
    """Listing, `grep -r`, `cp -r`, `zip -ry`, `diff --no-dereference` run, and the links stay."""
    await asyncio.sleep(1.1)  # a call's sweep window starts a second early (ctime granularity)
    tool = RunCommand(ShellSettings(root=root, commands={name: {} for name in COMMANDS}))
    for program, args, expected, code in HONEST:
        content = await tool.execute({"command": program, "args": args})
        made = ["copy/more -> ../../outside"] if program == "cp" else None
        assert (content["exit_code"], content.get("removed")) == (code, made), (program, args, content)
        assert expected in content["stdout"] and SECRET not in str(content), (program, args, content)
    assert (root / "data").is_symlink() and (root / "sub" / "more").is_symlink()


async def test_without_a_link_leading_out_extraction_and_dereferencing_run(root: Path) -> None:
    (root / "inner").mkdir()
    os.symlink("inner", root / "data")  # a link that stays inside
    tar_archive(root / "a.tar", [("data/x.txt", None, b"pwned\n")])
    tool = RunCommand(ShellSettings(root=root, commands={name: {} for name in COMMANDS}))
    assert (await tool.execute({"command": "tar", "args": ["-xf", "a.tar"]}))["exit_code"] == 0
    assert (root / "inner" / "x.txt").read_text() == "pwned\n"
    found = await tool.execute({"command": "grep", "args": ["-R", "pwned", "."]})
    assert "./data/x.txt:pwned" in found["stdout"]
    assert (await tool.execute({"command": "cp", "args": ["-rL", "data", "copy"]}))["exit_code"] == 0
    assert (root / "copy" / "x.txt").is_file() and not (root / "copy").is_symlink()
