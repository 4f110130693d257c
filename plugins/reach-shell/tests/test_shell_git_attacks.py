"""A real git, a repository the agent could write: config must never make git run a program.

Every attack writes what an agent with `write_file` could write (`.git/config`,
`.gitattributes`, hooks, `$HOME/.gitconfig` in the root, a `.git` file pointing
elsewhere), then calls the allow-listed `git`. Each proves the marker outside the
root was not created and nothing appeared outside the root; honest calls still work.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import GIT, append_config, exists, make_repo, setup_git, snapshot

from reach_core import BusinessError, Denied, InvalidArguments

READ_SUBCOMMANDS = ["status", "diff", "log", "show", "grep", "commit", "blame", "add"]


@pytest.fixture
def repo(root: Path) -> Path:
    return make_repo(root)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


def git_tool(root: Path, **rule: object) -> RunCommand:
    command = {"subcommands": READ_SUBCOMMANDS, **rule}
    return RunCommand(ShellSettings(root=root, commands={"git": command}, timeout=10))


HONEST = [
    (["status", "--short"], "M a.txt"),
    (["diff"], "+beta"),
    (["log", "--oneline", "-n1"], "first"),
    (["show", "--stat", "HEAD"], "a.txt"),
    (["grep", "-n", "alpha"], "a.txt:1:alpha"),
]


@pytest.mark.parametrize(("args", "expected"), HONEST)
async def test_honest_git_still_works(repo: Path, args: list[str], expected: str) -> None:
    out = await git_tool(repo).execute({"command": "git", "args": args})
    assert out["exit_code"] == 0, out["stderr"]
    assert expected in out["stdout"]


def _touch(marker: Path) -> str:
    return f"touch {marker}"


# (config text, files to write relative to the repo, git arguments that would trigger it)
CONFIG_ATTACKS = {
    "fsmonitor": ("[core]\n\tfsmonitor = {cmd}", {}, ["status"]),
    "fsmonitor-case": ("[CoRe]\n\tFsMonitor = {cmd}", {}, ["status"]),
    "fsmonitor-quoted": ('[core]\n\tfsmonitor = "{cmd}"', {}, ["diff"]),
    "fsmonitor-continued": ("[core]\n\tfsmonitor = {cmd_split}", {}, ["status"]),
    "fsmonitor-dotted-key": ("[core]fsmonitor={cmd}", {}, ["status"]),
    "diff-external": ("[diff]\n\texternal = {cmd}", {}, ["diff"]),
    "diff-external-log": ("[diff]\n\texternal = {cmd}", {}, ["log", "-p"]),
    "diff-external-show": ("[diff]\n\texternal = {cmd}", {}, ["show"]),
    "pager": ("[core]\n\tpager = {cmd}", {}, ["log"]),
    "pager-per-command": ("[pager]\n\tstatus = {cmd}", {}, ["status"]),
    "filter-clean": (
        '[filter "x"]\n\tclean = {cmd}; cat\n\tsmudge = {cmd}; cat',
        {".gitattributes": "* filter=x\n"},
        ["add", "a.txt"],
    ),
    "filter-process": (
        '[filter "x"]\n\tprocess = {cmd}\n\trequired',
        {".gitattributes": "*.txt filter=x\n"},
        ["status"],
    ),
    "filter-info-attributes": (
        '[filter "y"]\n\tclean = {cmd}; cat',
        {".git/info/attributes": "* filter=y\n"},
        ["diff"],
    ),
    "textconv": (
        '[diff "t"]\n\ttextconv = {cmd}; cat',
        {".gitattributes": "*.txt diff=t\n"},
        ["diff"],
    ),
    "textconv-grep": (
        '[diff "t"]\n\ttextconv = {cmd}; cat',
        {".gitattributes": "*.txt diff=t\n"},
        ["grep", "-n", "alpha"],
    ),
    "diff-driver-command": (
        '[diff "t"]\n\tcommand = {cmd}',
        {".gitattributes": "a.txt diff=t\n"},
        ["diff"],
    ),
    "hooks-path": (
        "[core]\n\thooksPath = evilhooks",
        {"evilhooks/pre-commit": "#!/bin/sh\n{cmd}\n"},
        ["commit", "-q", "-am", "x"],
    ),
    "include-path": ("[include]\n\tpath = ../evil.cfg", {"evil.cfg": "[core]\n\tfsmonitor = {cmd}\n"}, ["status"]),
    "include-path-absolute": (
        "[include]\n\tpath = {root}/evil.cfg", {"evil.cfg": "[diff]\n\texternal = {cmd}\n"}, ["diff"]
    ),
    "include-if-gitdir": (
        '[includeIf "gitdir:/"]\n\tpath = ../evil.cfg', {"evil.cfg": "[core]\n\tpager = {cmd}\n"}, ["status"]
    ),
    "include-if-onbranch": (
        '[includeIf "onbranch:main"]\n\tpath = ../evil.cfg', {"evil.cfg": "[core]\n\tfsmonitor = {cmd}\n"}, ["status"]
    ),
    "alias": ("[alias]\n\tstatus = !{cmd}\n\tst = !{cmd}", {}, ["st"]),
    "alias-autocorrect": ("[help]\n\tautocorrect = -1\n[alias]\n\tzzqx = !{cmd}", {}, ["zzqy"]),
    "help-browser": (
        '[help]\n\tformat = web\n[web]\n\tbrowser = x\n[browser "x"]\n\tcmd = {cmd}',
        {},
        ["status"],
    ),
    "gpg-signature": ("[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {marker_script}", {}, ["log"]),
    "editor": ("[core]\n\teditor = {cmd}", {}, ["commit", "-q", "-a"]),
    "credential-helper": ("[credential]\n\thelper = !{cmd}", {}, ["status"]),
    "ssh-command": ("[core]\n\tsshCommand = {cmd}", {}, ["status"]),
    "askpass": ("[core]\n\taskPass = {cmd}", {}, ["status"]),
    "worktree-config": (
        "[extensions]\n\tworktreeConfig = true",
        {".git/config.worktree": "[core]\n\tfsmonitor = {cmd}\n"},
        ["status"],
    ),
}


def _write_attack(repo: Path, marker: Path, name: str) -> list[str]:
    config, files, args = CONFIG_ATTACKS[name]
    script = repo.parent / "m.sh"  # outside the repo, still inside nothing the test checks
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    values = {
        "cmd": _touch(marker),
        "cmd_split": f"tou\\\nch {marker}",
        "root": str(repo),
        "marker_script": str(script),
    }
    if name == "worktree-config":  # needs the repository format that allows extensions
        setup_git("config", "core.repositoryformatversion", "1", cwd=repo)
    append_config(repo, config.format(**values))
    for relative, text in files.items():
        path = repo / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(**values))
        path.chmod(0o755)
    return args


@pytest.mark.parametrize("name", sorted(CONFIG_ATTACKS))
async def test_repository_config_never_runs_a_program(
    repo: Path, marker: Path, tmp_path: Path, name: str
) -> None:
    args = _write_attack(repo, marker, name)
    before = snapshot(tmp_path, repo)
    tool = git_tool(repo, subcommands=None)  # any subcommand: aliases too
    try:
        out = await tool.execute({"command": "git", "args": args})
    except Denied as denied:
        assert "run another program" in denied.reason
    else:
        assert out["exit_code"] is not None
    assert not exists(marker), f"{name}: git ran the payload"
    assert snapshot(tmp_path, repo) == before


@pytest.mark.parametrize(
    "name", ["fsmonitor", "diff-external", "filter-clean", "include-path", "alias", "alias-autocorrect"]
)
def test_control_the_same_attack_does_run_without_reach(
    repo: Path, marker: Path, name: str
) -> None:
    """The payloads are real: plain git with the agent's config runs them."""
    args = _write_attack(repo, marker, name)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run([GIT, *args], cwd=repo, env=env, capture_output=True)
    assert marker.exists()


DISARMED = [
    "fsmonitor", "fsmonitor-case", "fsmonitor-quoted", "fsmonitor-continued", "diff-external",
    "pager", "pager-per-command", "filter-clean", "filter-process", "filter-info-attributes",
    "textconv", "diff-driver-command", "include-path", "include-if-gitdir", "include-if-onbranch",
    "gpg-signature", "credential-helper", "ssh-command", "askpass", "worktree-config", "editor",
]


@pytest.mark.parametrize("name", DISARMED)
async def test_honest_reads_still_work_in_a_repository_with_program_config(
    repo: Path, marker: Path, tmp_path: Path, name: str
) -> None:
    """The keys are switched off for the run, so the honest command answers as usual."""
    _write_attack(repo, marker, name)
    before = snapshot(tmp_path, repo)
    tool = git_tool(repo)
    for args, expected in HONEST:
        out = await tool.execute({"command": "git", "args": args})
        assert out["exit_code"] == 0, (name, args, out["stderr"])
        assert expected in out["stdout"], (name, args, out["stdout"])
    assert not exists(marker), f"{name}: git ran the payload"
    assert snapshot(tmp_path, repo) == before


UNDISARMABLE = {
    "merge-driver": ('[merge "m"]\n\tdriver = {cmd}', "merge.m.driver", ["status"]),
    "git-proxy": ("[core]\n\tgitProxy = {cmd}", "core.gitproxy", ["status"]),
    "alternate-refs": ("[core]\n\talternateRefsCommand = {cmd}", "core.alternaterefscommand", ["log"]),
    "remote-vcs": ('[remote "o"]\n\tvcs = x', "remote.o.vcs", ["status"]),
    "alias-of-the-subcommand": ("[alias]\n\tlg = !{cmd}", "alias.lg", ["lg"]),
    "alias-case": ("[alias]\n\tLG = !{cmd}", "alias.lg", ["lg"]),
    "external-diff-stash": ("[diff]\n\texternal = {cmd}", "diff.external", ["stash", "show", "-p"]),
    "diff-driver-stash": ('[diff "d"]\n\tcommand = {cmd}', "diff.d.command", ["stash", "list"]),
    "included-merge-driver": ("[include]\n\tpath = ../m.cfg", "merge.m.driver", ["status"]),
}


@pytest.mark.parametrize("name", sorted(UNDISARMABLE))
async def test_keys_that_cannot_be_switched_off_refuse_the_call_and_name_the_key(
    repo: Path, marker: Path, name: str
) -> None:
    text, key, args = UNDISARMABLE[name]
    (repo / "m.cfg").write_text(f'[merge "m"]\n\tdriver = touch {marker}\n')
    append_config(repo, text.format(cmd=_touch(marker)))
    tool = git_tool(repo, subcommands=None)
    with pytest.raises(Denied) as denied:
        await tool.execute({"command": "git", "args": args})
    assert key in denied.value.reason and "local" in denied.value.reason
    assert not exists(marker)


HOME_FILES = [
    ".gitconfig",
    ".config/git/config",
]
HOME_KEYS = [
    "[core]\n\tfsmonitor = {cmd}",
    "[core]\n\tpager = {cmd}",
    "[diff]\n\texternal = {cmd}",
    "[alias]\n\tst = !{cmd}",
    '[filter "x"]\n\tclean = {cmd}; cat',
]


@pytest.mark.parametrize("where", HOME_FILES)
@pytest.mark.parametrize("text", HOME_KEYS)
async def test_a_gitconfig_in_the_root_is_not_read_as_home(
    repo: Path, marker: Path, tmp_path: Path, where: str, text: str
) -> None:
    """HOME used to be the root: `$HOME/.gitconfig` was the agent's to write."""
    path = repo / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.format(cmd=_touch(marker)) + "\n")
    (repo / ".gitattributes").write_text("* filter=x\n")
    before = snapshot(tmp_path, repo)
    tool = git_tool(repo)
    for args in (["status"], ["diff"], ["log", "-p"]):
        out = await tool.execute({"command": "git", "args": args})
        assert out["exit_code"] == 0, out["stderr"]
    assert not exists(marker)
    assert snapshot(tmp_path, repo) == before


IDENTITY = {
    "GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "agent@example.org",
    "GIT_COMMITTER_NAME": "agent", "GIT_COMMITTER_EMAIL": "agent@example.org",
}


@pytest.mark.parametrize(
    "hook", ["pre-commit", "commit-msg", "prepare-commit-msg", "post-commit", "post-index-change"]
)
async def test_hooks_in_the_repository_do_not_run_but_commit_does(
    repo: Path, marker: Path, hook: str
) -> None:
    path = repo / ".git" / "hooks" / hook
    path.write_text(f"#!/bin/sh\ntouch {marker}\n")
    path.chmod(0o755)
    tool = RunCommand(
        ShellSettings(root=repo, commands={"git": {"subcommands": ["commit", "log"]}}, env=IDENTITY)
    )
    out = await tool.execute({"command": "git", "args": ["commit", "-q", "-am", "second"]})
    assert out["exit_code"] == 0, out["stderr"]
    log = await tool.execute({"command": "git", "args": ["log", "--oneline"]})
    assert "second" in log["stdout"]
    assert not exists(marker)


def test_control_a_hook_does_run_without_reach(repo: Path, marker: Path) -> None:
    path = repo / ".git" / "hooks" / "pre-commit"
    path.write_text(f"#!/bin/sh\ntouch {marker}\n")
    path.chmod(0o755)
    setup_git("commit", "-q", "-am", "second", cwd=repo)
    assert marker.exists()


@pytest.mark.parametrize(
    "gitfile",
    ["gitdir: ../elsewhere/.git", "gitdir: {outside}/.git", "gitdir:   ../elsewhere/.git  "],
)
async def test_a_dot_git_file_pointing_elsewhere_is_followed_by_the_check(
    root: Path, marker: Path, gitfile: str
) -> None:
    """The listing runs where git runs, so it reads the config the `.git` file points at."""
    elsewhere = make_repo(root / "elsewhere")
    append_config(elsewhere, f'[filter "x"]\n\tclean = touch {marker}; cat')
    work = root / "work2"
    work.mkdir()
    (work / ".git").write_text(gitfile.format(outside=elsewhere) + "\n")
    (work / ".gitattributes").write_text("*.txt filter=x\n")
    (work / "b.txt").write_text("new\n")
    tool = git_tool(root)
    try:
        out = await tool.execute({"command": "git", "args": ["add", "b.txt"], "cwd": "work2"})
    except BusinessError:  # git itself cannot read that .git file
        pass
    else:
        assert out["exit_code"] == 0, out["stderr"]
    assert not exists(marker)


async def test_no_repository_is_discovered_above_the_root(tmp_path: Path, marker: Path) -> None:
    """A repository around the root is not the agent's, and git must not wander into it."""
    outer = make_repo(tmp_path / "outer")
    append_config(outer, f"[core]\n\tfsmonitor = touch {marker}")
    inner = outer / "inner"
    inner.mkdir()
    out = await git_tool(inner.resolve()).execute({"command": "git", "args": ["status"]})
    assert out["exit_code"] != 0 and "not a git repository" in out["stderr"]
    assert not exists(marker)


GLOBAL_OPTION_ATTACKS = [
    ["-c", "core.fsmonitor={cmd}", "status"],
    ["-c", "core.pager={cmd}", "-p", "log"],
    ["-ccore.pager={cmd}", "log"],
    ["-c", "alias.status=!{cmd}", "status"],
    ["-c", "diff.external={cmd}", "diff"],
    ["--config-env=core.fsmonitor=PATH", "status"],
    ["--config-env", "core.fsmonitor=PATH", "status"],
    ["--exec-path=/tmp", "status"],
    ["--exec-path", "status"],
    ["-p", "-c", "core.pager={cmd}", "log"],
    ["--no-pager", "-c", "core.editor={cmd}", "commit"],
    ["--list-cmds=main", "status"],
    ["--help", "status"],
    ["-h", "status"],
]


@pytest.mark.parametrize("args", GLOBAL_OPTION_ATTACKS)
@pytest.mark.parametrize("mode", ["forbid-only", "allow-list"])
async def test_program_running_global_options_are_refused_in_every_mode(
    repo: Path, marker: Path, args: list[str], mode: str
) -> None:
    rule: dict[str, object] = {}
    if mode == "allow-list":
        rule = {"allow_options": ["-c", "-c*", "--config-env*", "--exec-path*", "-p", "--no-pager", "--list-cmds*"]}
    tool = git_tool(repo, **rule)
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "git", "args": [a.format(cmd=_touch(marker)) for a in args]})
    assert "whatever the allow-list says" in refused.value.message
    assert not exists(marker)


PATH_OPTIONS = [
    ["-C", "/", "status"],
    ["-C/", "status"],
    ["--git-dir=/tmp/x", "status"],
    ["--git-dir", "/tmp/x", "status"],
    ["--work-tree=/", "status"],
    ["--work-tree", "/", "status"],
    ["--namespace=x", "status"],
    ["-p", "status"],
]


@pytest.mark.parametrize("args", PATH_OPTIONS)
async def test_global_options_are_checked_against_the_allow_list(repo: Path, args: list[str]) -> None:
    tool = git_tool(repo, allow_options=["--short", "-s", "--oneline", "-n*", "--stat"])
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "git", "args": args})
    assert "not one" in refused.value.message


async def test_a_value_of_a_global_option_is_not_taken_for_the_subcommand(repo: Path) -> None:
    (repo / "sub").mkdir(exist_ok=True)
    tool = git_tool(repo, allow_options=["-C", "--short"])
    out = await tool.execute({"command": "git", "args": ["-C", "sub", "status", "--short"]})
    assert out["exit_code"] == 0 and "a.txt" in out["stdout"]
    with pytest.raises(InvalidArguments):  # `status` here is -C's value; `push` the subcommand
        await tool.execute({"command": "git", "args": ["-C", "status", "push"]})


SUBCOMMAND_OPTION_ATTACKS = [
    ["diff", "--ext-diff"],
    ["diff", "--ext"],
    ["diff", "--ext-d"],
    ["log", "-p", "--ext-diff"],
    ["diff", "--textconv"],
    ["diff", "--textc"],
    ["show", "--textconv"],
    ["cat-file", "--filters", "HEAD:a.txt"],
    ["cat-file", "--filt", "HEAD:a.txt"],
    ["grep", "-O{cmd}", "alpha"],
    ["grep", "-nO{cmd}", "alpha"],
    ["grep", "-O", "alpha"],
    ["grep", "--open-files-in-pager={cmd}", "alpha"],
    ["grep", "--open", "alpha"],
    ["grep", "--open-files", "alpha"],
    ["log", "--exec={cmd}"],
    ["log", "--upload-pack={cmd}"],
    ["log", "--receive-pack={cmd}"],
    ["status", "--web"],
    ["status", "--help"],
    ["log", "--hel"],
]


@pytest.mark.parametrize("args", SUBCOMMAND_OPTION_ATTACKS)
async def test_program_running_subcommand_options_are_refused(
    repo: Path, marker: Path, args: list[str]
) -> None:
    with pytest.raises(InvalidArguments) as refused:
        await git_tool(repo).execute({"command": "git", "args": [a.format(cmd=_touch(marker)) for a in args]})
    assert "whatever the allow-list says" in refused.value.message
    assert not exists(marker)


@pytest.mark.parametrize(
    "args",
    [
        ["rebase", "-x", "{cmd}", "HEAD"],
        ["rebase", "-ix{cmd}"],
        ["rebase", "--exec={cmd}"],
        ["rebase", "--ex={cmd}"],
        ["clone", "-u", "{cmd}", ".", "c"],
        ["clone", "--upload-pack={cmd}", ".", "c"],
        ["clone", "--upload={cmd}", ".", "c"],
        ["clone", "-c", "filter.x.smudge={cmd}", ".", "c"],
        ["clone", "--config=core.fsmonitor={cmd}", ".", "c"],
        ["clone", "--conf", "core.pager={cmd}", ".", "c"],
        ["clone", "-qcfilter.x.smudge={cmd}", ".", "c"],
        ["ls-remote", "-u{cmd}", "."],
        ["filter-branch", "--tree-filter", "{cmd}"],
        ["difftool", "-x", "{cmd}"],
        ["mergetool"],
        ["bisect", "run", "{cmd}"],
        ["submodule", "foreach", "{cmd}"],
        ["instaweb"],
        ["maintenance", "start"],
        ["help", "-w", "status"],
        ["svn", "clone", "x"],
    ],
)
async def test_without_a_subcommand_list_program_running_ones_are_still_refused(
    repo: Path, marker: Path, args: list[str]
) -> None:
    tool = RunCommand(ShellSettings(root=repo, commands={"git": {}}))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "git", "args": [a.format(cmd=_touch(marker)) for a in args]})
    assert "whatever the allow-list says" in refused.value.message
    assert not exists(marker)


async def test_harmless_negations_and_look_alikes_pass(repo: Path) -> None:
    tool = git_tool(repo)
    for args in (["diff", "--no-ext-diff"], ["diff", "--text"], ["diff", "--no-textconv"], ["status", "-uno"]):
        out = await tool.execute({"command": "git", "args": args})
        assert out["exit_code"] == 0, (args, out["stderr"])


async def test_the_environment_of_git_switches_programs_off(repo: Path) -> None:
    tool = git_tool(repo)
    out = await tool.execute({"command": "git", "args": ["status"]})
    assert out["exit_code"] == 0
    env = tool.isolation.env(
        type("D", (), {"home": Path("/h"), "tmp": Path("/t"), "git_global": Path("/g"), "hooks": Path("/k"),
                       "git_system": Path("/s"), "ssh_config": Path("/c")})(),
        tool.env,
        tool.root,
    )
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == "/g" and env["GIT_CONFIG_SYSTEM"] == "/s"
    assert env["GIT_PAGER"] == "cat" and env["GIT_EDITOR"] == "true"
    keys = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))}
    assert keys["core.fsmonitor"] == "false" and keys["core.hooksPath"] == "/k"
    assert keys["credential.helper"] == "" and keys["core.pager"] == "cat"
    assert keys["core.sshCommand"] == "ssh -F /c" and env["RSYNC_RSH"] == "ssh -F /c"
    assert "GIT_SSH_COMMAND" not in env and "GIT_EXTERNAL_DIFF" not in env


RACE_FREE = [
    "[core]\n\tfsmonitor = {cmd}",
    "[core]\n\tpager = {cmd}",
    "[core]\n\thooksPath = /tmp",
    "[diff]\n\texternal = {cmd}",
    '[diff "t"]\n\tcommand = {cmd}',
    '[diff "t"]\n\ttextconv = {cmd}; cat',
]


@pytest.mark.parametrize("text", RACE_FREE)
async def test_config_written_while_git_runs_is_still_switched_off(
    repo: Path, marker: Path, text: str
) -> None:
    """Keys with a fixed name and the diff drivers do not depend on the listing's timing."""
    import asyncio

    (repo / ".gitattributes").write_text("*.txt diff=t\n")
    config = repo / ".git" / "config"
    clean = config.read_text()
    evil = clean + "\n" + text.format(cmd=_touch(marker)) + "\n"
    stop = asyncio.Event()

    async def flip() -> None:
        while not stop.is_set():
            for body in (clean, evil):
                await asyncio.to_thread(config.write_text, body)
                await asyncio.sleep(0)

    flipper = asyncio.create_task(flip())
    tool = git_tool(repo)
    try:
        for _ in range(6):
            for args in (["status"], ["diff"], ["log", "-p", "-n1"]):
                await tool.execute({"command": "git", "args": args})
    finally:
        stop.set()
        await flipper
    assert not exists(marker)


async def test_concurrent_calls_never_share_home_or_tmpdir(root: Path) -> None:
    import asyncio
    import sys

    code = (
        "import os, sys, time\n"
        "tmp = os.environ['TMPDIR']\n"
        "print(os.environ['HOME'], len(os.listdir(tmp)))\n"
        "open(os.path.join(tmp, 'mine'), 'w').write('x')\n"
        "time.sleep(0.2)\n"
    )
    tool = RunCommand(ShellSettings(root=root, commands={"python": {"path": sys.executable}}))
    outs = await asyncio.gather(
        *(tool.execute({"command": "python", "args": ["-c", code]}) for _ in range(12))
    )
    homes = [o["stdout"].split()[0] for o in outs]
    assert all(o["stdout"].split()[1] == "0" for o in outs)
    assert len(set(homes)) == 12


@pytest.mark.parametrize("form", ["gitdir: {other}/.git", "gitdir: ../../outside/other/.git"])
async def test_a_dot_git_file_cannot_take_git_to_a_repository_outside_the_root(
    root: Path, tmp_path: Path, form: str
) -> None:
    """Else `git add` or `commit` here would write into someone else's repository."""
    other = make_repo(tmp_path / "outside" / "other")
    work = root / "w"
    work.mkdir()
    (work / ".git").write_text(form.format(other=other) + "\n")
    (work / "b.txt").write_text("new\n")
    before = snapshot(tmp_path, root)
    index = (other / ".git" / "index").read_bytes()
    tool = git_tool(root)
    for args in (["add", "b.txt"], ["status"], ["commit", "-qm", "x"]):
        with pytest.raises(Denied) as denied:
            await tool.execute({"command": "git", "args": args, "cwd": "w"})
        assert "outside the working root" in denied.value.reason
    assert (other / ".git" / "index").read_bytes() == index
    assert snapshot(tmp_path, root) == before


@pytest.mark.parametrize("value", ["/", "{outside}", "../../outside", "../.."])
async def test_core_worktree_cannot_point_outside_the_root(
    repo: Path, tmp_path: Path, marker: Path, value: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    append_config(repo, f"[core]\n\tworktree = {value.format(outside=outside)}")
    before = snapshot(tmp_path, repo)
    with pytest.raises(Denied) as denied:
        await git_tool(repo).execute({"command": "git", "args": ["add", "-A"]})
    assert "core.worktree" in denied.value.reason
    assert snapshot(tmp_path, repo) == before


@pytest.mark.parametrize("value", ["..", "{repo}", "../"])
async def test_core_worktree_inside_the_root_is_fine(repo: Path, value: str) -> None:
    append_config(repo, f"[core]\n\tworktree = {value.format(repo=repo)}")
    out = await git_tool(repo).execute({"command": "git", "args": ["status", "--short"]})
    assert out["exit_code"] == 0 and "a.txt" in out["stdout"], out["stderr"]
