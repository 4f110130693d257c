"""Red-team variants of issue 19's reach-shell classes that the first families did not spell.

* `--work-tree` / `--git-dir` on the command line take git out of the root exactly as a
  `core.worktree` the agent wrote would (which is refused): `git --work-tree=/elsewhere add
  secret` + `git show :secret` read any file, `checkout` writes there. Every spelling
  (attached, separate, relative after `-C`, through a symlink) is `denied`.
* `git clone/init --template=<dir>`: the template's `config` and hooks are copied into the
  new repository, and its smudge filter runs during the clone's checkout. Refused in every
  spelling (abbreviations included) whatever the allow-list says.

A real git; each attack proves the marker was not created and nothing outside the root changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import exists, make_repo, setup_git, snapshot

from reach_core import Denied, InvalidArguments

SUBCOMMANDS = ["status", "add", "show", "checkout", "restore", "ls-files", "log", "diff", "clone", "init", "commit"]


def git_tool(root: Path, **rule: object) -> RunCommand:
    return RunCommand(ShellSettings(root=root, commands={"git": {"subcommands": SUBCOMMANDS, **rule}}, timeout=10))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret.txt").write_text("TOP-SECRET\n")
    return place


@pytest.fixture
def repo(root: Path) -> Path:
    return make_repo(root)


def _listing(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in folder.iterdir()}


def _spellings(outside: Path, repo: Path) -> list[list[str]]:
    rel = str(Path("..") / outside.name) if outside.parent == repo.parent else str(outside)
    (repo / "sub").mkdir(exist_ok=True)
    (repo / "out-link").symlink_to(outside)
    return [
        [f"--work-tree={outside}", "status", "--short"],
        ["--work-tree", str(outside), "add", "secret.txt"],
        [f"--work-tree={outside}", "checkout", "HEAD", "--", "."],
        [f"--work-tree={outside}/", "restore", "--source=HEAD", "."],
        [f"--work-tree={rel}", "status"],
        ["--work-tree=/", "ls-files", "--others", "etc"],
        ["--work-tree=out-link", "status"],
        ["--work-tree=out-link/.", "add", "-A"],
        ["-C", "sub", "--work-tree=../out-link", "status"],
        ["-C", "sub", "--work-tree=../..", "status"],
        ["--work-tree=..", "-C", "sub", "status"],  # relative to the final -C it is the root: over-read
        ["-C", "sub", f"--work-tree={'/'.join(['..'] * 8)}", "status"],
        [f"--git-dir={outside}", "status"],
        ["--git-dir", str(outside), "init"],
        [f"--git-dir={repo / '.git'}", f"--work-tree={outside}", "diff"],
    ]


async def test_work_tree_and_git_dir_outside_the_root_are_denied(root: Path, repo: Path, outside: Path) -> None:
    before = snapshot(root.parent, root)
    tool = git_tool(repo, confine_paths=False)  # git's own check, under the argument confinement
    for args in _spellings(outside, repo):
        try:
            await tool.execute({"command": "git", "args": args})
        except Denied as refused:
            assert "outside the working root" in refused.message, args
        else:
            pytest.fail(f"git ran with {args}")
    out = await tool.execute({"command": "git", "args": ["show", ":secret.txt"]})
    assert "TOP-SECRET" not in out["stdout"]
    assert snapshot(root.parent, root) == before
    assert _listing(outside) == {"secret.txt": "TOP-SECRET\n"}


@pytest.mark.parametrize("args", [["--work-tree=.", "status", "--short"], ["--work-tree", "sub/..", "status"],
                                  ["-C", "sub", "--work-tree=..", "status", "--short"],
                                  ["--git-dir=.git", "--work-tree=.", "log", "--oneline", "-n1"]])
async def test_work_tree_inside_the_root_still_works(repo: Path, args: list[str]) -> None:
    (repo / "sub").mkdir(exist_ok=True)
    out = await git_tool(repo).execute({"command": "git", "args": args})
    assert out["exit_code"] == 0, out["stderr"]


@pytest.fixture
def template(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A template folder the agent wrote, whose config defines a smudge filter the repo uses."""
    marker = tmp_path / "pwned"
    (repo / ".gitattributes").write_text("* filter=x\n")
    setup_git("add", ".gitattributes", cwd=repo)
    setup_git("commit", "-q", "-m", "attrs", cwd=repo)
    tpl = repo / "tpl"
    (tpl / "hooks").mkdir(parents=True)
    (tpl / "config").write_text(f'[filter "x"]\n\tsmudge = touch {marker}; cat\n')
    hook = tpl / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    return tpl, marker


TEMPLATE_SPELLINGS = [
    ["clone", "--template={tpl}", ".", "c1"],
    ["clone", "--template", "{tpl}", ".", "c2"],
    ["clone", "--templ={tpl}", ".", "c3"],
    ["clone", "--templat", "{tpl}", ".", "c4"],
    ["clone", "-q", "--template=tpl", ".", "c5"],
    ["clone", ".", "c6", "--template=tpl"],
    ["clone", "--", ".", "c7", "--template=tpl"],
    ["init", "--template={tpl}", "i1"],
    ["init", "--templ", "tpl", "i2"],
    ["-C", ".", "clone", "--template=tpl", ".", "c8"],
]


@pytest.mark.parametrize("args", TEMPLATE_SPELLINGS)
@pytest.mark.parametrize("mode", ["forbid-only", "allow-list"])
async def test_clone_and_init_templates_are_refused(repo: Path, template: tuple[Path, Path], args: list[str],
                                                    mode: str) -> None:
    tpl, marker = template
    rule: dict[str, object] = {}
    if mode == "allow-list":
        rule = {"allow_options": ["--template*", "--templ*", "-q", "-C"]}
    with pytest.raises(InvalidArguments) as refused:
        await git_tool(repo, **rule).execute({"command": "git", "args": [a.format(tpl=tpl) for a in args]})
    assert "whatever the allow-list says" in refused.value.message
    assert not exists(marker)


async def test_control_the_template_would_run_its_filter(repo: Path, template: tuple[Path, Path]) -> None:
    """The attack is live: plain git (no reach) runs the template's smudge filter."""
    tpl, marker = template
    setup_git("clone", "-q", f"--template={tpl}", ".", "control", cwd=repo)
    assert exists(marker)


async def test_an_honest_clone_still_works_and_runs_nothing(repo: Path, template: tuple[Path, Path]) -> None:
    _, marker = template
    out = await git_tool(repo).execute({"command": "git", "args": ["clone", "-q", ".", "copy"]})
    assert out["exit_code"] == 0, out["stderr"]
    assert (repo / "copy" / "a.txt").exists() and not exists(marker)
