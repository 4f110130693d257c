"""Red team on git's config: program-running keys and writes the first families did not hold.

A real git; the agent is assumed to write repository config (as in issue 19's scenario).

* **trailer commands**: `trailer.<token>.cmd` / `.command` is a shell command git runs for
  each trailer (`git interpret-trailers`, `git commit --trailer`), even with no `--trailer`
  argument. Refused while set, in every spelling (case, dotted tokens, included files).
* **archive compressors**: `tar.<format>.command` is the program `git archive` pipes the
  tar through, picked by `--format` or by the `-o` file's extension (also overriding the
  built-in `tar.gz`/`tgz`). Refused for `git archive` while set.
* **local transports**: `git push`, `git send-pack` and `git archive --remote` to a
  repository on this machine run git *inside that repository* (receive-pack,
  upload-archive), where git clears the command-line config reach-shell's overrides ride on:
  its `core.fsmonitor`, smudge filters (`receive.denyCurrentBranch = updateInstead`) and
  `tar.<format>.command` ran. Local transports are off for those three; fetch, pull, clone
  and ls-remote from a local repository (which run nothing of the other side) keep working.
* **format.outputDirectory** took `git format-patch` files outside the root.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import append_config, exists, make_repo, setup_git, snapshot

from reach_core import Denied

IDENTITY = {"GIT_AUTHOR_NAME": "ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
            "GIT_COMMITTER_NAME": "ada", "GIT_COMMITTER_EMAIL": "ada@example.org"}


def git_tool(root: Path) -> RunCommand:
    return RunCommand(ShellSettings(root=root, commands={"git": {}}, env=IDENTITY, timeout=10))


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "PWNED"


@pytest.fixture
def repo(root: Path) -> Path:
    return make_repo(root / "repo")


async def _run(tool: RunCommand, args: list[str], cwd: str = "repo") -> dict[str, object] | Denied:
    try:
        return await tool.execute({"command": "git", "args": args, "cwd": cwd})
    except Denied as exc:
        return exc


# ----------------------------------------------------------------------------- trailer commands

_TRAILER_CONFIGS = [
    ('[trailer "sign"]\n\tcmd = touch {m}; echo', "sign"),
    ('[trailer "sign"]\n\tcommand = touch {m}; echo', "sign"),
    ('[Trailer "Sign"]\n\tCMD = touch {m}; echo', "sign"),
    ('[trailer "a.b"]\n\tcmd = touch {m}; echo', "a.b"),
    ('[trailer "sign"]\n\tkey = Signed-off-by\n\tcmd = touch {m}; echo', "Signed-off-by"),
    ("[include]\n\tpath = extra.cfg", "sign"),  # the key in a file the config includes
]
_TRAILER_CALLS = [
    ["interpret-trailers", "--trailer", "{t}=x", "notes.md"],
    ["interpret-trailers", "notes.md"],  # configured commands run without --trailer too
    ["interpret-trailers", "--in-place", "--trailer", "{t}: x", "notes.md"],
    ["commit", "-am", "msg", "--trailer", "{t}: x"],
]


@pytest.mark.parametrize("config", range(len(_TRAILER_CONFIGS)))
async def test_trailer_commands_never_run(root: Path, repo: Path, marker: Path, config: int) -> None:
    """Each spelling of the key against every call that applies trailers (one repository per spelling)."""
    text, token = _TRAILER_CONFIGS[config]
    (repo / ".git" / "extra.cfg").write_text(f'[trailer "sign"]\n\tcmd = touch {marker}; echo\n')
    append_config(repo, text.format(m=marker))
    tool = git_tool(root)
    ran = []
    for call in _TRAILER_CALLS:
        args = [a.format(t=token) for a in call]
        result = await _run(tool, args)
        if not isinstance(result, Denied) or "trailer." not in str(result) or exists(marker):
            ran.append((args, result))
    assert ran == []


async def test_trailers_without_commands_still_work(root: Path, repo: Path) -> None:
    append_config(repo, '[trailer "sign"]\n\tkey = Signed-off-by\n\twhere = end')
    result = await _run(git_tool(root), ["interpret-trailers", "--trailer", "sign=ada", "notes.md"])
    assert not isinstance(result, Denied) and result["exit_code"] == 0, result
    assert "Signed-off-by: ada" in str(result["stdout"])
    result = await _run(git_tool(root), ["commit", "-am", "msg", "--trailer", "sign: ada"])
    assert not isinstance(result, Denied) and result["exit_code"] == 0, result
    assert "Signed-off-by: ada" in setup_git("log", "-1", "--format=%B", cwd=repo)


# ----------------------------------------------------------------------------- archive compressors

_ARCHIVE = [
    ('[tar "evil"]\n\tcommand = "touch {m}; cat"', ["archive", "--format=evil", "HEAD"]),
    ('[tar "evil"]\n\tcommand = "touch {m}; cat"', ["archive", "--format=evil", "-o", "out.evil", "HEAD"]),
    ('[tar "evil"]\n\tcommand = "touch {m}; cat"', ["archive", "-o", "out.evil", "HEAD"]),  # by extension
    ('[tar "evil"]\n\tcommand = "touch {m}; cat"', ["archive", "--output=out.evil", "HEAD"]),
    ('[tar "tar.gz"]\n\tcommand = "touch {m}; gzip -cn"', ["archive", "--format=tar.gz", "HEAD"]),
    ('[tar "tar.gz"]\n\tcommand = "touch {m}; gzip -cn"', ["archive", "-o", "x.tar.gz", "HEAD"]),
    ('[tar "tgz"]\n\tcommand = "touch {m}; gzip -cn"', ["archive", "--format=tgz", "HEAD", "a.txt"]),
    ('[TAR "Evil"]\n\tCommand = "touch {m}; cat"', ["archive", "--format=Evil", "HEAD"]),
]


@pytest.mark.parametrize("case", range(len(_ARCHIVE)))
async def test_archive_compressors_from_config_never_run(root: Path, repo: Path, marker: Path, case: int) -> None:
    config, args = _ARCHIVE[case]
    append_config(repo, config.format(m=marker))
    result = await _run(git_tool(root), args)
    assert isinstance(result, Denied), result
    assert "tar." in str(result) and not exists(marker)


@pytest.mark.parametrize("args", [
    ["archive", "--format=tar", "HEAD"], ["archive", "--format=zip", "-o", "x.zip", "HEAD"],
    ["archive", "-o", "x.tar.gz", "HEAD"],
])
async def test_archives_of_built_in_formats_still_work(root: Path, repo: Path, args: list[str]) -> None:
    result = await _run(git_tool(root), args)
    assert not isinstance(result, Denied) and result["exit_code"] == 0, result


async def test_a_compressor_in_config_refuses_only_archive(root: Path, repo: Path, marker: Path) -> None:
    append_config(repo, f'[tar "evil"]\n\tcommand = "touch {marker}; cat"')
    result = await _run(git_tool(root), ["status", "--short"])
    assert not isinstance(result, Denied) and result["exit_code"] == 0, result
    assert not exists(marker)


# ----------------------------------------------------------------------------- local transports


@pytest.fixture
def other(root: Path, repo: Path, marker: Path) -> Path:
    """A clone of `repo`, one commit behind it, armed: its own config runs programs when git runs in it."""
    setup_git("clone", "-q", str(repo), str(root / "other"), cwd=root)
    setup_git("commit", "-qam", "second", cwd=repo)
    other = root / "other"
    append_config(other, (
        f'[receive]\n\tdenyCurrentBranch = updateInstead\n[filter "x"]\n\tsmudge = "touch {marker}-smudge; cat"\n'
        f'\tclean = cat\n[core]\n\tfsmonitor = "touch {marker}-fsmonitor; false"\n'
        f'[tar "evil"]\n\tcommand = "touch {marker}-tar; cat"\n\tremote = true'))
    (other / ".git" / "info").mkdir(exist_ok=True)
    (other / ".git" / "info" / "attributes").write_text("* filter=x\n")
    return other


def _transports(root: Path, other: Path) -> list[list[str]]:
    return [
        ["push", "../other", "main"],
        ["push", str(other), "main"],
        ["push", f"file://{other}", "main"],
        ["push", "../other/.git", "HEAD:main"],
        ["push", "o", "main"],  # a remote by name
        ["push", "p", "main"],  # its push URL is local, its fetch URL is not
        ["push", "https://example.invalid/mirror", "main"],  # rewritten by pushInsteadOf
        ["send-pack", "../other", "main"],
        ["send-pack", f"{other}/.git", "main"],
        ["archive", "--remote=../other", "--format=evil", "HEAD"],
        ["archive", f"--remote=file://{other}", "--format=evil", "HEAD"],
        ["archive", "--remote", "o", "--format=evil", "HEAD"],
    ]


async def test_git_never_runs_inside_another_local_repository(root: Path, repo: Path, other: Path,
                                                              marker: Path) -> None:
    """Every way to name the armed repository, one after the other (one pair of repositories: git is slow
    to set up); after each, no marker, the other repository unchanged, nothing new outside the root."""
    setup_git("remote", "add", "o", "../other", cwd=repo)
    setup_git("remote", "add", "p", "https://example.invalid/p", cwd=repo)
    setup_git("remote", "set-url", "--push", "p", str(other), cwd=repo)
    setup_git("config", f"url.file://{other}.pushInsteadOf", "https://example.invalid/mirror", cwd=repo)
    before = (other / "a.txt").read_text(), setup_git("rev-parse", "main", cwd=other)
    outside = snapshot(root.parent, root)
    tool = git_tool(root)
    reached = []
    for args in _transports(root, other):
        result = await _run(tool, args)
        refused = not isinstance(result, Denied) and result["exit_code"] != 0 \
            and "reach-shell does not let" in str(result.get("note"))
        markers = sorted(p.name for p in root.parent.iterdir() if p.name.startswith(marker.name))
        after = (other / "a.txt").read_text(), setup_git("rev-parse", "main", cwd=other)
        if not refused or markers or after != before or snapshot(root.parent, root) != outside:
            reached.append((args, markers, result))
    assert len(_transports(root, other)) == 12
    assert reached == []


@pytest.mark.parametrize("args", [["fetch", "../other"], ["pull", "--no-rebase", "--no-edit", "../other", "main"],
                                  ["clone", "../other", "copy"], ["ls-remote", "../other"], ["fetch", "o"]])
async def test_reading_from_a_local_repository_still_works(root: Path, repo: Path, other: Path, marker: Path,
                                                           args: list[str]) -> None:
    setup_git("remote", "add", "o", "../other", cwd=repo)
    result = await _run(git_tool(root), args)
    assert not isinstance(result, Denied) and result["exit_code"] == 0, result
    assert sorted(p.name for p in root.parent.iterdir() if p.name.startswith(marker.name)) == []


# ----------------------------------------------------------------------------- format.outputDirectory


@pytest.mark.parametrize("where", ["{out}", "../../outside-patches", "{out}/deeper", "./../../outside-patches"])
async def test_format_patch_never_writes_outside_the_root(root: Path, repo: Path, where: str) -> None:
    out = root.parent / "outside-patches"
    setup_git("commit", "-qam", "second", cwd=repo)
    append_config(repo, f"[format]\n\toutputDirectory = {where.format(out=out)}")
    before = snapshot(root.parent, root)
    result = await _run(git_tool(root), ["format-patch", "-1"])
    assert not isinstance(result, Denied) and result["exit_code"] == 0, result
    assert snapshot(root.parent, root) == before
    assert (repo / "0001-second.patch").exists()


async def test_format_patch_output_option_still_works(root: Path, repo: Path) -> None:
    setup_git("commit", "-qam", "second", cwd=repo)
    result = await _run(git_tool(root), ["format-patch", "-1", "-o", "patches"])
    assert not isinstance(result, Denied) and result["exit_code"] == 0, result
    assert (repo / "patches" / "0001-second.patch").exists()


# ----------------------------------------------------------------------------- the host's system config

SYSTEM = Path("/etc/gitconfig")


def _system_bytes() -> bytes | None:
    return SYSTEM.read_bytes() if SYSTEM.exists() else None


@pytest.fixture
def host_config() -> Iterator[bytes | None]:
    """/etc/gitconfig as it was; put back byte for byte whatever a failing run did to it."""
    before = _system_bytes()
    try:
        yield before
    finally:
        now = _system_bytes()
        if now != before:
            if before is None:
                SYSTEM.unlink()
            else:
                SYSTEM.write_bytes(before)


_SYSTEM_WRITES = [
    ["config", "--system", "reach-redteam.probe", "1"],
    ["config", "--system", "--add", "reach-redteam.probe", "1"],
    ["config", "--system", "--replace-all", "reach-redteam.probe", "1"],
    ["config", "--system", "core.fsmonitor", "touch /tmp/reach-redteam-never"],
    ["config", "--system", "include.path", "reach-redteam.cfg"],
    ["config", "--system", "safe.directory", "*"],
    ["config", "--system", "--type=bool", "reach-redteam.flag", "yes"],
    ["config", "--system", "--no-type", "credential.helper", "store"],
]


@pytest.mark.parametrize("args", _SYSTEM_WRITES)
async def test_git_config_system_never_writes_the_hosts_config(root: Path, repo: Path, host_config: bytes | None,
                                                               args: list[str]) -> None:
    tool = git_tool(root)
    await _run(tool, args)
    assert _system_bytes() == host_config
    later = await _run(tool, ["config", "--system", "--get", "reach-redteam.probe"])
    assert not isinstance(later, Denied) and later["stdout"] == ""  # nothing the call wrote outlives it


@pytest.mark.parametrize("args", [["config", "--system", "--list"], ["config", "--system", "-l", "--show-origin"],
                                  ["config", "--system", "--get-regexp", "."]])
async def test_git_config_system_reads_nothing_of_the_host(root: Path, repo: Path, host_config: bytes | None,
                                                           args: list[str]) -> None:
    result = await _run(git_tool(root), args)
    assert not isinstance(result, Denied) and result["stdout"] == "", result


async def test_repository_config_is_still_read_and_written(root: Path, repo: Path) -> None:
    tool = git_tool(root)
    result = await _run(tool, ["config", "user.name", "Ada Lovelace"])
    assert not isinstance(result, Denied) and result["exit_code"] == 0, result
    result = await _run(tool, ["config", "--get", "user.name"])
    assert not isinstance(result, Denied) and result["stdout"] == "Ada Lovelace\n"


# ----------------------------------------------------------------------------- a rebase's todo list


def _stopped_rebase(repo: Path) -> Path:
    """An interactive rebase stopped at a `break` before its last pick (as a person leaves one);
    the todo list's path."""
    setup_git("commit", "-qam", "second", cwd=repo)
    (repo / "notes.md").write_text("three\n")
    setup_git("commit", "-qam", "third", cwd=repo)
    setup_git("-c", "sequence.editor=sed -i '2i break'", "rebase", "-q", "-i", "HEAD~2", cwd=repo)
    todo = repo / ".git" / "rebase-merge" / "git-rebase-todo"
    assert todo.exists()
    return todo


_EXEC_LINES = ["exec touch {m}", "x touch {m}", "  exec touch {m}", "exec\ttouch {m}", "\tx touch {m}",
               "EXEC touch {m}", "pick HEAD\nexec touch {m}"]


@pytest.mark.parametrize("line", _EXEC_LINES)
async def test_exec_lines_written_into_a_rebase_todo_never_run(root: Path, repo: Path, marker: Path,
                                                               line: str) -> None:
    todo = _stopped_rebase(repo)
    todo.write_text(line.format(m=marker) + "\n" + todo.read_text())
    tool = git_tool(root)
    ran = []
    for args in (["rebase", "--continue"], ["rebase", "--skip"], ["-C", ".", "rebase", "--continue"]):
        result = await _run(tool, args)
        if not isinstance(result, Denied) or exists(marker):
            ran.append((args, result))
    assert ran == []
    result = await _run(tool, ["rebase", "--abort"])  # the way out still works
    assert not isinstance(result, Denied) and result["exit_code"] == 0, result
    assert not exists(marker)


async def test_a_rebase_without_exec_lines_goes_on(root: Path, repo: Path) -> None:
    _stopped_rebase(repo)
    result = await _run(git_tool(root), ["rebase", "--continue"])
    assert not isinstance(result, Denied) and result["exit_code"] == 0, result
    assert setup_git("log", "--format=%s", cwd=repo).split() == ["third", "second", "first"]
