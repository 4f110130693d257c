"""The repository's own configuration, read by git, and how each program-running key is disarmed.

The repository config (`.git/config`, `config.worktree`, and whatever they
include) is as writable by the agent as any file in the root. Keys with a fixed
name (`core.fsmonitor`, `core.pager`, ...) are overridden for every run
(isolation.py). Keys named after a driver (`filter.<x>.clean`,
`diff.<x>.textconv`, `credential.<url>.helper`, `remote.<r>.uploadpack`) can only
be overridden once their names are known, so git lists its configuration first
and each such key gets a command-line-scope override of its exact name:

* `filter.<x>.clean/smudge/process` -> empty (no filter), `required` -> false;
* `diff.<x>.textconv` -> `cat` (identity: the file as it is);
* `credential.<url>.helper` -> empty (resets the helper list);
* `remote.<r>.uploadpack/receivepack` -> git's own programs;
* `pager.<cmd>` with a command -> false.

`diff.external` and `diff.<x>.command` cannot be switched off by config. Of the
porcelain only `git diff` runs them unasked (log, show, format-patch, status -v,
add -p do not), and it gets `--no-ext-diff` (isolation.GIT_INJECT); `stash`,
whose `show` is a diff too, is refused while they are set. An alias with the subcommand's name,
and the keys nothing can disarm (`merge.<x>.driver`, `core.gitProxy`,
`core.alternateRefsCommand`, `remote.<r>.vcs`, `interactive.diffFilter`,
`gpg.ssh.defaultKeyCommand`, `trailer.<t>.cmd`/`.command`; `tar.<format>.command` for
`git archive`) refuse the call.

A driver defined *after* this listing and before the run (a concurrent write)
escapes the per-name overrides; the fixed-name overrides and the injected
arguments do not depend on timing. docs/plugins/reach-shell.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

_BOOLEANS = frozenset({"", "true", "false", "yes", "no", "on", "off", "1", "0"})

#: Switched off for every run already (isolation.git_overrides): nothing to do here.
_FIXED = frozenset(
    {"core.fsmonitor", "core.hookspath", "core.pager", "core.editor", "sequence.editor",
     "core.sshcommand", "core.askpass", "credential.helper", "gpg.program", "gpg.x509.program",
     "gpg.ssh.program", "core.attributesfile", "log.showsignature"}
)
#: Program-running keys nothing can switch off: the call is refused while they are set.
_REFUSE = ("merge.*.driver", "core.gitproxy", "core.alternaterefscommand", "remote.*.vcs",
           "interactive.difffilter", "gpg.ssh.defaultkeycommand", "gpg.*.program",
           # a shell command run for each `--trailer <token>` (interpret-trailers, commit, am, rebase)
           "trailer.*.cmd", "trailer.*.command")
#: Keys read by one subcommand only: the call is refused while they are set (another keeps working).
_REFUSE_FOR = {
    "archive": ("tar.*.command",),  # the compressor of a format, `--format` or `-o name.<format>` picks it
}
_EXTERNAL_DIFF = ("diff.external", "diff.*.command")
#: Subcommands that may run an external diff without `--ext-diff` and cannot take `--no-ext-diff`.
_EXT_DIFF_UNINJECTED = frozenset({"stash"})


@dataclass(frozen=True)
class ConfigEntry:
    """One line of `git config --list`: section and variable in lower case, subsection as written."""

    scope: str
    origin: str
    key: str
    value: str | None

    @property
    def parts(self) -> tuple[str, str | None, str]:
        section, _, rest = self.key.partition(".")
        subsection, _, name = rest.rpartition(".")
        return section.lower(), (subsection or None), name.lower()

    @property
    def lower(self) -> str:
        section, subsection, name = self.parts
        return f"{section}.{subsection}.{name}" if subsection is not None else f"{section}.{name}"


@dataclass
class Plan:
    """What the run needs: extra overrides, or the reasons it must not run at all."""

    overrides: list[tuple[str, str]] = field(default_factory=list)
    refused: list[ConfigEntry] = field(default_factory=list)


def parse_config_list(output: bytes) -> list[ConfigEntry]:
    """`git config --list --show-scope --show-origin -z`: scope NUL origin NUL key LF value NUL."""
    fields = output.decode("utf-8", errors="surrogateescape").split("\0")
    entries = []
    for i in range(0, len(fields) - 2, 3):
        scope, origin, item = fields[i], fields[i + 1], fields[i + 2]
        key, has_value, value = item.partition("\n")
        entries.append(ConfigEntry(scope, origin, key, value if has_value else None))
    return entries


def plan_for(entries: list[ConfigEntry], subcommand: str) -> Plan:
    """Overrides for every driver-named program key; refusals for what cannot be disarmed."""
    plan = Plan()
    for entry in entries:
        if entry.scope == "command":
            continue
        section, subsection, name = entry.parts
        key = entry.lower
        if key in _FIXED or section in ("include", "includeif"):
            continue  # overridden for every run / the included keys are listed themselves
        if section == "filter" and subsection is not None:
            if name in ("clean", "smudge", "process"):
                plan.overrides.append((entry.key, ""))
            elif name == "required":
                plan.overrides.append((entry.key, "false"))
        elif section == "diff" and subsection is not None and name == "textconv":
            plan.overrides.append((entry.key, "cat"))
        elif section == "credential" and name == "helper":
            plan.overrides.append((entry.key, ""))
        elif section == "remote" and name in ("uploadpack", "receivepack"):
            plan.overrides.append((entry.key, f"git-{name[:-4]}-pack"))
        elif section == "pager" and (entry.value or "").strip().lower() not in _BOOLEANS:
            plan.overrides.append((entry.key, "false"))
        elif any(fnmatchcase(key, p) for p in _EXTERNAL_DIFF):
            if subcommand in _EXT_DIFF_UNINJECTED:
                plan.refused.append(entry)
        elif section == "alias" and subsection is None and name == subcommand.lower():
            plan.refused.append(entry)
        elif any(fnmatchcase(key, p) for p in (*_REFUSE, *_REFUSE_FOR.get(subcommand, ()))):
            plan.refused.append(entry)
    return plan
