"""Confining the paths named in a command's arguments to the working root (`confine_paths`).

`cwd` was always kept inside `root`, but the arguments were not: `cat /etc/shadow`,
`cat ../../x`, `sort --output=/etc/x`, `tar -C/ -xf a.tar` and `cat link/x` (a link an
earlier allowed `ln -s` made) reached anything reach's user can. With a root
configured, a user expects the commands to stay in it, so by default every argument
is read for the paths it may name, and each must resolve (symlinks followed, `..`
applied, from the call's working directory) inside the root.

Which pieces of an argument may be a path: the program decides, and no grammar knows
every program, so the check over-reads, as the option check does:

* the whole argument (`/etc/x`, `../x`, `link/x`);
* the value after the first `=` (`--file=/etc/x`, `if=/etc/x`, `-o=/x`);
* after a leading `@` (`@/etc/x`: response files, curl's `-d @file`);
* in a short-option bundle, whatever follows each letter (`-f/etc/x`, `-xvC/`);
* a `file:` URL's path (`file:///etc/x`);
* the items of a `,` or `:` list that start with `/`, `~` or `..` (`--opt=a,/etc/x`,
  `PATH=/a:/etc`), but not a URL's `scheme://`.

A piece that starts with `/` must resolve inside the root (`/dev/null` is allowed:
it reads nothing and keeps nothing); one that starts with `~` is refused (programs
that expand it, such as ssh, read another home); any other piece is joined to the
working directory and resolved. Text that is not a path resolves inside the root
(`%H`, `s/a/b/`, `5`) and passes; grep's pattern, sed's script and awk's program are
skipped where their place is certain (:func:`text_slot`).

What it cannot see: paths inside files a program reads (a tar member, a config
file), symlinks that a recursive program follows on its own (`grep -R`, `find -L`,
`tar -h`), and a symlink swapped in by a concurrent call between this check and the
run. The file permissions of reach's user stay the real boundary.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from .argv import ArgvRefused
from .grammar import Grammar, Parsed

__all__ = ["check_escapes", "check_paths", "link_follower", "resolve", "working_dirs"]

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")

_PROC = "/proc"
_MAX_HOPS = 40  # as the kernel's limit on links followed in one lookup

#: Absolute paths that name no file of the host worth protecting.
HARMLESS = frozenset({"/dev/null"})


def _pieces(arg: str, cwd: Path) -> list[str]:
    """Every piece of `arg` that a program might read as a path (over-read, see module doc)."""
    pieces = [arg]
    if "=" in arg:
        pieces.append(arg.split("=", 1)[1])
    if arg.startswith("@"):
        pieces.append(arg[1:])
    for piece in list(pieces):
        pieces += _list_items(piece)
    if arg.startswith("-") and not arg.startswith("--"):
        pieces += _bundle_tails(arg, cwd)  # every suffix: the list items in it are among them
    for piece in list(pieces):
        if piece[:5].lower() == "file:":
            rest = piece[5:]
            if rest.startswith("//"):
                rest = rest[2:]
                slash = rest.find("/")
                rest = rest[slash:] if slash >= 0 else "/"
            pieces.append(rest)
    return [p for p in dict.fromkeys(pieces) if p and p not in ("-", "--")]


def _list_items(piece: str) -> list[str]:
    """Items of a `,` or `:` list that start like a path out (`--opt=a,/etc/x`, `PATH=/a:/etc`,
    `-Wl,-T,/x`); a URL's `scheme://` is not one (`https://host/x`)."""
    items: list[str] = []
    start = 0
    for at, char in enumerate(piece):
        if char not in ",:":
            continue
        item_end = len(piece)
        for sep in (",", ":"):
            found = piece.find(sep, at + 1)
            if found >= 0:
                item_end = min(item_end, found)
        item = piece[at + 1 : item_end]
        before = piece[start:at]
        start = at + 1
        if char == ":" and item.startswith("//") and _SCHEME.fullmatch(before):
            continue
        if item.startswith(("/", "~", "..")):
            items.append(item)
    return items


def _bundle_tails(arg: str, cwd: Path) -> list[str]:
    """What follows each letter of a short bundle (`-xvf/etc/x` -> `vf/etc/x`, `f/etc/x`, `/etc/x`).

    A tail that starts inside a name which does not exist (and is not `.` or `..`)
    stays below the working directory unless a `..` follows: only tails starting with
    `/` or `~`, at an existing name, at `.`/`..`, or with a `..` after them are kept.
    A long bundle costs a `lstat` per letter, not a resolution per letter."""
    n = len(arg)
    next_slash = [n] * (n + 1)  # index of the first `/` at or after each position
    for i in range(n - 1, -1, -1):
        next_slash[i] = i if arg[i] == "/" else next_slash[i + 1]
    climbs_after = [False] * (n + 1)  # a `..` name starts after this position
    for i in range(n - 1, -1, -1):
        climbs_after[i] = climbs_after[i + 1] or (
            arg[i] == "/" and arg.startswith("..", i + 1) and next_slash[i + 1] == i + 3)
    tails: list[str] = []
    for i in range(2, n):
        if arg[i] in "/~":
            tails.append(arg[i:])
            continue
        end = next_slash[i]
        first = arg[i:end]
        if (first in (".", "..") or climbs_after[end]
                or (len(first) <= 255 and os.path.lexists(os.path.join(cwd, first)))):
            tails.append(arg[i:])
    return tails


def resolve(where: str) -> str:
    """Where the path `where` leads: links followed, `..` applied, a missing name
    and what follows it taken as text (a missing name is no link).

    A path that enters /proc stops there, as written (so it is inside no root):
    `/proc/self/cwd`, `/proc/thread-self`, `/dev/fd` (a link to `/proc/self/fd`) name the
    *reading* process's directory and files. `os.path.realpath` read them in reach, whose
    working directory may lie inside the root (reach started in `~/project`, root `~`),
    while the program reads them in its own: `/proc/self/cwd/..` was the root to the check
    and the root's parent to `cat`. Raises OSError (ELOOP) on a link loop.
    """
    if not where.startswith("/"):
        where = os.path.join(os.getcwd(), where)  # as realpath, without its lexical `..`
    pending = where.split("/")[::-1]  # a stack: the next name last
    current = "/"
    hops = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, part)
        if step == _PROC or step.startswith(_PROC + "/"):
            return "/".join([step, *pending[::-1]])
        try:
            info = os.lstat(step)
        except OSError:  # missing, or not a folder: the rest is text
            return os.path.normpath(os.path.join(step, *pending[::-1]))
        if not stat.S_ISLNK(info.st_mode):
            current = step
            continue
        hops += 1
        if hops > _MAX_HOPS:
            raise OSError(errno.ELOOP, "too many levels of symbolic links", where)
        target = os.readlink(step)
        if target.startswith("/"):
            current = "/"
        pending += target.split("/")[::-1]
    return current


def _outside(piece: str, cwd: Path, root: Path) -> str | None:
    """Why `piece` leads out of `root`, or None."""
    if piece.startswith("~"):
        return "starts with `~`, a home directory outside the root"
    if piece.startswith("/"):
        if os.path.normpath(piece) in HARMLESS:
            return None
        where = piece
    else:
        where = os.path.join(cwd, piece)
    try:
        real = Path(resolve(where))
    except (OSError, ValueError, RuntimeError):
        return "cannot be resolved"
    if real == root or real.is_relative_to(root):
        return None
    if piece.startswith("/"):
        return f"is an absolute path outside the root ({str(real)[:200]})"
    return f"leads outside the root (to {str(real)[:200]}, through `..` or a symbolic link)"


_CHDIR = frozenset({"-C", "--directory", "--chdir"})


def working_dirs(args: Sequence[str], parsed: Parsed, cwd: Path, *, git: bool) -> list[list[Path]]:
    """Per argument, the directories its relative paths may be read from.

    `tar -C dir`, `git -C dir` and `env --chdir` change where later relative names
    land. Each argument is checked from the directory in effect where it is written
    and from the last one; for tar and env also from the call's directory (tar opens
    its archive there). git changes directory at each `-C` at once, and only its
    global options (before the subcommand) do: `git commit -C` names a commit.
    """
    changes: list[tuple[int, str]] = []
    for found in parsed.options:
        option = found.option
        if option is None or option.takes == "no" or found.value is None or not _CHDIR & set(option.names):
            continue
        if git and (parsed.subcommand_index is None or found.index >= parsed.subcommand_index):
            continue
        attached = found.raw != found.spelling and found.raw.endswith(found.value)  # `-Csub`, `--directory=sub`
        changes.append((found.index + (1 if attached else 2), found.value))  # from this argument on
    if not changes:
        return [[cwd] for _ in args]
    per_arg: list[Path] = []
    base, at = cwd, 0
    for index in range(len(args)):
        while at < len(changes) and changes[at][0] <= index:
            base = _chdir(base, changes[at][1])
            at += 1
        per_arg.append(base)
    final = base
    for _, value in changes[at:]:
        final = _chdir(final, value)
    return [sorted({here, final} | ({cwd} if not git else set())) for here in per_arg]


def _chdir(base: Path, value: str) -> Path:
    """The folder `cd value` from `base` reaches: links first, then `..` (as the program goes).
    `-C l/..` with `l -> .` is the parent of `base`, not `base` as `normpath` had it, and
    the arguments after it were read from one folder too deep. A value that cannot be
    resolved (a loop) is refused as an argument by :func:`check_paths`; text is enough here."""
    where = os.path.join(base, value)
    try:
        return Path(resolve(where))
    except (OSError, ValueError):
        return Path(os.path.normpath(where))


class _TextSlot:
    """A program whose first plain argument is text it never opens: grep's pattern, a sed
    script, an awk program. The text may also come by an option (`sources`: then the
    first plain argument is a file); before it may stand only value-less flags (`flags`
    bundled, `longs`) and options whose value is text (`values`: `awk -F: -v n=1`)."""

    __slots__ = ("flags", "longs", "values", "sources", "letters")

    def __init__(self, flags: str, longs: str, values: str, sources: str) -> None:
        self.flags = re.compile(f"-[{flags}]+") if flags else None
        self.longs = frozenset("--" + name for name in longs.split())
        self.values = frozenset(values.split())
        self.sources = tuple(sources.split())
        self.letters = frozenset(s[1] for s in self.sources if len(s) == 2)


_GREP = _TextSlot(
    "abcEFGHhIiLlnoPqRrsTUvwxyZz",
    "recursive dereference-recursive ignore-case no-ignore-case line-number count files-with-matches "
    "files-without-match word-regexp line-regexp invert-match fixed-strings extended-regexp basic-regexp "
    "perl-regexp only-matching quiet silent no-messages with-filename no-filename null null-data "
    "byte-offset initial-tab text color colour line-buffered",
    "", "-e -f --regexp --file")
# sed always runs with --sandbox (no `r`/`w`/`e`), awk with --sandbox or its program checked as
# text (see programs.py): what their text names is never opened, so it is not a path here.
_SED = _TextSlot(
    "nsEruzi",  # a bare `-i` edits in place; a suffix (`-i.bak`) makes the shape unsure
    "quiet silent regexp-extended separate unbuffered null-data posix debug sandbox follow-symlinks in-place",
    "", "-e -f --expression --file")
_AWK = _TextSlot("", "", "-F -v", "-f -e -E -i -l -W --file --source --exec --include --load")
_TEXT_SLOTS = {"grep": _GREP, "egrep": _GREP, "fgrep": _GREP, "sed": _SED, "gsed": _SED,
               "awk": _AWK, "gawk": _AWK, "mawk": _AWK, "nawk": _AWK}


def text_slot(command: str, args: Sequence[str]) -> int | None:
    """The index in `args` of the text grep, sed or awk reads as a pattern or program, or
    None when that is not certain.

    `grep -rn "/api/v1" .` and `sed -n '/start/,/end/p' log.txt` open no file named by
    their first plain argument, so it is not read as a path. It is recognised only in the
    plain shape (see :class:`_TextSlot`), with no option anywhere (before `--`) that
    gives the text another way (`-e`, `-f`, `--regexp`, `--file`, their abbreviations),
    since then the first plain argument is a file. Anything else leaves every argument
    checked as a path, as before.
    """
    slot = _TEXT_SLOTS.get(os.path.basename(command))
    if slot is None:
        return None
    candidate: int | None = None
    value_next = False
    for index, arg in enumerate(args):
        if value_next:
            value_next = False
            continue
        if arg == "--":
            return index + 1 if candidate is None and index + 1 < len(args) else candidate
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            if len(name) > 2 and any(source.startswith(name) for source in slot.sources if source[1] == "-"):
                return None
            if candidate is None and "=" not in arg and arg not in slot.longs:
                return None  # `--exclude-from FILE`, `--max-count 5`: its value is the next argument
            continue
        if arg.startswith("-") and arg != "-":
            if any(letter in arg[1:] for letter in slot.letters):
                return None
            if arg[:2] in slot.values:
                value_next = len(arg) == 2
                continue
            if candidate is None and not (slot.flags and slot.flags.fullmatch(arg)):
                return None  # a flag that may take a value (`-m 5`, `-A3`): unsure
            continue
        if candidate is None:
            candidate = index
    return candidate


def check_escapes(command: str, parsed: Parsed, grammar: Grammar) -> None:
    """Raise `ArgvRefused` for an option that places files by names the program reads from its
    input rather than from the arguments (`Option.escapes`: tar `-P` extracts `/etc/x` and
    `../../x` members where they say). No argument names those paths, so only the option can
    be refused; without it tar strips a leading `/` and skips members that climb. Likewise a
    program text that picks its own files (`grammar.escape_check`: awk's `ARGV`)."""
    check = grammar.escape_check
    if check is not None:
        known = set(grammar.options)
        for found in parsed.found:
            why = check(found.raw) if found.plain or found.option not in known else None
            if why is not None:
                raise ArgvRefused(
                    f"args[{found.index}]",
                    f"a program text that reads only the files named in the arguments; this one {why}, "
                    f"and reach-shell keeps `{command}`'s files inside the root (confine_paths)",
                    "the same program, with the files as arguments",
                )
    for found in parsed.options:
        if found.option is not None and found.option.escapes:
            raise ArgvRefused(
                f"args[{found.index}]",
                f"an option that keeps `{command}` inside the root; `{found.spelling or found.display}` "
                f"{found.option.escapes}, and reach-shell keeps `{command}`'s files inside the root "
                "(confine_paths)",
                "the same call without it",
            )


def link_follower(parsed: Parsed, grammar: Grammar) -> tuple[str, str] | None:
    """(field, why) when the call makes the program follow the symbolic links it meets in its
    input (`Option.follows`, or the grammar's default mode: unzip extracts), else None; None
    too when one of `grammar.follows_unless` is given (`unzip -l`, `zip -ry`)."""
    for found in parsed.options:
        raw = found.raw
        names = [raw.split("=", 1)[0]] if raw.startswith("--") else [f"-{c}" for c in raw[1:]]
        if any(name in grammar.follows_unless for name in names):
            return None
    for found in parsed.options:
        if found.option is not None and found.option.follows:
            return f"args[{found.index}]", f"`{found.spelling or found.display}` {found.option.follows}"
    return ("args", f"`{grammar.name}` {grammar.follows}") if grammar.follows else None


def check_paths(command: str, args: Sequence[str], root: Path, dirs: Sequence[Sequence[Path]],
                grammar: Grammar | None = None) -> None:
    """Raise `ArgvRefused` naming the first argument that names a path outside `root`
    (`dirs[i]`: where argument i's relative paths are read from; grep's pattern, sed's
    script and awk's program are not paths, see :func:`text_slot`; `grammar.path_values`:
    the paths a program reads in a syntax of its own, psql's connection strings)."""
    pattern = text_slot(command, args)
    own = grammar.path_values if grammar is not None else None
    for index, arg in enumerate(args):
        if index == pattern:
            continue
        for cwd in dirs[index]:
            for piece in [*_pieces(arg, cwd), *(own(args, index) if own is not None else [])]:
                why = _outside(piece, cwd, root)
                if why is None:
                    continue
                said = f"`{arg[:80]}`" if piece == arg else f"`{piece[:80]}` in `{arg[:80]}`"
                raise ArgvRefused(
                    f"args[{index}]",
                    f"a path inside the working root {root}; {said} {why}, and reach-shell keeps "
                    f"`{command}`'s arguments inside the root (confine_paths). Name files relative "
                    "to the working directory, without climbing out with `..`",
                    "src/app.py",
                )
