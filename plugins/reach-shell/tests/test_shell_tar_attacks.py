"""A real GNU tar allowed only to list (`-t -v -f -z`): no spelling makes it run or write.

The old-style first argument (`cIf x`, `xPf x`) has no dash, abbreviations reach
long options (`--use-compress-prog`), values attach (`-Icmd`). Each attack
proves the marker was not created and nothing appeared outside the root; the
honest listings still work in every spelling tar accepts.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import TAR, exists, make_archive, snapshot

from reach_core import InvalidArguments

LIST_ONLY = {"allow_options": ["-t", "-v", "-f", "-z"]}


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


def tar_tool(root: Path, **rule: object) -> RunCommand:
    return RunCommand(ShellSettings(root=root, commands={"tar": rule}))


@pytest.mark.parametrize(
    "args",
    [
        ["-tvf", "a.tar"],
        ["-t", "-v", "-f", "a.tar"],
        ["tvf", "a.tar"],
        ["tf", "a.tar"],
        ["-tf", "a.tar"],
        ["-tfa.tar"],
        ["--list", "--file=a.tar"],
        ["--list", "--verbose", "--file", "a.tar"],
        ["--list", "--gz", "--file=a.tgz"],
        ["--list", "--verbos", "--file=a.tar"],
        ["tvzf", "a.tgz"],
        ["-tvzf", "a.tgz"],
        ["-tzvf", "a.tgz"],
        ["--gzip", "-tf", "a.tgz"],
        ["-t", "-f", "a.tar", "--", "a.txt"],
    ],
)
async def test_honest_listings_work_in_every_spelling(root: Path, args: list[str]) -> None:
    make_archive(root)
    make_archive(root, gz=True)
    out = await tar_tool(root, **LIST_ONLY).execute({"command": "tar", "args": args})
    assert out["exit_code"] == 0, out["stderr"]
    assert "a.txt" in out["stdout"]


# Spellings with a `{cmd}` run that command if tar accepts them; `{out}` is outside the root.
LIST_ONLY_ATTACKS = [
    ["cIf", "{cmd}", "{out}/x.tar", "a.txt"],
    ["cvIf", "{cmd}", "{out}/x.tar", "a.txt"],
    ["tIf", "{cmd}", "a.tar"],
    ["tvIf", "{cmd}", "a.tar"],
    ["xPf", "{abs_archive}"],
    ["xf", "a.tar", "-C", "{out}"],
    ["xvf", "a.tar"],
    ["cf", "{out}/x.tar", "a.txt"],
    ["rf", "a.tar", "b.txt"],
    ["uf", "a.tar", "a.txt"],
    ["tvfI", "a.tar", "{cmd}"],
    ["-cIf", "{cmd}", "{out}/x.tar", "a.txt"],
    ["-tI{cmd}", "-f", "a.tar"],
    ["-tvI", "{cmd}", "-f", "a.tar"],
    ["-t", "-I", "{cmd}", "-f", "a.tar"],
    ["-tvf", "a.tar", "-I{cmd}"],
    ["-tf", "a.tar", "--use-compress-program={cmd}"],
    ["-tf", "a.tar", "--use-compress-prog={cmd}"],
    ["-tf", "a.tar", "--use-compress={cmd}"],
    ["-tf", "a.tar", "--use={cmd}"],
    ["-tf", "a.tar", "--use-compress-program", "{cmd}"],
    ["-xf", "a.tar", "--to-command={cmd}"],
    ["-tf", "a.tar", "--to-command={cmd}"],
    ["-tf", "a.tar", "--to-c={cmd}"],
    ["-tf", "a.tar", "--to={cmd}"],
    ["-tf", "a.tar", "--to-command", "{cmd}"],
    ["-tf", "a.tar", "--checkpoint=1", "--checkpoint-action=exec={cmd}"],
    ["-tf", "a.tar", "--checkpoint", "--checkpoint-act=exec={cmd}"],
    ["-tf", "a.tar", "--checkpoint-a=exec={cmd}"],
    ["-tf", "a.tar", "--checkp=exec={cmd}"],
    ["-tf", "a.tar", "--checkpoint-action", "exec={cmd}"],
    ["-tf", "a.tar", "--rsh-command={cmd}"],
    ["-tf", "a.tar", "--rsh={cmd}"],
    ["-tf", "a.tar", "--rmt-command={cmd}"],
    ["-tf", "a.tar", "--rmt={cmd}"],
    ["-tf", "a.tar", "-F", "{cmd}"],
    ["-tfa.tar", "-F{cmd}"],
    ["-tf", "a.tar", "--info-script={cmd}"],
    ["-tf", "a.tar", "--new-volume-script={cmd}"],
    ["-tf", "a.tar", "--new-v={cmd}"],
    ["-tf", "a.tar", "--absolute-names"],
    ["-tf", "a.tar", "--abs"],
    ["-tPf", "a.tar"],
    ["-tf", "a.tar", "--", "--to-command={cmd}"],
    ["-tf", "a.tar", "-C", "{out}"],
    ["-tf", "a.tar", "--directory={out}"],
    ["-tf", "a.tar", "--index-file={out}/idx"],
    ["-tf", "a.tar", "--volno-file={out}/vol"],
    ["-t", "--file", "--to-command={cmd}"],
    ["-tf", "-I{cmd}"],
]


def _fill(args: list[str], root: Path, marker: Path, out: Path) -> list[str]:
    script = out / "payload.sh"  # ignores the arguments tar adds (`-d` for a compressor)
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat >/dev/null\n")
    script.chmod(0o755)
    values = {"cmd": str(script), "out": str(out), "abs_archive": str(root / "abs.tar")}
    return [a.format(**values) for a in args]


@pytest.mark.parametrize("args", LIST_ONLY_ATTACKS)
async def test_list_only_tar_refuses_every_other_spelling(
    root: Path, tmp_path: Path, marker: Path, args: list[str]
) -> None:
    make_archive(root)
    out_dir = tmp_path / "outside"
    out_dir.mkdir()
    filled = _fill(args, root, marker, out_dir)
    before = snapshot(tmp_path, root)
    with pytest.raises(InvalidArguments):
        await tar_tool(root, **LIST_ONLY).execute({"command": "tar", "args": filled})
    assert not exists(marker)
    assert snapshot(tmp_path, root) == before


PROGRAM_RUNNING = [a for a in LIST_ONLY_ATTACKS if any("{cmd}" in x for x in a)]


@pytest.mark.parametrize("args", PROGRAM_RUNNING)
@pytest.mark.parametrize(
    "rule",
    [
        {},  # no allow-list at all
        {"forbid_options": ["--delete"]},
        {"allow_options": ["-*", "--*", "-I*", "--to-command*", "--checkpoint-action*"]},
    ],
    ids=["no-rule", "forbid-mode", "allow-everything"],
)
async def test_program_running_options_are_refused_whatever_the_config(
    root: Path, tmp_path: Path, marker: Path, args: list[str], rule: dict[str, object]
) -> None:
    make_archive(root)
    out_dir = tmp_path / "outside"
    out_dir.mkdir()
    with pytest.raises(InvalidArguments) as refused:
        await tar_tool(root, **rule).execute({"command": "tar", "args": _fill(args, root, marker, out_dir)})
    assert "whatever the allow-list says" in refused.value.message
    assert not exists(marker)


@pytest.mark.parametrize(
    "args",
    [
        ["cIf", "{cmd}", "{out}/x.tar", "a.txt"],
        ["-xf", "a.tar", "--to-command={cmd}"],
        ["-tf", "a.tar", "--checkpoint=1", "--checkpoint-a=exec={cmd}"],
        ["-tf", "a.tar", "--use-compress-prog={cmd}"],
    ],
)
def test_control_plain_tar_does_run_these(root: Path, tmp_path: Path, marker: Path, args: list[str]) -> None:
    """The payloads are real: tar without reach runs them."""
    make_archive(root)
    out_dir = tmp_path / "outside"
    out_dir.mkdir()
    subprocess.run([TAR, *_fill(args, root, marker, out_dir)], cwd=root, capture_output=True)
    assert marker.exists()


async def test_a_remote_looking_archive_name_stays_a_local_file(root: Path, marker: Path) -> None:
    """`-f host:file` would start rsh; TAR_OPTIONS=--force-local makes it a file name."""
    make_archive(root)
    (root / "evil:a.tar").write_bytes((root / "a.tar").read_bytes())
    out = await tar_tool(root, **LIST_ONLY).execute({"command": "tar", "args": ["-tf", "evil:a.tar"]})
    assert out["exit_code"] == 0 and "a.txt" in out["stdout"], out["stderr"]
    out = await tar_tool(root, **LIST_ONLY).execute({"command": "tar", "args": ["tf", "evil:a.tar"]})
    assert out["exit_code"] == 0 and "a.txt" in out["stdout"], out["stderr"]


async def test_extraction_when_allowed_stays_in_the_root(root: Path, tmp_path: Path) -> None:
    make_archive(root)
    (root / "dest").mkdir()
    before = snapshot(tmp_path, root)
    tool = tar_tool(root, allow_options=["-x", "-f", "-C"])
    out = await tool.execute({"command": "tar", "args": ["xf", "a.tar", "-C", "dest"]})
    assert out["exit_code"] == 0, out["stderr"]
    assert (root / "dest" / "a.txt").read_text() == "alpha\n"
    assert snapshot(tmp_path, root) == before


def _evil_archive(path: Path, outside: Path) -> None:
    """Members that try to land outside: `..`, absolute names, a symlink then a file through it."""
    import io
    import tarfile

    def add(tar: tarfile.TarFile, name: str, data: bytes = b"pwned\n") -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        add(tar, f"../../{outside.name}/dotdot.txt")
        add(tar, f"{outside}/absolute.txt")
        link = tarfile.TarInfo("escape")
        link.type = tarfile.SYMTYPE
        link.linkname = str(outside)
        tar.addfile(link)
        add(tar, "escape/through-link.txt")
        hard = tarfile.TarInfo("hard")
        hard.type = tarfile.LNKTYPE
        hard.linkname = f"{outside}/victim.txt"
        tar.addfile(hard)


@pytest.mark.parametrize(
    "args", [["xf", "evil.tar"], ["-xf", "evil.tar"], ["-x", "--file=evil.tar"], ["xvf", "evil.tar"]]
)
async def test_extracting_a_hostile_archive_writes_nothing_outside(
    root: Path, tmp_path: Path, args: list[str]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep\n")
    (root / "deep" / "er").mkdir(parents=True)
    _evil_archive(root / "deep" / "er" / "evil.tar", outside)
    before = snapshot(tmp_path, root)
    tool = tar_tool(root, allow_options=["-x", "-v", "-f"])
    await tool.execute({"command": "tar", "args": args, "cwd": "deep/er"})
    assert snapshot(tmp_path, root) == before
    assert (outside / "victim.txt").read_text() == "keep\n"
