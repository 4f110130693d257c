"""Settings of `[plugins.reach-shell]`: the allow-list and the bounds of every run."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_COMMAND_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\Z")

DEFAULT_SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"


class CommandRule(BaseModel):
    """One allow-listed program: where it lives and which options it may get.

    Option patterns are shell-style globs (`fnmatch`) matched against the whole
    argument (`--output=/etc/x`) and against its option name (`--output`).
    `forbid_options` always wins; when `allow_options` is set, every option must
    match one of its patterns (allow-list mode, the safer one).
    """

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(
        default=None,
        description="Absolute path of the binary; default: looked up on `search_path` at start-up.",
    )
    description: str | None = Field(
        default=None, description="One line shown to the model: what the program is for."
    )
    allow_options: list[str] | None = Field(
        default=None, description="Only these option patterns pass (None: any not forbidden)."
    )
    forbid_options: list[str] = Field(
        default_factory=list, description="Option patterns that are always refused."
    )
    subcommands: list[str] | None = Field(
        default=None,
        description="When set, the first plain argument must be one of these (git: log, diff).",
    )
    grammar: Literal[
        "git", "tar", "sort", "find", "env", "launcher", "sed", "awk", "response-files", "rsync",
        "zip", "wget", "ssh", "split", "checksums", "shasum", "file", "xz", "gettext", "ctags", "curl",
        "openssl", "jq", "less", "bsdtar", "7z", "man", "ssh-keygen", "gpg", "groff", "sftp",
        "default",
    ] | None = Field(
        default=None,
        description="How the program reads its options; default: from the binary's name "
        "(git, tar, sort, find, env, sed, awk, launchers such as xargs and timeout, gcc and "
        "binutils, md5sum/sha*sum/b2sum/cksum, file, xz, curl, ...), else the conservative default.",
    )
    max_args: int = Field(default=32, ge=0, le=4096)
    confine_paths: bool | None = Field(
        default=None,
        description="Refuse arguments naming a path outside `root` (absolute, `..`, `~`, links "
        "leading out); default: the plugin's `confine_paths`.",
    )
    timeout: float | None = Field(
        default=None, gt=0, description="Seconds before the process group is killed."
    )

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not Path(value).is_absolute():
            raise ValueError(f"path must be absolute, got {value!r}")
        return value

    @field_validator("allow_options", "forbid_options")
    @classmethod
    def _options_look_like_options(cls, value: list[str] | None) -> list[str] | None:
        for pattern in value or ():
            _exact(pattern, "option pattern", "option a program is given")
            if not pattern.startswith("-"):
                raise ValueError(f"option pattern {pattern!r} must start with '-'")
        return value

    @field_validator("subcommands")
    @classmethod
    def _subcommands_as_typed(cls, value: list[str] | None) -> list[str] | None:
        for name in value or ():
            _exact(name, "subcommand", "first argument")
        return value


def _exact(value: str, what: str, matched: str) -> None:
    """Refuse a name that differs from the one meant only by what a person does not see
    (spaces around it, a zero-width space, a no-break space, a full-width or Cyrillic
    letter, a dash that is not ``-``): arguments are compared exactly, so
    ``forbid_options = ["--exec "]`` or ``["-\u2010exec"]`` forbade nothing."""
    from reach_core.config_problems import look_alike, oddities, shown

    found = oddities(value)
    name = value.split("=", 1)[0]  # what a program reads as the option (or subcommand): ASCII
    if any(unicodedata.category(c) == "Pd" and c != "-" for c in value):
        found.append("holds a dash that is not `-`")
    elif not name.isascii() and not found:
        found.append("holds a letter that is not ASCII where the name is (a look-alike?)")
    if found:
        meant = "".join("-" if unicodedata.category(c) == "Pd" else c for c in look_alike(value))
        hint = f"; did you mean {meant!r}?" if meant and meant != value else ""
        raise ValueError(f"{what} {shown(value, escape=not name.isascii())} {' and '.join(found)}: "
                         f"it matches no {matched}{hint}")


class ShellSettings(BaseModel):
    """The whole plugin: which programs, where they run, and how long and loud they may be."""

    model_config = ConfigDict(extra="forbid")

    root: Path | None = Field(
        default=None,
        description="Working directory of every command; `cwd` may only pick a directory below it.",
    )
    commands: dict[str, CommandRule] = Field(default_factory=dict)
    search_path: str = Field(
        default=DEFAULT_SEARCH_PATH,
        description="Where binaries are looked up at start-up; also the child's fixed PATH.",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra fixed environment variables; nothing is inherited from reach's own.",
    )
    timeout: float = Field(default=10.0, gt=0)
    max_output_bytes: int = Field(
        default=16_000, ge=256, description="Per stream; kept as head + tail around a marker."
    )
    max_arg_chars: int = Field(default=4_096, ge=1)
    confine_paths: bool = Field(
        default=True,
        description="Every argument (and option value) that may name a path must resolve inside "
        "`root`: absolute paths elsewhere, `..` climbing out, `~` and symbolic links leading out "
        "are refused (false: arguments reach any file reach's user can).",
    )
    max_total_arg_chars: int = Field(default=32_768, ge=1)
    ssh_host_config: bool = Field(
        default=False,
        description="Let ssh, scp, sftp and the ssh that git and rsync start read the host user's "
        "~/.ssh (config, default keys, known_hosts) and /etc/ssh/ssh_config (false: each call's ssh "
        "reads a config of reach's own: no agent socket, no default key, known hosts from the call's "
        "empty HOME and the system-wide file, BatchMode). ssh finds ~/.ssh through the password "
        "database, not HOME, so the private HOME does not keep it out. Set true only when the agent "
        "may use every key, agent socket and ProxyCommand of that user.",
    )

    @field_validator("commands")
    @classmethod
    def _simple_names(cls, value: dict[str, CommandRule]) -> dict[str, CommandRule]:
        for name in value:
            if not _COMMAND_NAME.match(name):
                raise ValueError(
                    f"command name {name!r} must be a bare program name such as 'ls' "
                    "(set `path` for a binary outside search_path)"
                )
        return value

    @field_validator("env")
    @classmethod
    def _no_path_override(cls, value: dict[str, str]) -> dict[str, str]:
        if "PATH" in value:
            raise ValueError("set `search_path` instead of env.PATH")
        from .isolation import managed_env_key

        managed = sorted(name for name in value if managed_env_key(name))
        if managed:
            raise ValueError(
                f"env may not set {', '.join(managed)}: reach-shell sets these itself so that "
                "commands never read config the agent can write (docs/plugins/reach-shell.md)"
            )
        return value

    @model_validator(mode="after")
    def _root_when_commands(self) -> ShellSettings:
        if self.commands and self.root is None:
            raise ValueError(
                "`root` is required when `commands` is set: commands only run inside it"
            )
        return self

    def confines(self, name: str) -> bool:
        rule = self.commands[name]
        return self.confine_paths if rule.confine_paths is None else rule.confine_paths

    def timeout_for(self, name: str) -> float:
        rule = self.commands[name]
        return rule.timeout if rule.timeout is not None else self.timeout
