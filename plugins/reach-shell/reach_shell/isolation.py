"""Config isolation: what a command reads besides its arguments is not the agent's to write.

An allow-listed `git status` runs whatever `core.fsmonitor` names; `git diff`
runs `diff.external`; `$HOME/.gitconfig` is read by every git. When the files
the agent can write include those, an allow-list of *options* is walked around
through *files*. So every run gets:

* private directories for each call, outside every root the agent can write:
  HOME (empty, read-only), TMPDIR, an empty global git config and an empty hooks
  directory, held by that call alone and reused only when left untouched;
* a minimal environment: PATH, LANG (C.UTF-8), HOME, TMPDIR, the operator's `env`,
  and the variables below that switch programs-by-config off;
* for git, configuration from the command line scope (`GIT_CONFIG_COUNT`, the
  environment form of `-c`, which wins over every file and reaches the git
  processes git itself starts) that switches off each single-valued
  program-running key, no system config (`GIT_CONFIG_NOSYSTEM`; `GIT_CONFIG_SYSTEM`
  an empty file of the call, so `git config --system` cannot write /etc/gitconfig), the
  empty global file (`GIT_CONFIG_GLOBAL`), no repository discovery above the root;
* before git runs, the configuration git is about to use is listed by git itself
  and each program-running key found in it is switched off too, or refuses the
  call when it cannot be (gitconfig.py);
* `--no-ext-diff --no-textconv` after diff-family subcommands and
  `--ignore-submodules=all` after `status`/`diff`, so a driver written between
  that check and the run, or a submodule's own config, is not used either;
* for ssh (and scp, sftp, and the ssh git and rsync start): a config file of the call, given
  with `-F`, so ssh reads neither the host user's ~/.ssh nor /etc/ssh/ssh_config. OpenSSH takes
  its home folder from the password database, not from HOME, so the private HOME alone left
  the host's ProxyCommand, keys, known_hosts and agent socket to the agent's ssh.
"""

from __future__ import annotations

import contextlib
import os
import shlex
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
     "PYTHONSTARTUP", "PYTHONPATH", "PERL5OPT", "RUBYOPT", "NODE_OPTIONS", "RSYNC_RSH", *STATIC_ENV}
)


#: git variables that only name who and when: the operator may set them (commits need them).
IDENTITY_ENV = frozenset(
    f"GIT_{who}_{what}" for who in ("AUTHOR", "COMMITTER") for what in ("NAME", "EMAIL", "DATE")
)


def managed_env_key(name: str) -> bool:
    if name in IDENTITY_ENV:
        return False
    return name in MANAGED_ENV or name.startswith(MANAGED_ENV_PREFIXES)


def ssh_config_text(home: Path) -> str:
    """The ssh config a call's ssh reads instead of the host user's and the system's.

    No agent socket and no default key (`~/.ssh/id_*` is the host user's, whatever HOME says):
    only the keys the agent names with `-i` (confined to the root) are offered. Host keys are
    looked up in the call's read-only HOME, which is empty, plus the system-wide known hosts; an
    unknown host is refused (BatchMode: nothing prompts), unless the agent passes its own `-o`.
    """
    # quoted as ssh splits a line; `%` doubled, else ssh expands it as a token
    known = str(home / "known_hosts").replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return (
        "# written by reach-shell: the ssh of one call reads no file of the host user's\n"
        "IdentityAgent none\n"
        "IdentityFile none\n"
        f'UserKnownHostsFile "{known}"\n'
        "BatchMode yes\n"
    )


def ssh_command(config: Path | None) -> str:
    """The ssh command line git and rsync run: `ssh -F <the call's config>` (plain `ssh` when the
    operator lets ssh read the host's config). Quoted for a shell, which rsync's splitting reads too."""
    return "ssh" if config is None else f"ssh -F {shlex.quote(str(config))}"


def git_overrides(hooks_dir: Path, ssh_config: Path | None = None) -> list[tuple[str, str]]:
    """Command-line-scope config: each single-valued key that runs a program, switched off."""
    return [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", str(hooks_dir)),
        ("core.pager", "cat"),
        ("core.editor", "true"),
        ("sequence.editor", "true"),
        ("core.sshCommand", ssh_command(ssh_config)),
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
        ("help.autocorrect", "0"),  # a typo must not run the nearest alias
        ("help.format", "man"),
        ("format.outputDirectory", "."),  # format-patch writes where it runs, not where config says
    ]


#: Config for one subcommand, race-free like GIT_INJECT. `push`, `send-pack` and `archive --remote`
#: to a repository on this machine run git *in that repository* (receive-pack, upload-archive),
#: where git clears the command-line config (GIT_CONFIG_COUNT) and its own config, hooks and
#: filters apply: `receive.denyCurrentBranch=updateInstead` + a smudge filter, `core.fsmonitor`,
#: `tar.<format>.command`. Local transports are switched off for them (network remotes still work).
GIT_SUB_CONFIG: dict[str, tuple[tuple[str, str], ...]] = {
    name: (("protocol.file.allow", "never"),) for name in ("push", "send-pack", "archive")
}
#: What git says when a local transport was refused, and what the model is told then.
LOCAL_TRANSPORT_REFUSED = "transport 'file' not allowed"
LOCAL_TRANSPORT_NOTE = (
    "reach-shell does not let `git {sub}` reach a repository on this machine (a path or file:// URL): "
    "git would run inside that repository with its own config, hooks and filters, which reach-shell "
    "cannot switch off there. Fetch or pull from the other repository instead (run in that repository), "
    "or push to a network remote."
)


#: Arguments added right after a git subcommand (race-free: no config can undo them).
GIT_INJECT = {
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=all"),
    "log": ("--no-ext-diff", "--no-textconv"),
    "show": ("--no-ext-diff", "--no-textconv"),
    "whatchanged": ("--no-ext-diff", "--no-textconv"),
    "status": ("--ignore-submodules=all",),
    "grep": ("--no-textconv",),
    "blame": ("--no-textconv",),
}


_POOL = 8  # idle sets kept per connector: enough for the usual concurrency


@dataclass(frozen=True)
class RunDirs:
    """One call's private directories (all under a base outside every writable root)."""

    top: Path
    home: Path
    tmp: Path
    git_global: Path
    hooks: Path
    #: where `git config --system` reads and *writes*: GIT_CONFIG_NOSYSTEM only stops reading, and
    #: reach often runs as root, so `git config --system core.fsmonitor ...` rewrote /etc/gitconfig,
    #: the config of every git on the host
    git_system: Path
    #: the config every ssh of the call reads (`-F`; ssh_config_text)
    ssh_config: Path

    @classmethod
    def create(cls, base: Path) -> RunDirs:
        top = Path(tempfile.mkdtemp(prefix="run-", dir=base))
        home, tmp, hooks = top / "home", top / "tmp", top / "hooks"
        for folder in (home, tmp, hooks):
            folder.mkdir(mode=0o700)
        git_global, git_system = top / "gitconfig", top / "gitconfig-system"
        git_global.touch(mode=0o400)
        git_system.touch(mode=0o400)
        ssh_config = top / "ssh_config"
        ssh_config.write_text(ssh_config_text(home))
        ssh_config.chmod(0o400)
        home.chmod(0o500)  # nothing may leave dotfiles for a later program
        hooks.chmod(0o500)
        return cls(top=top, home=home, tmp=tmp, git_global=git_global, hooks=hooks, git_system=git_system,
                   ssh_config=ssh_config)

    def pristine(self) -> bool:
        """Exactly as created: empty folders of the right mode, empty git configs, the ssh config unchanged."""
        try:
            for folder, mode in ((self.home, 0o500), (self.hooks, 0o500), (self.tmp, 0o700)):
                info = os.lstat(folder)
                if not stat.S_ISDIR(info.st_mode) or stat.S_IMODE(info.st_mode) != mode:
                    return False
                with os.scandir(folder) as entries:
                    if next(entries, None) is not None:
                        return False
            for config in (self.git_global, self.git_system):
                info = os.lstat(config)
                if not (stat.S_ISREG(info.st_mode) and info.st_size == 0 and info.st_nlink == 1):
                    return False
            info = os.lstat(self.ssh_config)
            if not (stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o400 and info.st_nlink == 1):
                return False
            return self.ssh_config.read_text() == ssh_config_text(self.home)
        except OSError:
            return False


class Isolation:
    """Chooses the private base directory once, then hands each call its own private dirs.

    A call gets a set no other running call holds. Sets are reused only when they
    are exactly as created (checked after the call and again before the next), so
    nothing one command leaves reaches another; a set with anything left in it is
    deleted. Reuse matters: creating and deleting folders costs milliseconds on
    a journalled disk, more than running `echo`.
    """

    def __init__(self, protected: list[Path], base_candidates: list[Path] | None = None) -> None:
        self.protected = [p.resolve() for p in protected]
        self._candidates = base_candidates or [
            Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/dev/shm")
        ]
        self._idle: list[RunDirs] = []
        self.base = self._pick_base()

    def _pick_base(self) -> Path | None:
        for candidate in self._candidates:
            with contextlib.suppress(OSError):
                real = candidate.resolve()
                if real.is_dir() and not self.inside_protected(real):
                    base = Path(tempfile.mkdtemp(prefix="reach-shell-", dir=real))
                    weakref.finalize(self, _remove, base)
                    return base
        return None

    def inside_protected(self, path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in self.protected)

    @contextlib.contextmanager
    def dirs(self) -> Iterator[RunDirs]:
        """Private dirs for one call, pristine; kept for reuse only if still pristine after."""
        run = self._acquire()
        try:
            yield run
        finally:
            if len(self._idle) < _POOL and run.pristine():
                self._idle.append(run)
            else:
                _remove(run.top)

    def _acquire(self) -> RunDirs:
        while self._idle:
            run = self._idle.pop()
            if run.pristine():
                return run
            _remove(run.top)
        if self.base is None or not self.base.is_dir():
            self.base = self._pick_base()
        if self.base is None:
            raise RuntimeError("no private directory outside the roots")
        return RunDirs.create(self.base)

    def env(self, dirs: RunDirs, base: Mapping[str, str], ceiling: Path, *, host_ssh: bool = False) -> dict[str, str]:
        """The environment of one call; `host_ssh`: the ssh git and rsync start reads the host's config."""
        ssh_config = None if host_ssh else dirs.ssh_config
        env = {**base, **STATIC_ENV, "HOME": str(dirs.home), "TMPDIR": str(dirs.tmp)}
        env["RSYNC_RSH"] = ssh_command(ssh_config)  # rsync's remote shell when no `-e` (refused) names one
        env["GIT_CONFIG_GLOBAL"] = str(dirs.git_global)
        env["GIT_CONFIG_SYSTEM"] = str(dirs.git_system)
        if ceiling != ceiling.parent:
            env["GIT_CEILING_DIRECTORIES"] = str(ceiling.parent)
        return with_git_config(env, git_overrides(dirs.hooks, ssh_config))


_PR_SET_DUMPABLE = 4


def hide_own_environment() -> bool:
    """Make reach's own /proc entries unreadable to the commands it runs (Linux).

    A command runs as reach's user, and `/proc/<pid>/environ` of a process of the same
    user is readable by default: `cat /proc/<reach's pid>/environ` (the pid is the
    child's PPid) printed the API keys reach was started with, however clean the
    child's own environment. A process that is not "dumpable" has its /proc entries
    owned by root, so another process of the same user cannot read them (reach still
    reads its own). Root reads them anyway: run reach as an ordinary user. Also turns
    off core dumps of reach (they would hold the same secrets). True when it took effect.
    """
    if not os.uname().sysname == "Linux":
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


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
    """rmtree, making read-only folders writable first; symlinks are unlinked, never followed."""

    def unlock(func: object, path: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            parent = os.path.dirname(path)
            if not os.path.islink(parent):
                os.chmod(parent, stat.S_IRWXU)
            if os.path.islink(path) or not os.path.isdir(path):
                os.unlink(path)
            else:
                os.chmod(path, stat.S_IRWXU)
                shutil.rmtree(path, onerror=unlock)

    for folder in (top, top / "home", top / "hooks"):
        with contextlib.suppress(OSError):
            if not folder.is_symlink():
                folder.chmod(stat.S_IRWXU)
    if top.is_symlink():
        top.unlink()
        return
    shutil.rmtree(top, onerror=unlock)
