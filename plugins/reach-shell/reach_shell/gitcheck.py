"""Before git runs: list the configuration it is about to read, disarm what runs programs.

git itself does the listing (`git config --list --show-scope --show-origin -z`)
with the same global options, directory and environment as the real call, so it
follows the same `.git` file, `--git-dir`, `-C`, includes and conditional
includes as the real call will. Parsing config files here instead would be a
second, slightly different git.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from reach_core import BusinessError, ConfigError, Denied

from .gitconfig import ConfigEntry, parse_config_list, plan_for
from .isolation import with_git_config
from .paths import resolve
from .process import run_argv

_LIST = ("config", "--list", "--show-scope", "--show-origin", "-z")
_SHOWN = 4


async def disarmed_env(
    binary: str,
    global_args: Sequence[str],
    subcommand: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    time_limit: float,
    root: Path,
    base: Path,
) -> dict[str, str]:
    """`env` plus overrides for the repository's program keys; `Denied` if one cannot be disarmed.

    `base` is where git will be after its `-C` options, for the relative paths it prints.
    """
    done = await run_argv(
        [binary, "--no-pager", *global_args, *_LIST],
        cwd=cwd,
        env=env,
        time_limit=time_limit,
        max_output_bytes=1_000_000,
    )
    if done.timed_out or done.exit_code != 0 or done.stdout.omitted:
        raise BusinessError(
            "git could not list the repository's configuration, so reach-shell did not run "
            f"the command: {done.stderr.text().strip()[:300] or 'no output'}. Check that the "
            "directory is a readable repository."
        )
    entries = parse_config_list(done.stdout.raw())
    away = outside_root(entries, base, root)
    if away is not None:
        raise Denied(
            f"git was not run: {away} lies outside the working root {root}, and a `.git` file "
            "or `core.worktree` the agent can write must not take git there. Work on the "
            "repository inside the root.",
            fix="keep repositories and their work trees inside the reach-shell root",
        )
    plan = plan_for(entries, subcommand)
    bad = plan.refused
    if not bad:
        return with_git_config(env, plan.overrides)
    keys = ", ".join(f"`{e.key}` ({e.scope}, {e.origin})" for e in bad[:_SHOWN])
    more = f" and {len(bad) - _SHOWN} more" if len(bad) > _SHOWN else ""
    raise Denied(
        f"git was not run: the repository's configuration sets {keys}{more}, which would make "
        f"`git {subcommand}` run another program and cannot be switched off. reach-shell does "
        "not run git with config that runs programs (the agent can write that config). Do not "
        "try to work around this; tell the user, who can remove those keys.",
        fix="remove the program-running keys from the repository's .git/config",
    )


def outside_root(entries: list[ConfigEntry], base: Path, root: Path) -> str | None:
    """The repository git would use, or its `core.worktree`, when either lies outside `root`.

    The first local entry always comes from the repository's own config file (an
    include is listed after the `include.path` line that names it), so its origin
    is the repository; `core.worktree` is relative to that directory.
    """
    local = [e for e in entries if e.scope in ("local", "worktree")]
    if not local or not local[0].origin.startswith("file:"):
        return None
    config = Path(resolve(str(base / local[0].origin[len("file:") :])))
    if not config.is_relative_to(root):
        return f"the repository {config.parent}"
    for entry in local:
        if entry.lower == "core.worktree" and entry.value:
            origin = Path(resolve(str(base / entry.origin[len("file:") :])))
            tree = Path(resolve(str(origin.parent / entry.value)))
            if not tree.is_relative_to(root):
                return f"the work tree {tree} (core.worktree in {origin})"
    return None


#: GIT_CONFIG_COUNT (the environment form of `-c`) arrived in git 2.31; older gits ignore it.
MIN_GIT = (2, 31)


def require_isolating_git(name: str, binary: str) -> None:
    """At start-up: a git too old to honour the overrides would run with them silently missing."""
    try:
        done = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10,
            env={"PATH": os.defpath}, stdin=subprocess.DEVNULL, check=False,
        )
        match = re.search(r"(\d+)\.(\d+)", done.stdout)
    except (OSError, subprocess.SubprocessError):
        match = None
    version = (int(match.group(1)), int(match.group(2))) if match else None
    if version is None or version < MIN_GIT:
        found = f"{version[0]}.{version[1]}" if version else "an unknown version"
        raise ConfigError(
            f"[plugins.reach-shell.commands.{name}]: {binary} is {found}; reach-shell needs git "
            f"{MIN_GIT[0]}.{MIN_GIT[1]} or later to switch off program-running config "
            "(GIT_CONFIG_COUNT). Install a newer git or remove the entry."
        )
