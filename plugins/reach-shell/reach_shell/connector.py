"""The `run_command` tool: one allow-listed program, literal arguments, bounded run."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from reach_core import ConfigError, Connector, Denied, InvalidArguments

from .argv import ArgvRefused, check_and_parse
from .exposure import overlap_problems, warn
from .gitcheck import disarmed_env, require_isolating_git
from .gittodo import refuse_exec_todo
from .grammar import Grammar, Parsed
from .isolation import (
    GIT_INJECT,
    GIT_SUB_CONFIG,
    LOCAL_TRANSPORT_NOTE,
    LOCAL_TRANSPORT_REFUSED,
    Isolation,
    RunDirs,
    hide_own_environment,
    with_git_config,
)
from .links import links_leading_out, links_seen, sweep_way_outs
from .paths import check_escapes, check_paths, link_follower, resolve, working_dirs
from .process import Completed, run_argv, sweep_escaped
from .programs import GIT, SFTP, SSH, grammar_for
from .settings import ShellSettings

# Our own timeout must fire before the core's deadline so the model gets the
# partial output and "timed out" rather than a bare outcome_unknown.
_CORE_DEADLINE_MARGIN = 5.0
_DEADLINE_SAFETY = 0.25
REMOVED_NOTE = (
    "The command made symbolic links that lead out of the working root, device files or "
    "set-user/group-ID files; the links and devices were removed and the bits taken off "
    "(`removed`), so no later call or local user can reach past the root through them."
)


class RunCommand(Connector):
    """Runs a program from the allow-list; the model never reaches a shell."""

    name = "run_command"
    tags = ("shell", "system")
    risk = "dangerous"
    idempotent = False
    max_retries = 0
    #: a model's calls of one turn run one after another, in its order: a call that made a
    #: link leading out has it removed before the next starts (`links.py`), and commands
    #: that build on each other (`mkdir`, then a write into it) see each other's effects.
    sequential = True

    def __init__(self, settings: ShellSettings, *, writable_roots: list[Path] | None = None,
                 redactor: Any = None) -> None:
        """`writable_roots`: directories the agent can write through other tools (reach-files);
        `redactor`: the Reach's, which masks the warnings logged here."""
        self.settings = settings
        self.root = _resolve_root(settings)
        self.binaries = {
            name: _resolve_binary(name, rule.path, settings.search_path)
            for name, rule in settings.commands.items()
        }
        self.grammars: dict[str, Grammar] = {}
        self.prefixes: dict[str, tuple[str, ...]] = {}  # put before the model's arguments
        for name, rule in settings.commands.items():
            grammar = grammar_for(name, self.binaries[name], rule.grammar)
            self.grammars[name], self.prefixes[name] = _sandboxed(
                name, self.binaries[name], grammar, settings.search_path
            )
        for name, grammar in self.grammars.items():
            if grammar is GIT:
                require_isolating_git(name, self.binaries[name])
        writable = list(writable_roots or [])
        if settings.commands:
            hide_own_environment()  # before any command can run: /proc/<reach>/environ holds secrets
        self.isolation = Isolation([self.root, *writable])
        if settings.commands and self.isolation.base is None:
            raise ConfigError(
                "[plugins.reach-shell]: no temporary directory outside the roots the agent can "
                "write (HOME and TMPDIR of every command live there); set TMPDIR for reach to "
                "a directory outside them"
            )
        # where the root's links lead now: a link that later comes to lead out unchanged (its
        # folder moved up) is told from a deployment's own (links.py)
        confined = any(settings.confines(name) for name in settings.commands)
        self.links_seen = links_seen(self.root) if confined else {}
        self.exposure = overlap_problems(self.root, settings.search_path, self.binaries, writable)
        warn(self.exposure, redactor)
        self.env = _fixed_env(settings)
        slowest = max(
            (settings.timeout_for(n) for n in settings.commands), default=settings.timeout
        )
        self.timeout = slowest + _CORE_DEADLINE_MARGIN
        self.description = _describe(settings)
        self.input_schema = _schema(settings)  # type: ignore[misc]  # enum from settings

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        command = params.get("command")
        if command not in self.binaries:
            raise InvalidArguments(
                "command", "one of: " + ", ".join(sorted(self.binaries)), sorted(self.binaries)[0]
            )
        rule = self.settings.commands[command]
        grammar = self.grammars[command]
        try:
            args, parsed = check_and_parse(
                command,
                params.get("args") or [],
                rule,
                max_arg_chars=self.settings.max_arg_chars,
                max_total_chars=self.settings.max_total_arg_chars,
                grammar=grammar,
            )
        except ArgvRefused as refused:
            raise InvalidArguments(refused.field, refused.expected, refused.example) from None
        cwd = self._working_dir(params.get("cwd"))
        if self.settings.confines(command):
            try:
                check_escapes(command, parsed, grammar)
                check_paths(command, args, self.root, working_dirs(args, parsed, cwd, git=grammar is GIT), grammar)
            except ArgvRefused as refused:
                raise InvalidArguments(refused.field, refused.expected, refused.example) from None
            await self._check_links_followed(command, parsed, grammar)
        limit = self._time_left(command, ctx)
        binary = self.binaries[command]
        with self.isolation.dirs() as dirs:
            env = self.isolation.env(dirs, self.env, self.root, host_ssh=self.settings.ssh_host_config)
            if grammar is GIT:
                loop = asyncio.get_running_loop()
                ends = loop.time() + limit
                args, env = await self._git_checked(binary, args, parsed, cwd, env, limit)
                limit = max(ends - loop.time(), 0.1)  # the listing spent part of the budget
            started = time.time() - 1.0  # ctime granularity: a second of slack costs little
            removed: list[str] = []
            try:
                done = await run_argv(
                    [binary, *self.prefixes[command], *self._ssh_config(grammar, dirs), *args],
                    cwd=cwd,
                    env=env,
                    time_limit=limit,
                    max_output_bytes=self.settings.max_output_bytes,
                )
            finally:  # before the dirs can go to another call: what left the group dies too
                sweep_escaped(dirs.home, since=started)
                if self.settings.confines(command):  # even when cancelled: a link made stays made
                    # a walk of the whole root: off the event loop (it finishes even if this waits no more)
                    removed = await asyncio.to_thread(sweep_way_outs, self.root, started, self.links_seen)
        content = _content(command, done, limit)
        if removed:
            content["removed"] = removed
            _add_note(content, REMOVED_NOTE)
        if grammar is GIT and parsed.subcommand in GIT_SUB_CONFIG and LOCAL_TRANSPORT_REFUSED in content["stderr"]:
            _add_note(content, LOCAL_TRANSPORT_NOTE.format(sub=parsed.subcommand))
        return content

    def _ssh_config(self, grammar: Grammar, dirs: RunDirs) -> tuple[str, ...]:
        """`-F <the call's ssh config>` first for ssh, scp and sftp (they pass it on to the ssh they run).

        OpenSSH finds ~/.ssh through the password database, not HOME: without it the agent's
        ssh read the host user's config (ProxyCommand, Include), keys, known_hosts and agent."""
        if grammar not in (SSH, SFTP) or self.settings.ssh_host_config:
            return ()
        return ("-F", str(dirs.ssh_config))

    async def _git_checked(
        self, binary: str, args: list[str], parsed: Parsed, cwd: Path, env: dict[str, str],
        limit: float,
    ) -> tuple[list[str], dict[str, str]]:
        """Switch the repository's program-running keys off for the run (or refuse it)."""
        at, subcommand = parsed.subcommand_index, parsed.subcommand
        if at is None or subcommand is None:
            return args, env  # `git --version`, `git -h`: no repository is read
        base = cwd
        named: list[tuple[str, Path, str]] = []  # (option, -C folder where it was written, value)
        for found in parsed.options:
            if found.index >= at or found.option is None:
                continue
            if "-C" in found.option.names:
                base = base / (found.value or "")  # an absolute value replaces, as in git
            elif {"--work-tree", "--git-dir"} & set(found.option.names):
                named.append((found.display, base, found.value or ""))
        away = _named_outside(cwd, base, named, self.root)
        if away is not None:
            option, real = away
            raise Denied(
                f"git was not run: `{option}` names {real}, outside the working root {self.root}; "
                "a repository and its work tree must lie inside the root (as `core.worktree` must). "
                "Leave the option out or name a folder inside the root.",
                fix="keep repositories and their work trees inside the reach-shell root",
            )
        env = await disarmed_env(
            binary, args[:at], subcommand, cwd=cwd, env=env, time_limit=limit,
            root=self.root, base=base,
        )
        if "--abort" not in args[at + 1 :] and "--quit" not in args[at + 1 :]:
            await refuse_exec_todo(binary, args[:at], subcommand, cwd=cwd, env=env, time_limit=limit)
        extra = list(GIT_INJECT.get(subcommand, ()))
        env = with_git_config(env, list(GIT_SUB_CONFIG.get(subcommand, ())))
        return [*args[: at + 1], *extra, *args[at + 1 :]], env

    async def _check_links_followed(self, command: str, parsed: Parsed, grammar: Grammar) -> None:
        """Refuse a call that follows the links in its input while the root holds one leading out.

        The sweep keeps a deployment's own links (`data -> /srv/data`), and the path check refuses
        every argument through them; but `tar -xf a.tar` with a member `data/x` wrote
        `/srv/data/x`, a member `h` hard-linked to `data/secret` left a name in the root for a
        file outside, and `cp -rL`, `grep -R`, `find -L`, `zip -r` read what the link led to.
        The root is walked afresh (a link the deployment added since the last sweep counts too),
        only for such calls."""
        follower = link_follower(parsed, grammar)
        if follower is None:
            return
        out = await asyncio.to_thread(links_leading_out, self.root)
        if out:
            field, why = follower
            shown = ", ".join(f"`{link}`" for link in out[:3]) + (f" and {len(out) - 3} more" if len(out) > 3 else "")
            raise InvalidArguments(
                field,
                f"a call that does not follow symbolic links out of the root; {why}, and the root holds "
                f"links leading out ({shown}), so reach-shell refuses it while paths are confined. Remove or "
                "replace those links, or name the files as arguments",
                "the same call without that option",
            )

    def lint_problems(self) -> list[tuple[str, str]]:
        """For `reach tools lint`: ways the agent can change what an allowed command does."""
        return [("shell_root_overlap", problem) for problem in self.exposure]

    def _working_dir(self, cwd: object) -> Path:
        """`cwd` relative to the root; resolved first (symlinks, `..`), then contained."""
        if cwd in (None, "", "."):
            return self.root
        if not isinstance(cwd, str) or "\x00" in cwd:
            raise InvalidArguments("cwd", "a directory path relative to the root", "src")
        try:
            target = (self.root / cwd).resolve()
            is_dir = target.is_dir()
        except (OSError, RuntimeError) as exc:  # ENAMETOOLONG, EACCES; a symlink loop (RuntimeError before 3.13)
            raise InvalidArguments(
                "cwd", f"a directory path the system can open ({getattr(exc, 'strerror', None) or exc})", "src"
            ) from None
        if not target.is_relative_to(self.root):
            raise InvalidArguments(
                "cwd", "a directory inside the working root (no `..`, no absolute path)", "src"
            )
        if not is_dir:
            raise InvalidArguments("cwd", f"an existing directory; `{cwd}` is not one", ".")
        return target

    def _time_left(self, command: str, ctx: Any) -> float:
        limit = self.settings.timeout_for(command)
        deadline = getattr(ctx, "deadline", None)
        if deadline is not None:
            remaining = deadline - asyncio.get_running_loop().time() - _DEADLINE_SAFETY
            limit = min(limit, max(remaining, 0.1))
        return limit


def _named_outside(cwd: Path, base: Path, named: list[tuple[str, Path, str]], root: Path) -> tuple[str, Path] | None:
    """The first `--work-tree`/`--git-dir` that leads out of `root`, symlinks followed.

    git reads a relative value after every `-C` (`base`); the folder it was written
    beside is checked too, so neither reading can leave the root.
    """
    for option, written_at, value in named:
        for where in (written_at / value, base / value):
            real = Path(resolve(str(cwd / where)))
            if not real.is_relative_to(root):
                return option, real
    return None


def _add_note(content: dict[str, Any], note: str) -> None:
    """A result holds one `note`: a second one is appended to the first."""
    content["note"] = f"{content['note']} {note}" if content.get("note") else note


def _content(command: str, done: Completed, limit: float) -> dict[str, Any]:
    content: dict[str, Any] = {
        "exit_code": done.exit_code,
        "stdout": done.stdout.text(),
        "stderr": done.stderr.text(),
    }
    if done.timed_out:
        content["timed_out"] = True
        content["note"] = (
            f"`{command}` ran past its {limit:g} s limit and was stopped (its whole process "
            "group was killed); the output above is partial. Narrow the command before "
            "trying again."
        )
    return content


def _resolve_root(settings: ShellSettings) -> Path:
    if settings.root is None:
        return Path.cwd().resolve()  # only reached with no commands: nothing ever runs
    root = settings.root.expanduser()
    if not root.is_dir():
        raise ConfigError(
            f"[plugins.reach-shell] root = {str(root)!r} is not an existing directory"
        )
    return root.resolve()


def _resolve_binary(name: str, path: str | None, search_path: str) -> str:
    """Absolute path fixed at start-up: a later PATH or cwd change cannot swap the program."""
    found = path or shutil.which(name, path=search_path)
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        where = f"path {path!r}" if path else f"search_path {search_path!r}"
        raise ConfigError(
            f"[plugins.reach-shell.commands.{name}]: no executable found at {where}; "
            "install it, set `path`, or remove the entry"
        )
    return os.path.abspath(found)


def _sandboxed(
    name: str, binary: str, grammar: Grammar, search_path: str
) -> tuple[Grammar, tuple[str, ...]]:
    """The grammar to check with and the arguments to put first (`sed --sandbox`).

    The binary is run once with the sandbox switch: GNU sed and gawk accept it, mawk and
    busybox do not. Without it awk falls back to checking its program text; a sed without
    it cannot be made safe (its `e` command runs a shell command), so it is a ConfigError.
    """
    if not grammar.sandbox:
        return grammar, ()
    try:
        done = subprocess.run(
            [binary, *grammar.sandbox, *grammar.sandbox_probe],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
            env={"PATH": search_path, "LANG": "C.UTF-8"}, check=False,
        )
        works = done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        works = False
    if works:
        return grammar, grammar.sandbox
    if grammar.unsandboxed is not None:
        return grammar.unsandboxed, ()
    raise ConfigError(
        f"[plugins.reach-shell.commands.{name}]: {binary} does not accept "
        f"{' '.join(grammar.sandbox)}, which reach-shell needs to keep `{name}` from running "
        "programs or reading files no argument names (sed's `e` command runs a shell command, "
        "ctags reads `./.ctags.d/*.ctags`, sqlite3's `.shell`); install GNU sed 4.3 or newer, "
        "Universal Ctags, sqlite3 3.37 or newer, or remove the entry"
    )


def _fixed_env(settings: ShellSettings) -> dict[str, str]:
    """Nothing inherited: tokens in reach's own environment never reach the child.

    HOME, TMPDIR and the isolation variables are added per call (isolation.py).
    """
    return {
        "PATH": settings.search_path,
        "LANG": "C.UTF-8",
        **settings.env,
    }


def _describe(settings: ShellSettings) -> str:
    lines = [
        "Run one allowed program with literal arguments. Use when the user asks to run "
        "a command or when a task needs one of the programs below. There is no shell: pipes, `;`, "
        "`&&`, `$(...)`, redirections and globs like `*.py` are passed as plain text, "
        "so call one program at a time and name files explicitly. Returns exit_code, "
        "stdout and stderr (long output keeps its start and end). Allowed programs:",
    ]
    for name, rule in sorted(settings.commands.items()):
        line = f"- {name}"
        if rule.description:
            line += f": {rule.description}"
        if rule.subcommands is not None:
            line += f" (subcommands: {', '.join(rule.subcommands) or 'none'})"
        if rule.allow_options is not None:
            line += f" (options: {', '.join(rule.allow_options) or 'none'})"
        lines.append(line)
    return "\n".join(lines)


def _schema(settings: ShellSettings) -> dict[str, Any]:
    names = sorted(settings.commands)
    max_args = max((rule.max_args for rule in settings.commands.values()), default=0)
    return {
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "enum": names,
                "description": "Program name from the allowed list, without a path.",
            },
            "args": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": max_args,
                "description": "Arguments, each passed to the program exactly as written.",
            },
            "cwd": {
                "type": "string",
                "description": "Directory relative to the working root; default the root.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }
