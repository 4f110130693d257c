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
  and each program-running key found in it is switched off too, or refuses the
  call when it cannot be (gitconfig.py);
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
        return with_git_config(env, git_overrides(dirs.hooks))


def with_git_config(env: Mapping[str, str], overrides: list[tuple[str, str]]) -> dict[str, str]:
    """`env` plus `overrides` in the command-line scope (after any already there: last wins)."""
    out = dict(env)
    start = int(out.get("GIT_CONFIG_COUNT", "0"))
    for i, (key, value) in enumerate(overrides, start):
        out[f"GIT_CONFIG_KEY_{i}"] = key
        out[f"GIT_CONFIG_VALUE_{i}"] = value
    out["GIT_CONFIG_COUNT"] = str(start + len(overrides))
    return out


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
