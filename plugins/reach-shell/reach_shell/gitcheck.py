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
    away = outside_root(entries, base, root, subcommand)
    if away is not None:
        raise Denied(
            f"git was not run: {away} lies outside the working root {root}, and a `.git` file, "
            "`core.worktree`, a config key or an alternates file the agent can write must not take "
            "git there (to read another repository or file). Work on the repository inside the root.",
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


def outside_root(entries: list[ConfigEntry], base: Path, root: Path, subcommand: str = "") -> str | None:
    """The repository git would use, its `core.worktree`, a file a config key names, a local
    remote or an alternate object store, when one lies outside `root`.

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
        if entry.origin.startswith("file:"):  # an included file (`include.path`, `includeIf`) is read too
            origin = Path(resolve(str(base / entry.origin[len("file:") :])))
            if not origin.is_relative_to(root):
                return f"the config file {origin} (included as `{entry.key}`)"
        if entry.lower == "core.worktree" and entry.value:
            origin = Path(resolve(str(base / entry.origin[len("file:") :])))
            tree = Path(resolve(str(origin.parent / entry.value)))
            if not tree.is_relative_to(root):
                return f"the work tree {tree} (core.worktree in {origin})"
    git_dir = config.parent
    starts = (base, git_dir, git_dir.parent)  # git reads a relative path from where it runs: any of these
    remotes = subcommand in _CONTACTS or any(_lazy_fetches(e) for e in entries)
    for entry in entries:
        target = _names_a_path(entry, remotes) if entry.scope != "command" else None
        if target is None:
            continue
        away = _leads_out(target, starts, root)
        if away is not None:
            return f"{away} (`{entry.key}` in {entry.origin})"
    return _alternates_out(git_dir / "objects", root, depth=0)


#: Config keys whose value is a file git reads (`git_config_pathname`), matched without their subsection
#: (`http.<url>.sslCert`): `format.signatureFile` is appended to every patch, `blame.ignoreRevsFile`'s
#: first line came back in the error, and so on. Their contents reach the output or shape it.
_PATH_KEYS = frozenset({
    "format.signaturefile", "blame.ignorerevsfile", "commit.template", "mailmap.file", "mailmap.blob",
    "core.excludesfile", "diff.orderfile", "gpg.ssh.allowedsignersfile", "gpg.ssh.revocationfile",
    "http.cookiefile", "http.sslcert", "http.sslkey", "http.sslcainfo", "http.sslcapath",
    "http.proxysslcert", "http.proxysslkey", "http.proxysslcainfo", "init.templatedir",
})
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


#: Subcommands that contact a remote (a remote named in config, or a URL `insteadOf` rewrites).
_CONTACTS = frozenset({"fetch", "pull", "ls-remote", "remote", "push", "send-pack", "fetch-pack", "archive",
                       "clone"})


def _lazy_fetches(entry: ConfigEntry) -> bool:
    """A partial clone: any subcommand may fetch a missing object from the promisor remote."""
    return entry.lower == "extensions.partialclone" or (
        entry.parts[0] == "remote" and entry.parts[2] == "promisor" and (entry.value or "true").lower() != "false")


def _names_a_path(entry: ConfigEntry, remotes: bool) -> str | None:
    """The local path `entry` makes git read, or None: a path-valued key, or (when the call may contact
    a remote) a remote URL or an `url.<base>.insteadOf` base that is a folder or `file://` URL (another
    repository on this machine, whose objects a fetch copies into the root)."""
    section, subsection, name = entry.parts
    value = entry.value or ""
    if f"{section}.{name}" in _PATH_KEYS and value:
        return value if not value.startswith(":(optional)") else value[len(":(optional)") :]
    if not remotes:
        return None
    if section == "remote" and name in ("url", "pushurl") and value:
        return _local_url(value)
    if section == "url" and name in ("insteadof", "pushinsteadof") and subsection:
        return _local_url(subsection)
    return None


def _local_url(url: str) -> str | None:
    """The folder a git URL names on this machine, or None for a network URL (`https://`, `host:path`)."""
    if url.lower().startswith("file://"):
        rest = url[len("file://") :]
        return rest[rest.find("/") :] if "/" in rest else "/"
    if _SCHEME.match(url):
        return None
    colon, slash = url.find(":"), url.find("/")
    if colon > 0 and (slash < 0 or colon < slash):
        return None  # scp-like `host:path` (ssh)
    return url


def _leads_out(path: str, starts: Sequence[Path], root: Path) -> str | None:
    """`path` when it resolves outside `root` from any of `starts` (`~` and `%(prefix)/` always do)."""
    if path.startswith(("~", "%(prefix)")):
        return path
    for start in starts:
        real = Path(resolve(str(start / path)))
        if not real.is_relative_to(root):
            return str(real)
    return None


def _alternates_out(objects: Path, root: Path, depth: int) -> str | None:
    """An object store outside `root` that `objects/info/alternates` adds (git follows 5 levels)."""
    try:
        lines = (objects / "info" / "alternates").read_text(errors="surrogateescape").splitlines()
    except OSError:
        return None
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line.strip('"')  # a quoted line may hold escapes; its folder is what matters
        real = Path(resolve(str(objects / line)))
        if not real.is_relative_to(root):
            return f"the object store {real} (objects/info/alternates in {objects.parent})"
        if depth < 5:
            deeper = _alternates_out(real, root, depth + 1)
            if deeper is not None:
                return deeper
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
