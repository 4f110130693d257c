"""Config isolation: what a command reads besides its arguments is not the agent's to write.

An allow-listed `git status` runs whatever `core.fsmonitor` names; `git diff`
runs `diff.external`; `$HOME/.gitconfig` is read by every git. When the files
the agent can write include those, an allow-list of *options* is walked around
through *files*. So every run gets:

* a private directory per call, outside every root the agent can write, holding
  HOME (empty, read-only), TMPDIR, an empty global git config and an empty hooks
  directory; it is deleted after the call;
* a minimal environment: PATH, LANG, LC_ALL, HOME, TMPDIR, the operator's `env`,
  and the variables below that switch programs-by-config off;
* for git, configuration from the command line scope (`GIT_CONFIG_COUNT`, the
  environment form of `-c`, which wins over every file and reaches the git
  processes git itself starts) that switches off each single-valued
  program-running key, no system config (`GIT_CONFIG_NOSYSTEM`), the empty
  global file (`GIT_CONFIG_GLOBAL`), no repository discovery above the root;
* before git runs, the configuration git is about to use is listed by git itself
  (`git config --list --show-scope`, same global options, same directory, so the
  same `.git` file / `--git-dir` / includes are followed); any key outside the
  command-line scope that makes git run a program (named drivers such as
  `filter.<x>.clean` or `diff.<x>.textconv` cannot be overridden, aliases,
  includes...) refuses the call;
* `--no-ext-diff --no-textconv` after diff-family subcommands and
  `--ignore-submodules=all` after `status`/`diff`, so a driver written between
  that check and the run, or a submodule's own config, is not used either.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

#: Variables every run gets, whatever the program: any program may start git or tar.
STATIC_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    # GNU tar: `-f host:file` is a local file, never `rsh host`; file lists hold names only.
    "TAR_OPTIONS": "--force-local --verbatim-files-from",
}

#: Names the operator's `env` may not set: isolation owns them.
MANAGED_ENV_PREFIXES = ("GIT_", "LD_", "DYLD_", "XDG_")
MANAGED_ENV = frozenset(
    {"HOME", "TMPDIR", "TMP", "TEMP", "BASH_ENV", "ENV", "SHELL", "SSH_ASKPASS", "GNUPGHOME",
     "PYTHONSTARTUP", "PYTHONPATH", "PERL5OPT", "RUBYOPT", "NODE_OPTIONS", *STATIC_ENV}
)


def managed_env_key(name: str) -> bool:
    return name in MANAGED_ENV or name.startswith(MANAGED_ENV_PREFIXES)


def git_overrides(hooks_dir: Path) -> list[tuple[str, str]]:
    """Command-line-scope config: each single-valued key that runs a program, switched off."""
    return [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", str(hooks_dir)),
        ("core.pager", "cat"),
        ("core.editor", "true"),
        ("sequence.editor", "true"),
        ("core.sshCommand", "ssh"),
        ("core.askPass", ""),
        ("credential.helper", ""),  # an empty value resets the helper list
        ("protocol.ext.allow", "never"),
        ("gpg.program", "gpg"),
        ("gpg.x509.program", "gpgsm"),
        ("gpg.ssh.program", "ssh-keygen"),
        ("log.showSignature", "false"),
        ("diff.ignoreSubmodules", "all"),
        ("submodule.recurse", "false"),
        ("status.submoduleSummary", "false"),
        ("core.attributesFile", os.devnull),
    ]


#: Keys that make git run a program (lower case, as `git config --list` prints them;
#: `*` spans a subsection, dots included). Found outside the command-line scope, they
#: refuse the call.
RUNS_PROGRAMS = (
    "core.fsmonitor", "core.hookspath", "core.pager", "core.editor", "core.sshcommand",
    "core.askpass", "core.gitproxy", "core.alternaterefscommand", "core.attributesfile",
    "core.worktree", "sequence.editor", "diff.external", "diff.*.command", "diff.*.textconv",
    "diff.tool", "diff.guitool", "difftool.*", "merge.*.driver", "merge.tool", "merge.guitool",
    "mergetool.*", "filter.*", "credential.helper", "credential.*.helper", "alias.*",
    "gpg.program", "gpg.*.program", "gpg.ssh.defaultkeycommand", "include.*", "includeif.*",
    "remote.*.uploadpack", "remote.*.receivepack", "remote.*.vcs", "protocol.*allow",
    "submodule.*.update",
    "interactive.difffilter", "web.browser", "browser.*", "man.*", "help.browser", "sendemail.*",
    "instaweb.*", "ssh.variant", "uploadpack.*", "uploadarchive.*", "receive.procreceiverefs",
    "fsmonitor.*", "trace2.*",
)
_BOOLEANS = frozenset({"", "true", "false", "yes", "no", "on", "off", "1", "0"})

#: Arguments added right after a git subcommand (race-free: no config can undo them).
GIT_INJECT = {
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=all"),
    "log": ("--no-ext-diff", "--no-textconv"),
    "show": ("--no-ext-diff", "--no-textconv"),
    "whatchanged": ("--no-ext-diff", "--no-textconv"),
    "status": ("--ignore-submodules=all",),
    "grep": ("--no-textconv",),
}


@dataclass(frozen=True)
class ConfigEntry:
    scope: str
    origin: str
    key: str
    value: str | None


def parse_config_list(output: bytes) -> list[ConfigEntry]:
    """`git config --list --show-scope --show-origin -z`: scope NUL origin NUL key LF value NUL."""
    fields = output.decode("utf-8", errors="replace").split("\0")
    entries = []
    for i in range(0, len(fields) - 2, 3):
        scope, origin, item = fields[i], fields[i + 1], fields[i + 2]
        key, has_value, value = item.partition("\n")
        entries.append(ConfigEntry(scope, origin, key.lower(), value if has_value else None))
    return entries


def program_running(entries: list[ConfigEntry]) -> list[ConfigEntry]:
    """Entries, outside the command-line scope, that would make git run a program."""
    bad = []
    for entry in entries:
        if entry.scope == "command":
            continue
        if entry.key.startswith("pager."):
            if (entry.value or "").strip().lower() not in _BOOLEANS:
                bad.append(entry)
            continue
        if any(fnmatchcase(entry.key, pattern) for pattern in RUNS_PROGRAMS):
            bad.append(entry)
    return bad


@dataclass(frozen=True)
class RunDirs:
    """One call's private directories (all under a base outside every writable root)."""

    home: Path
    tmp: Path
    git_global: Path
    hooks: Path


class Isolation:
    """Chooses the private base directory once, then builds each call's dirs and environment."""

    def __init__(self, protected: list[Path], base_candidates: list[Path] | None = None) -> None:
        self.protected = [p.resolve() for p in protected]
        candidates = base_candidates or [Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/dev/shm")]
        self.base = self._pick_base(candidates)

    def _pick_base(self, candidates: list[Path]) -> Path | None:
        for candidate in candidates:
            with contextlib.suppress(OSError):
                real = candidate.resolve()
                if real.is_dir() and not self.inside_protected(real):
                    base = Path(tempfile.mkdtemp(prefix="reach-shell-", dir=real))
                    weakref.finalize(self, shutil.rmtree, base, True)
                    return base
        return None

    def inside_protected(self, path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in self.protected)

    @contextlib.contextmanager
    def dirs(self) -> Iterator[RunDirs]:
        """Fresh private dirs for one call; removed afterwards, whatever the command left."""
        if self.base is None or not self.base.is_dir():
            self.base = self._pick_base([Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/dev/shm")])
        if self.base is None:
            raise RuntimeError("no private directory outside the roots")
        top = Path(tempfile.mkdtemp(prefix="run-", dir=self.base))
        try:
            home, tmp, hooks = top / "home", top / "tmp", top / "hooks"
            for folder in (home, tmp, hooks):
                folder.mkdir(mode=0o700)
            git_global = top / "gitconfig"
            git_global.touch(mode=0o400)
            home.chmod(0o500)  # nothing may leave dotfiles for the next program of this call
            hooks.chmod(0o500)
            yield RunDirs(home=home, tmp=tmp, git_global=git_global, hooks=hooks)
        finally:
            _remove(top)

    def env(self, dirs: RunDirs, base: Mapping[str, str], ceiling: Path) -> dict[str, str]:
        env = {**base, **STATIC_ENV, "HOME": str(dirs.home), "TMPDIR": str(dirs.tmp)}
        env["GIT_CONFIG_GLOBAL"] = str(dirs.git_global)
        if ceiling != ceiling.parent:
            env["GIT_CEILING_DIRECTORIES"] = str(ceiling.parent)
        overrides = git_overrides(dirs.hooks)
        env["GIT_CONFIG_COUNT"] = str(len(overrides))
        for i, (key, value) in enumerate(overrides):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
        return env


def _remove(top: Path) -> None:
    """rmtree, making read-only folders writable first (a command may have chmod-ed more)."""

    def unlock(func: object, path: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), stat.S_IRWXU)
            os.chmod(path, stat.S_IRWXU)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)

    for folder in (top, top / "home", top / "hooks"):
        with contextlib.suppress(OSError):
            folder.chmod(stat.S_IRWXU)
    shutil.rmtree(top, onerror=unlock)
