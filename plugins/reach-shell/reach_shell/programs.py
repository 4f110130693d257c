"""The option grammars of the programs reach-shell knows: GNU tar, git, GNU sort, find.

Written from the programs' own documentation (`tar --help`, git.c's
`handle_options`, parse-options). Options marked with a `runs` reason make the
program run another program the model chose; they are refused whatever the
allow-list says, in every spelling. Other programs get the conservative
default grammar (see grammar.py).
"""

from __future__ import annotations

import filecmp
import os
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

from .grammar import Grammar, Option, Takes


def _options(
    spec: str, runs: dict[str, str] | None = None, escapes: dict[str, str] | None = None,
    follows: dict[str, str] | None = None,
) -> tuple[Option, ...]:
    """`"-f --file=; -v --verbose; --backup[=]"`: `=` a required value, `[=]` an optional one.
    `runs`, `escapes`, `follows`: the reasons of `Option.runs` / `.escapes` / `.follows`, keyed by
    any one name."""
    out = []
    for entry in spec.split(";"):
        names = entry.split()
        if not names:
            continue
        takes: Takes = "no"
        clean = []
        for name in names:
            if name.endswith("[=]"):
                takes, name = "optional", name[:-3]
            elif name.endswith("="):
                takes, name = "required", name[:-1]
            clean.append(name)
        reason = next((r for n, r in (runs or {}).items() if n in clean), "")
        escape = next((r for n, r in (escapes or {}).items() if n in clean), "")
        follow = next((r for n, r in (follows or {}).items() if n in clean), "")
        out.append(Option(tuple(clean), takes, reason, escape, follow))
    return tuple(out)


_EXTRACTS = "extracts members through the symbolic links on their way (`data/x` wrote `/srv/data/x`)"
_DEREFERENCES = "follows the symbolic links it meets, reading or changing what they lead to"

_TAR_RUNS = {
    "--to-command": "pipes every extracted file into a command",
    "--use-compress-program": "runs the given program as the compressor",
    "--rsh-command": "runs the given program to reach a remote archive",
    "--rmt-command": "runs the given program as the remote tape server",
    "--info-script": "runs a script at the end of each volume",
    "--checkpoint-action": "can run a command at each checkpoint (exec=)",
}

TAR = Grammar(
    "tar",
    old_style_first=True,
    options=_options(
        """-A --catenate --concatenate; -c --create; --delete; -d --diff --compare; -r --append;
        --test-label; -t --list; -u --update; -x --extract --get; --check-device;
        -g --listed-incremental=; -G --incremental; --hole-detection=; --ignore-failed-read;
        --level=; --no-check-device; --no-seek; -n --seek; --occurrence[=]; --sparse-version=;
        -S --sparse; --add-file=; -C --directory=; --exclude=; --exclude-backups;
        --exclude-caches; --exclude-caches-all; --exclude-caches-under; --exclude-ignore=;
        --exclude-ignore-recursive=; --exclude-tag=; --exclude-tag-all=; --exclude-tag-under=;
        --exclude-vcs; --exclude-vcs-ignores; --no-null; --no-recursion; --no-unquote;
        --no-verbatim-files-from; --null; --verbatim-files-from; --recursion;
        -T --files-from=; --unquote; -X --exclude-from=; --anchored; --ignore-case;
        --no-anchored; --no-ignore-case; --no-wildcards; --no-wildcards-match-slash;
        --wildcards; --wildcards-match-slash; --keep-directory-symlink; --keep-newer-files;
        -k --keep-old-files; --no-overwrite-dir; --one-top-level[=]; --overwrite;
        --overwrite-dir; --recursive-unlink; --remove-files; --skip-old-files;
        -U --unlink-first; -W --verify; --ignore-command-error; --no-ignore-command-error;
        -O --to-stdout; --to-command=; --atime-preserve[=]; --clamp-mtime;
        --delay-directory-restore; --group=; --group-map=; --mode=; --mtime=; -m --touch;
        --no-delay-directory-restore; -o --no-same-owner; --no-same-permissions;
        --numeric-owner; --owner=; --owner-map=; -p --preserve-permissions --same-permissions;
        --same-owner; --sort=; -s --preserve-order --same-order; --acls; --no-acls;
        --no-selinux; --no-xattrs; --selinux; --xattrs; --xattrs-exclude=; --xattrs-include=;
        --force-local; -f --file=; -F --info-script= --new-volume-script=; -L --tape-length=;
        -M --multi-volume; --rmt-command=; --rsh-command=; --volno-file=;
        -b --blocking-factor=; -B --read-full-records; -i --ignore-zeros; --record-size=;
        -H --format=; --old-archive --portability; --pax-option=; --posix; -V --label=;
        -a --auto-compress; -I --use-compress-program=; -j --bzip2; -J --xz; --lzip; --lzma;
        --lzop; --no-auto-compress; --zstd; -z --gzip --gunzip --ungzip;
        -Z --compress --uncompress; --backup[=]; --hard-dereference; -h --dereference;
        -K --starting-file=; --newer-mtime=; -N --newer= --after-date=; --one-file-system;
        -P --absolute-names; --suffix=; --strip-components=; --transform= --xform=;
        --checkpoint[=]; --checkpoint-action=; --full-time; --index-file=; -l --check-links;
        --no-quote-chars=; --quote-chars=; --quoting-style=; -R --block-number;
        --show-defaults; --show-omitted-dirs; --show-snapshot-field-ranges;
        --show-transformed-names --show-stored-names; --totals[=]; --utc; -v --verbose;
        --warning=; -w --interactive --confirmation; --restrict; --usage; --version; -? --help""",
        _TAR_RUNS,
        follows={"-x": _EXTRACTS, "-d": "compares members with the files at their names, through the links on "
                 "their way", "-h": _DEREFERENCES},
        escapes={"-P": "extracts members at the absolute or `..` names written in the archive, wherever they point",
         "-T": "reads the names of the files to archive or extract from a file, where no path check sees "
               "them (a list naming `/elsewhere/x` archived that file)"},
    ),
)

_GIT_GLOBAL_RUNS = {
    "-c": "sets any configuration key, and many keys run programs (core.pager, core.fsmonitor)",
    "--config-env": "sets any configuration key from the environment",
    "--exec-path": "changes where git finds the programs it runs",
    "--list-cmds": "is internal to git",
    "--help": "starts man, info or a web browser (configurable per repository)",
}

_GIT_SUB_RUNS = {
    "--ext-diff": "runs an external diff program",
    "--textconv": "runs text conversion programs",
    "--filters": "runs the repository's filter programs",
    "--upload-pack": "runs the given program for the transport",
    "--receive-pack": "runs the given program for the transport",
    "--exec": "runs the given command",
    "--extcmd": "runs the given diff command",
    "--open-files-in-pager": "runs the given pager",
    "--tool": "runs a diff or merge tool",
    "--web": "starts a web browser",
    "--help": "starts man, info or a web browser (configurable per repository)",
}

# Options of git's subcommands that read like prefixes of a program-running one
# but are options of their own (an exact name wins over an abbreviation).
_GIT_SUB_SAFE = "--text; --no-ext-diff; --no-textconv"

# Subcommands that exist to run other programs (bisect run, submodule foreach, filter-branch).
GIT_PROGRAM_SUBCOMMANDS = frozenset(
    {
        "filter-branch", "difftool", "mergetool", "instaweb", "web--browse", "send-email",
        "bisect", "submodule", "daemon", "credential", "credential-cache", "credential-store",
        "upload-pack", "receive-pack", "upload-archive", "remote-ext", "remote-fd", "shell",
        "help",  # starts man, info or a web browser
        "maintenance",  # `start` installs crontab / systemd timers outside the root
        "p4", "svn", "cvsimport", "cvsserver", "cvsexportcommit", "archimport", "quiltimport",
    }
)

_TEMPLATE_RUNS = (
    "copies a folder's config and hooks into the new repository, and a filter or hook there runs "
    "a program during the checkout"
)

GIT = Grammar(
    "git",
    program_subcommands=GIT_PROGRAM_SUBCOMMANDS,
    abbreviations=False,  # git.c compares global options exactly; unknown ones are errors
    options=_options(
        """-c=; --config-env=; --exec-path[=]; --list-cmds=; -C=; --git-dir=; --work-tree=;
        --namespace=; --super-prefix=; --attr-source=; -p --paginate; -P --no-pager; --bare;
        --no-replace-objects; --literal-pathspecs; --glob-pathspecs; --noglob-pathspecs;
        --icase-pathspecs; --no-optional-locks; --no-lazy-fetch; --no-advice; -v --version;
        -h --help; --html-path; --man-path; --info-path""",
        _GIT_GLOBAL_RUNS,
    ),
    after_subcommand=Grammar(
        "git subcommand",
        shorts_known=False,  # each subcommand has its own letters: read bundles conservatively
        options=_options(
            "; ".join(f"{name}[=]" for name in _GIT_SUB_RUNS) + "; " + _GIT_SUB_SAFE,
            _GIT_SUB_RUNS,
        ),
        subcommand_dangers={
            "grep": _options("-O --open-files-in-pager[=]", {"-O": "runs the given pager"}),
            "rebase": _options("-x --exec=", {"-x": "runs the given command after each commit"}),
            "clone": _options(
                "-u --upload-pack=; -c --config=; --template=",
                {
                    "-u": "runs the given upload-pack program",
                    "-c": "writes config into the new repository, and many keys run programs",
                    "--template": _TEMPLATE_RUNS,
                },
            ),
            "init": _options("--template=", {"--template": _TEMPLATE_RUNS}),
            "apply": _options("--unsafe-paths", escapes={
                "--unsafe-paths": "applies a patch to the names written in it, `../elsewhere/x` and "
                                  "`/elsewhere/x` too (without it git refuses them)"}),
            "ls-remote": _options("-u --upload-pack=", {"-u": "runs the given upload-pack program"}),
            "difftool": _options("-x --extcmd= ; -t --tool=", {"-x": "runs a diff command", "-t": "runs a tool"}),
            "mergetool": _options("-t --tool=", {"-t": "runs a merge tool"}),
        },
    ),
)
# Options that read the names of the files to work on from a file (`sort --files0-from=list`):
# the list is inside the root, the names in it are not checked, so while paths are confined
# they are refused (Option.escapes).
_NAME_LIST = ("reads the names of the files to read from a file, where no path check sees them "
              "(a list naming `/elsewhere/x` read that file)")

SORT = Grammar(
    "sort",
    options=_options(
        """-b --ignore-leading-blanks; -d --dictionary-order; -f --ignore-case;
        -g --general-numeric-sort; -i --ignore-nonprinting; -M --month-sort;
        -h --human-numeric-sort; -n --numeric-sort; -R --random-sort; --random-source=;
        -r --reverse; --sort=; -V --version-sort; --batch-size=; -c --check[=]; -C;
        --compress-program=; --debug; --files0-from=; -k --key=; -m --merge; -o --output=;
        -s --stable; -S --buffer-size=; -t --field-separator=; -T --temporary-directory=;
        --parallel=; -u --unique; -z --zero-terminated; --help; --version""",
        {"--compress-program": "runs the given program to compress temporary files"},
        {"--files0-from": _NAME_LIST},
    ),
)

# find's primaries are single-dash words, not letter bundles: they are matched whole.
FIND = Grammar(
    "find",
    shorts_known=False,
    abbreviations=False,
    options=_options(
        "-exec; -execdir; -ok; -okdir; -files0-from; -L; -follow",
        {name: "runs the given command for each file" for name in ("-exec", "-execdir", "-ok", "-okdir")},
        follows={"-L": _DEREFERENCES, "-follow": _DEREFERENCES},
        escapes={"-files0-from": "reads the names of its starting points from a file, where no path check sees them "
                         "(a list naming `/elsewhere` walked it, and `-delete` deleted there)"},
    ),
)

# Programs without a grammar: nothing is known of their letters, but long options
# (and find-style words) that run a program in the common tools are refused in
# any program, prefixes included. Refusing them in a program where they mean
# something else costs a retry; missing them costs the host.
_COMMON_RUNS = {
    name: "runs another program in the tools that have it"
    for name in (
        "--to-command", "--use-compress-program", "--compress-program", "--checkpoint-action",
        "--info-script", "--new-volume-script", "--rsh-command", "--rmt-command", "--rsh",
        "--rsync-path", "--ext-diff", "--upload-pack", "--receive-pack", "--exec", "--execdir",
        "--open-files-in-pager", "-exec", "-execdir", "-ok", "-okdir",
        "--pre",  # ripgrep: runs the given program on every file searched
        "--unzip-command",  # zip -TT: runs the given command to test the archive
        "--use-askpass",  # wget: runs the given program to ask for a password
        "--pager",  # man -P, and others: runs the given program on the output
    )
}
# `--files0-from` (coreutils), `--files-from` (rsync, bsdtar): names read from a file. Their
# abbreviations are read down to `--files0` / `--files-` only: `--file` is grep's pattern file,
# `--files` ripgrep's file listing (wc and du, which read both as `--files0-from`, have grammars).
# `--filelist` (zstd) and `--file-list` (rhash) likewise, down to `--filel` / `--file-`.
_COMMON_LISTS = tuple(Option((name,), "optional", escapes=_NAME_LIST, least=least)
                      for name, least in (("--files0-from", len("--files0")), ("--files-from", len("--files-")),
                                          ("--filelist", len("--filel")), ("--file-list", len("--file-"))))
DEFAULT = Grammar(
    "default",
    shorts_known=False,
    options=_options("; ".join(f"{n}[=]" for n in _COMMON_RUNS), _COMMON_RUNS) + _COMMON_LISTS,
)

# GNU wc and du: their whole option lists, so an abbreviation (`--f=list`) reads as they read it.
WC = Grammar(
    "wc",
    options=_options(
        """-c --bytes; -m --chars; -l --lines; --files0-from=; -L --max-line-length; -w --words;
        --total=; --debug; --help; --version""",
        escapes={"--files0-from": _NAME_LIST},
    ) + DEFAULT.options,
)
DU = Grammar(
    "du",
    options=_options(
        """-0 --null; -a --all; -A --apparent-size; -B --block-size=; -b --bytes; -c --total;
        -D --dereference-args; -d --max-depth=; --files0-from=; -H; --si; -h --human-readable;
        --inodes; -k; -L --dereference; -l --count-links; -m; -P --no-dereference;
        -S --separate-dirs; -s --summarize; -t --threshold=; --time[=]; --time-style=;
        -X --exclude-from=; --exclude=; -x --one-file-system; --help; --version""",
        escapes={"--files0-from": _NAME_LIST}, follows={"-L": _DEREFERENCES},
    ) + DEFAULT.options,
)

# Checksum programs (GNU md5sum, sha*sum, b2sum, cksum): `-c`/`--check` reads the names of the files
# to hash from its operands, checksum lists the agent writes. `sha256sum -c list` with
# `<hash>  /elsewhere/x` in it answered `OK` or `FAILED` for that file: whether it exists and
# what it holds, one guess at a time. The union of their options, so abbreviations read as theirs.
_CHECK_LIST = ("reads the names of the files to check from the checksum lists given, where no path check "
               "sees them (`<hash>  /elsewhere/x` in a list answered OK or FAILED for that file)")
CHECKSUMS = Grammar(
    "checksums",
    options=_options(
        """-b --binary; -c --check; --tag; -t --text; -z --zero; --ignore-missing; --quiet; --status;
        --strict; -w --warn; -l --length=; -a --algorithm=; --base64; --raw; --untagged; --debug;
        --help; --version""",
        escapes={"-c": _CHECK_LIST},
    ) + DEFAULT.options,
)
# Perl's shasum (Getopt::Long with bundling): long names in any case (`--CHECK`), any unique prefix.
SHASUM = Grammar(
    "shasum",
    ignore_case=True,
    options=_options(
        """-a --algorithm=; -b --binary; -c --check; --tag; -t --text; -u --universal; -0 --01;
        -s --status; -q --quiet; --ignore-missing; -w --warn; --strict; -h --help; -v --version""",
        escapes={"-c": _CHECK_LIST},
    ) + DEFAULT.options,
)
# file(1): `-f`/`--files-from` reads the names to examine from a file (`-bfnames` in a bundle).
FILE = Grammar(
    "file",
    options=_options(
        """-0 --print0; -b --brief; -C --compile; -c --checking-printout; -d --debug; -E;
        -e --exclude=; --exclude-quiet=; -F --separator=; -f --files-from=; -h --no-dereference;
        -i --mime; --apple; --extension; --mime-type; --mime-encoding; -k --keep-going;
        -L --dereference; -l --list; -m --magic-file=; -N --no-pad; -n --no-buffer;
        -p --preserve-date; -P --parameter=; -r --raw; -s --special-files; -S --no-sandbox;
        -v --version; -z --uncompress; -Z --uncompress-noreport; --help""",
        escapes={"-f": _NAME_LIST},
    ) + DEFAULT.options,
)
# xz (and unxz, xzcat, lzma): `--files[=FILE]` and `--files0[=FILE]` read the names to compress or
# decompress from a file: `xz --files=list` wrote `/elsewhere/x.xz` beside the file the list named.
# Its letters are left unknown (the dangerous options have none).
XZ = Grammar(
    "xz",
    shorts_known=False,
    options=_options("--files[=]; --files0[=]", escapes={"--files": _NAME_LIST, "--files0": _NAME_LIST})
    + DEFAULT.options,
)
# GNU gettext's xgettext, msgcat, msgcomm: `-f`/`--files-from` (the input files, whose strings land
# in the output). Letters unknown otherwise, so any bundle holding `f` is refused.
GETTEXT = Grammar(
    "gettext",
    shorts_known=False,
    options=_options("-f --files-from=", escapes={"-f": _NAME_LIST}) + DEFAULT.options,
)
# Universal Ctags: `-L FILE` reads the names of the source files from FILE (their lines land in `tags`),
# `--options=FILE` more options from a file. And it reads every `./.ctags.d/*.ctags` of the working
# directory by itself: a `-L/elsewhere/names` line there printed the lines of files outside. So it
# always runs with `--options=NONE` first (no option file, no CTAGS variable); a ctags without it
# (Exuberant) is a ConfigError.
_OPTION_FILE = ("reads more options, with the names of the files to read, from a file, where no check sees "
                "them (`-L/elsewhere/names` in it tagged the files outside)")
CTAGS = Grammar(
    "ctags",
    shorts_known=False,
    options=_options("-L=; --options=; --options-maybe=",
                     escapes={"-L": _NAME_LIST, "--options": _OPTION_FILE, "--options-maybe": _OPTION_FILE})
    + DEFAULT.options,
    sandbox=("--options=NONE",), sandbox_probe=("--version",),
)
# curl: `-K`/`--config` reads more options from a file, which no check sees: a `url =
# "file:///elsewhere/x"` line in a file of the root printed that file, `output = …` writes anywhere.
# curl takes unique prefixes (`--conf`); letters are left unknown, so any bundle holding `K` goes.
# It also reads long options in any case (`--CONFIG` was not refused) and `--engine` loads an
# OpenSSL engine, a path to a shared library (`--engine /root/x.so` ran its code).
CURL = Grammar(
    "curl",
    shorts_known=False,
    ignore_case=True,
    options=_options(
        "-K --config=; --engine=",
        {"--engine": "loads an OpenSSL engine, a shared library that may be any file (its code runs)"},
        escapes={"-K": "reads more options, with the names of the files to read and write, from a file, where "
                       "no check sees them (`url = \"file:///elsewhere/x\"` in it printed that file, `output = …` "
                       "writes anywhere)"},
    ) + DEFAULT.options,
)

# Launchers: the program's plain arguments are a command line it runs (`xargs sh -c …`,
# `timeout 5 sh`, `env X=1 sh`). Without a command they are harmless or useless
# (`env` prints the environment, `xargs` runs echo), so plain arguments are refused.
_LAUNCHES = "runs its plain arguments as a program (a command and its arguments)"
LAUNCHER = Grammar("launcher", shorts_known=False, options=DEFAULT.options, operands_run=_LAUNCHES)
LAUNCHERS = frozenset(
    {
        "xargs", "timeout", "nice", "nohup", "stdbuf", "setsid", "chroot", "sudo", "doas", "su",
        "runuser", "time", "watch", "flock", "ionice", "taskset", "chrt", "strace", "ltrace",
        "unshare", "nsenter", "busybox", "parallel", "script", "sg", "newgrp", "pkexec", "firejail",
        "systemd-run", "setpriv", "prlimit", "numactl", "catchsegv", "valgrind", "fakeroot",
        "eatmydata", "faketime", "unbuffer", "rlwrap", "xvfb-run", "dbus-run-session", "cgexec",
        "torsocks", "proxychains", "proxychains4", "chpst", "setuidgid", "softlimit", "envdir",
        "run-parts", "start-stop-daemon", "daemonize", "entr", "ssh-agent", "linux32", "linux64",
        "setarch", "tini", "dumb-init", "sshpass",
        # coreutils' runcon, libcap's capsh, moreutils (ifne, pee, chronic, lckdo, mispipe),
        # sandboxes and perf (`perf stat CMD`); GNU gettext's msgexec and msgfilter run their
        # arguments for every message of a catalogue (`msgexec -i x.po sh -c …`).
        "runcon", "capsh", "ifne", "pee", "chronic", "lckdo", "mispipe", "bwrap", "proot", "schroot",
        "systemd-nspawn", "perf", "msgexec", "msgfilter",
    }
)
ENV = Grammar(
    "env",
    options=_options(
        """-i --ignore-environment; -0 --null; -u --unset=; -C --chdir=; -S --split-string=;
        -v --debug; --block-signal[=]; --default-signal[=]; --ignore-signal[=];
        --list-signal-handling; --help; --version""",
        {"-S": "splits its value into a command line and runs it"},
    ),
    operands_run="runs its first argument that is not NAME=value as a program",
    operand_assignments=True,
)

# sed's `e` command and `s///e` run a shell command; `w`/`W`/`r`/`R` write and read any file.
# GNU sed's --sandbox refuses all of them (in scripts from -f files too); a sed without it
# cannot be made safe by reading its script here, so it is a ConfigError.
SED = Grammar(
    "sed", shorts_known=False, options=DEFAULT.options,
    sandbox=("--sandbox",), sandbox_probe=("-n", "q"),
)

_AWK_SYSTEM = re.compile(r"system")
_AWK_PIPE = re.compile(r"(?<!\|)\|(?!\|)")
_AWK_REDIRECT = re.compile(r"print[\s\S]*>")
_AWK_GETLINE_FILE = re.compile(r"getline[\s\S]*<")
_AWK_ARGV = re.compile(r"ARGV")
_AWK_INCLUDE = re.compile(r"@\s*(?:ns)?include")


def awk_reads(text: str) -> str | None:
    """Why an awk program text may open a file that no argument names, or None (every awk).

    The program picks its input files itself: `ARGV[1] = "/elsewhere/x"` (also spelt
    `"/else" "where/x"`, or computed) makes awk read that file next, and gawk's `--sandbox`
    stops only names *added* to ARGV. No check of the arguments sees such a name, so any
    program naming `ARGV` is refused (reading it too: `ARGV[1]` as text cannot be told apart).
    gawk's `@include "file"` reads a source file (a file that is no program is printed in the
    syntax error). awk has no `eval`: these words cannot be built at run time.
    """
    flat = text.replace("\\\r\n", "").replace("\\\n", "")
    if _AWK_ARGV.search(flat):
        return ("names `ARGV`: a program that changes it reads any file it names (`ARGV[1] = \"/elsewhere/x\"`); "
                "name the files as arguments")
    if _AWK_INCLUDE.search(flat):
        return "has `@include`: it reads a source file the arguments do not name; name the files as arguments"
    return None


def awk_danger(text: str) -> str | None:
    """Why an awk program text may run a program or write a file, or None.

    For awks without gawk's --sandbox (mawk, busybox, the one true awk). Read as text,
    not parsed: `system` anywhere, a `|` that is not `||` (print to a command, a command
    into getline, and regex alternation too), and any `>` after a print/printf anywhere in
    the text (a redirection, and a later comparison too: quotes, regex literals, `;` and a
    newline after `,` can all hide where a statement ends, so no statement is delimited).
    Every comparison can be written with `<` instead. Refusing a harmless program costs a retry.
    """
    flat = text.replace("\\\r\n", "").replace("\\\n", "")  # line continuations
    if _AWK_SYSTEM.search(flat):
        return "calls `system` (it runs a shell command)"
    if _AWK_PIPE.search(flat):
        return ("has a `|`: a pipe runs a command (`print | \"sh\"`, `\"cmd\" | getline`); "
                "write a regex alternation /a|b/ as /a/ || /b/")
    if _AWK_REDIRECT.search(flat):
        return ("has a `>` after a print/printf, which may redirect it into a file; write comparisons "
                "with `<` (`5 < NR` for `NR > 5`)")
    return None


def awk_reads_unsandboxed(text: str) -> str | None:
    """`awk_reads`, and for an awk without `--sandbox` also `getline < file`: any `<` after a
    `getline` (the file's name may be computed: `getline l < ("/else" "where/x")`)."""
    reads = awk_reads(text)
    if reads is not None:
        return reads
    flat = text.replace("\\\r\n", "").replace("\\\n", "")
    if _AWK_GETLINE_FILE.search(flat):
        return ("has a `<` after `getline`, which may read a file the arguments do not name "
                "(`getline line < \"/elsewhere/x\"`); name the files as arguments")
    return None


_AWK_FILE = "reads the awk program from a file, where `system()` and pipes cannot be checked"
# mawk, busybox awk, the one true awk: options from their manuals; every program text checked
# (busybox's `-e PROGRAM` is left unknown on purpose, so its program is checked as text).
AWK_CHECKED = Grammar(
    "awk (no sandbox)",
    options=_options(
        "-F --field-separator=; -v --assign=; -f --file=; -W=; -E --exec=; --version; --help",
        {"-f": _AWK_FILE, "-W": "is mawk's -W option (-W exec reads the program from a file)",
         "-E": _AWK_FILE},
    ),
    text_check=awk_danger,
    escape_check=awk_reads_unsandboxed,
)
# gawk: --sandbox switches off system(), pipes, redirections and extensions. A program *file*
# (`-f`, `-i`/`--include`, `-E`) is read by gawk only: its `@include "/elsewhere/cfg"` printed that
# file's lines in the syntax error, and the debugger (`-D cmds`, which needs `-f`) ran `dump
# /elsewhere/x`, writing there. While paths are confined they are refused.
_AWK_SOURCE = ("reads the awk program from a file, where no check sees its `@include \"/elsewhere/x\"` "
               "(gawk printed that file's lines in the syntax error)")
AWK = Grammar(
    "awk", shorts_known=False,
    options=_options(
        "-f --file=; -i --include=; -E=; -D --debug[=]",
        escapes={"-f": _AWK_SOURCE, "-i": _AWK_SOURCE, "-E": _AWK_SOURCE,
                 "-D": "runs debugger commands from a file (`dump /elsewhere/x` wrote there)"},
    ) + DEFAULT.options,
    escape_check=awk_reads,
    sandbox=("--sandbox",), sandbox_probe=("BEGIN { }",), unsandboxed=AWK_CHECKED,
)

# gcc and binutils (expandargv), javac/java: `@file` is replaced by the file's words.
RESPONSE_FILES = Grammar("response files", shorts_known=False, options=DEFAULT.options, response_files=True)
_RESPONSE_NAMES = (
    "gcc", "g++", "cc", "c++", "cpp", "clang", "clang++", "ld", "ld.bfd", "ld.gold", "ld.lld", "as",
    "ar", "nm", "objdump", "objcopy", "readelf", "size", "strings", "strip", "addr2line", "c++filt",
    "ranlib", "elfedit", "gprof", "gcov", "javac", "java", "jar", "javadoc", "jarsigner", "kotlinc",
)

# rsync: `-e`/`--rsh` is the remote shell it runs, `--rsync-path` the program run on the
# other side (locally with a local "remote"), `--daemon` reads a config file whose
# `pre-xfer exec` / `post-xfer exec` run commands. Letters unknown otherwise.
RSYNC = Grammar(
    "rsync",
    shorts_known=False,
    options=_options(
        "-e --rsh=; --rsync-path=; --daemon; --config=; -L --copy-links; -k --copy-dirlinks; --copy-unsafe-links",
        {
            "-e": "runs the given program as the remote shell",
            "--rsync-path": "runs the given program as rsync on the other side",
            "--daemon": "starts a daemon whose config file names commands to run (pre-xfer exec)",
            "--config": "names the daemon config file, whose `exec` lines run commands",
        },
        follows={"-L": _DEREFERENCES, "-k": _DEREFERENCES, "--copy-unsafe-links": _DEREFERENCES},
    ) + DEFAULT.options,
)


def _zip_danger(text: str) -> str | None:
    """zip's `-TT cmd` (also `-TTcmd`, `-TT=cmd`) runs `cmd` to test the archive."""
    if text.startswith("-TT"):
        return "is `-TT` (`--unzip-command`): it runs the given command to test the archive"
    return None


# zip -r stores the files its links lead to (`-y`/`--symlinks` stores the links themselves).
ZIP = Grammar(
    "zip", shorts_known=False, text_check=_zip_danger, follows_unless=("-y", "--symlinks"),
    options=_options("-r --recurse-paths; -R --recurse-patterns",
                     follows={"-r": _DEREFERENCES, "-R": _DEREFERENCES}) + DEFAULT.options,
)

# Info-ZIP unzip: `-:` keeps `../` in member names (without it unzip skips them), so `unzip -: a.zip`
# wrote `../elsewhere/x`. Its letters are unknown otherwise: `-o:`, `-:q` bundles hold it too.
UNZIP = Grammar(
    "unzip",
    shorts_known=False,
    options=_options("-:", escapes={"-:": "extracts members at the `../` names written in the archive, "
                                          "wherever they point (without it unzip skips `../`)"}) + DEFAULT.options,
    follows=_EXTRACTS, follows_unless=("-l", "-v", "-t", "-Z", "-p", "-c", "-z"),  # listing, testing, stdout
)
# GNU cp -L, chown/chgrp -L (with -R), grep -R: links met on the way are followed.
# GNU diff -r follows links to folders (`--no-dereference` keeps them links); ls -L (with -R) lists
# what they lead to.
DIFF = Grammar("diff", shorts_known=False, follows_unless=("--no-dereference",),
               options=_options("-r --recursive", follows={"-r": _DEREFERENCES}) + DEFAULT.options)
LS = Grammar("ls", shorts_known=False,
             options=_options("-L --dereference", follows={"-L": _DEREFERENCES}) + DEFAULT.options)
CP = Grammar("cp", shorts_known=False,
             options=_options("-L --dereference", follows={"-L": _DEREFERENCES}) + DEFAULT.options)
GREP = Grammar("grep", shorts_known=False,
               options=_options("-R --dereference-recursive", follows={"-R": _DEREFERENCES}) + DEFAULT.options)

# GNU split: `--filter=CMD` pipes each chunk into `sh -c CMD`. (Not in the common list:
# `docker ps --filter`, `rsync --filter` are harmless and common.)
SPLIT = Grammar(
    "split",
    shorts_known=False,
    options=_options("--filter=", {"--filter": "pipes each chunk into `sh -c` with the given command"})
    + DEFAULT.options,
)

# wget: `-e`/`--execute` runs wgetrc commands and `--config` reads a wgetrc file (which the
# agent may write); their `use_askpass = <program>` runs that program.
WGET = Grammar(
    "wget",
    shorts_known=False,
    options=_options(
        "-e --execute=; --config=",
        {
            "-e": "runs wgetrc commands, and `use_askpass` runs the program it names",
            "--config": "reads a wgetrc file, whose `use_askpass` runs the program it names",
        },
    ) + DEFAULT.options,
)

# Every keyword of OpenSSH's readconf.c that runs a local program, loads a library or reads more config,
# aliases included: `SmartcardDevice` is `PKCS11Provider` (`-o SmartcardDevice=./x.so` loaded the
# library once a TCP port answered), `XAuthLocation` the xauth program run for X11 forwarding.
_SSH_KEYS = ("proxycommand", "localcommand", "knownhostscommand", "match", "include", "securitykeyprovider",
             "pkcs11provider", "smartcarddevice", "xauthlocation")


def _ssh_danger(text: str) -> str | None:
    """ssh_config keywords given with `-o` that run a local program or read another config."""
    flat = "".join(text.split()).lower()
    word = next((key for key in _SSH_KEYS if key in flat), None)
    if word is not None:
        return f"names the ssh option `{word}`, which runs a program or reads more config"
    return None


def _ssh_words(line: str) -> list[str]:
    """The words of an ssh_config line as ssh splits them: whitespace or `=`, `"`/`'` quotes, `\\` escapes."""
    words: list[str] = []
    word: list[str] = []
    quote = ""
    at = 0
    while at < len(line):
        char = line[at]
        if char == "\\" and at + 1 < len(line):
            at += 1
            word.append(line[at])
        elif quote:
            if char == quote:
                quote = ""
            else:
                word.append(char)
        elif char in "\"'":
            quote = char
        elif char.isspace() or char == "=":
            if word:
                words.append("".join(word))
            word = []
        else:
            word.append(char)
        at += 1
    if word:
        words.append("".join(word))
    return words


_SSH_TOKEN = re.compile(r"%[^%]|\$\{")


def ssh_option_paths(args: Sequence[str], index: int) -> list[str]:
    """Every word of an `-o` option line, each a path ssh may open (`IdentityFile`, `UserKnownHostsFile`,
    `ControlPath`, `IdentityAgent`, `CertificateFile` take paths, lists of them too), and every `-i` file.
    A `%` token or `${VAR}` in them is refused: ssh expands it to text the check never sees.

    The generic path check reads `Key=/x` but not `Key /x`, `Key "/x"` or `Key=a /x`, which ssh reads
    alike (`-o "IdentityFile ../elsewhere/id"` read that key). Over-read: the argument after any short
    bundle ending in `o`, and what follows each `o` of a bundle (`-oKey /x`, `-vo`)."""
    lines: list[str] = []
    files: list[str] = []  # `-i` values: a file, tokens expanded
    before = args[index - 1] if index > 0 else ""
    text = args[index]
    if before.startswith("-") and not before.startswith("--") and len(before) > 1:
        if before.endswith("o"):
            lines.append(text)
        if before.endswith("i"):
            files.append(text)
    if text.startswith("-") and not text.startswith("--"):
        lines += [text[at + 1:] for at in range(1, len(text)) if text[at] == "o"]
        files += [text[at + 1:] for at in range(1, len(text)) if text[at] == "i"]
    words = [word for line in lines for word in _ssh_words(line)] + files
    token = next((word for word in words if _SSH_TOKEN.search(word)), None)
    if token is not None:
        from .argv import ArgvRefused  # argv imports this module

        raise ArgvRefused(
            f"args[{index}]",
            f"an ssh path without `%` tokens or `${{VAR}}`; `{token[:80]}` has one, which ssh expands to text no "
            "check sees (`IdentityFile .%k` with `HostKeyAlias ./elsewhere/id` read `../elsewhere/id`, `%d` and "
            f"`${{HOME}}` are folders outside the root), and reach-shell keeps `{args[index][:40]}` inside the root "
            "(confine_paths)",
            "IdentityFile keys/id",
        )
    return words


# ssh, scp, sftp: `-o ProxyCommand=…` (and LocalCommand, KnownHostsCommand, Match exec,
# Include) run local programs; `-F` reads a config file the agent may write; scp/sftp `-S`
# is the program used instead of ssh, sftp `-D` the local server program run instead.
# Letters are unknown otherwise, so a bundle holding F, S or D is refused: write
# `-o` and its value as two arguments.
SSH = Grammar(
    "ssh",
    shorts_known=False,
    options=_options(
        "-F=; -S=; -D=; -I=",
        {
            "-F": "reads an ssh config file, whose ProxyCommand/LocalCommand run programs",
            "-I": "loads a PKCS#11 library (`PKCS11Provider`), whose code runs",
            "-S": "is the program scp and sftp run instead of ssh (a control socket to ssh)",
            "-D": "is the local program sftp runs as its server (a SOCKS port to ssh)",
        },
    ) + DEFAULT.options,
    text_check=_ssh_danger,
    path_values=ssh_option_paths,
)
# sftp also reads `-b batchfile`: its `!cmd` lines run local commands, its `put`/`get`/`lcd` lines
# name local files no check sees.
SFTP = Grammar(
    "sftp",
    shorts_known=False,
    options=_options("-b=", {"-b": "reads sftp commands from a file, where `!cmd` runs a local command and "
                                   "`put`/`get` name local files no check sees"}) + SSH.options,
    text_check=_ssh_danger,
    path_values=ssh_option_paths,
)

# ssh-keygen: `-D lib` loads a PKCS#11 library (OpenSSH only checks that the file holds the string
# `C_GetFunctionList`; `ssh-keygen -D ./x.so` ran its constructor) and `-w lib` the FIDO middleware.
SSH_KEYGEN = Grammar(
    "ssh-keygen",
    shorts_known=False,
    options=_options("-D=; -w=", {"-D": "loads a PKCS#11 library, whose code runs",
                                  "-w": "loads a security key (FIDO) library, whose code runs"}) + DEFAULT.options,
)

# GnuPG starts gpg-agent, dirmngr and keyboxd when it needs them, and which program it starts is an
# option (`--agent-program ./x.sh`, by prefix `--agent-prog`) or a line of a config file: `--options`,
# or the `gpg.conf`/`gpg-agent.conf` (`pinentry-program`) of a `--homedir` folder the agent writes.
_GPG_HELPER = "names the helper program gpg starts (gpg-agent, dirmngr, keyboxd, the photo viewer)"
GPG = Grammar(
    "gpg",
    shorts_known=False,
    options=_options(
        "--agent-program=; --dirmngr-program=; --keyboxd-program=; --photo-viewer=; --exec-path=; --options=; "
        "--homedir=",
        {**{name: _GPG_HELPER for name in ("--agent-program", "--dirmngr-program", "--keyboxd-program",
                                           "--photo-viewer", "--exec-path")},
         "--options": "reads a gpg.conf, whose `agent-program` line names a program gpg starts",
         "--homedir": "reads the folder's gpg.conf and gpg-agent.conf, which name the programs gpg and its "
                      "agent start (`agent-program`, `pinentry-program`)"},
    ) + DEFAULT.options,
)

# groff, nroff, troff: safer mode (the default) refuses a document's `.sy cmd`, `.pi`, `.open`; `-U` (unsafe)
# lets them run (`.sy touch M` in a document of the root ran). Letters unknown otherwise: any bundle with U.
GROFF = Grammar(
    "groff",
    shorts_known=False,
    options=_options("-U", {"-U": "switches off safer mode, so the document's `.sy` requests run shell commands"})
    + DEFAULT.options,
)

# sqlite3's shell: `.shell`/`.system` run commands, `edit()` runs an editor, `readfile()`/`writefile()`,
# `.output`, `.read`, `.import`, ATTACH and VACUUM INTO read and write any file, from the SQL and dot
# commands in its arguments (`-cmd`, the statements). Its `-safe` mode refuses all of them; it is put
# first, and `-nonce` (the escape from safe mode for one command) and `-init FILE` (read before safe
# mode starts: a `.shell` line in it ran) are refused. A sqlite3 without
# `-safe` (before 3.37) is a ConfigError. Its options are whole words, with one or two dashes.
SQLITE = Grammar(
    "sqlite3",
    shorts_known=False,
    abbreviations=False,
    options=_options(
        "-nonce=; --nonce=; -unsafe-testing; --unsafe-testing; -init=; --init=",
        {**{name: "lets the next dot command or SQL out of `-safe` mode (`.shell`, `readfile()`)"
            for name in ("-nonce", "--nonce", "-unsafe-testing", "--unsafe-testing")},
         **{name: "runs the commands of a file before `-safe` mode takes effect (`.shell` in it ran)"
            for name in ("-init", "--init")}},
    ),
    sandbox=("-safe",), sandbox_probe=(":memory:", "select 1"),
)

# psql's meta-commands run programs (`\!`, `\copy … to program`, `\o |cmd`, `\g |cmd`, backticks in
# any meta-command's arguments) and read or write client files (`\i`, `\lo_import`, `\copy … from
# '/x'`, `\o file`, `\w`). A psql argument may hold one plain describing meta-command (`\dt`,
# `\d+ users`, `\l`) but no other backslash, no backtick with one, and no `|` output target
# (`-o |cmd`); `-f`/`--file` (a script file) is refused.
_PSQL_SAFE_META = re.compile(r"\s*\\(?:d[A-Za-z]*\+?|l\+?|list\+?|conninfo|x|timing|encoding)(?:\s[^\\`|]*)?\s*")
_PSQL_PIPE = re.compile(r"^(?:\s*\||-[A-Za-z]*o\s*\||--o[a-z-]*=\s*\|)")


def _psql_danger(text: str) -> str | None:
    """Why a psql argument may run a program or touch a client file, or None."""
    if _PSQL_PIPE.search(text):
        return "sends the output to a command (`|cmd`)"
    if "\\" in text and not _PSQL_SAFE_META.fullmatch(text):
        return ("holds a psql meta-command other than one plain describing command (`\\dt`, `\\d+ t`, `\\l`): "
                "`\\!`, `\\copy … program`, `\\o |cmd` and backticks run programs, `\\i`, `\\lo_import` and "
                "`\\copy` read client files")
    return None


# libpq reads files named in a connection string: `sslkey`, `sslcert`, `sslrootcert`, `sslcrl`,
# `sslcrldir`, `passfile` (a password file: its passwords log in), `servicefile` and `sslkeylogfile`
# (libpq 18; the latter *writes*), and a `host` that starts with `/` is a socket folder. psql takes a
# connection string or a URI as its first plain argument or `-d`/`--dbname` value: `host=h sslkey=/x`
# (the generic path check saw only what follows the first `=`), `…?host=h&passfile=%2Fx`.
_LIBPQ_FILES = frozenset({"sslkey", "sslcert", "sslrootcert", "sslcrl", "sslcrldir", "passfile", "servicefile",
                          "sslkeylogfile", "host"})
_LIBPQ_SPACE = " \t\n\v\f\r"  # C isspace, as libpq


def _conninfo_pairs(text: str) -> list[tuple[str, str]]:
    """`key=value` pairs as libpq's conninfo_parse reads them: values bare or `'quoted'`, `\\` escapes.
    A text it would refuse is read as far as it goes (over-reading costs nothing)."""
    pairs: list[tuple[str, str]] = []
    at, end = 0, len(text)
    while at < end:
        while at < end and text[at] in _LIBPQ_SPACE:
            at += 1
        start = at
        while at < end and text[at] != "=" and text[at] not in _LIBPQ_SPACE:
            at += 1
        key = text[start:at]
        while at < end and text[at] in _LIBPQ_SPACE:
            at += 1
        if at >= end or text[at] != "=":
            if not key:
                break
            continue
        at += 1
        while at < end and text[at] in _LIBPQ_SPACE:
            at += 1
        value: list[str] = []
        if at < end and text[at] == "'":
            at += 1
            while at < end and text[at] != "'":
                if text[at] == "\\" and at + 1 < end:
                    at += 1
                value.append(text[at])
                at += 1
            at += 1
        else:
            while at < end and text[at] not in _LIBPQ_SPACE:
                if text[at] == "\\" and at + 1 < end:
                    at += 1
                value.append(text[at])
                at += 1
        pairs.append((key, "".join(value)))
    return pairs


def _uri_pairs(text: str) -> list[tuple[str, str]]:
    """The hosts and `?key=value` parameters of a `postgresql://` URI, percent-decoded as libpq does.
    Read in any text holding `://` or `?` (over-read: a scheme libpq refuses is read too)."""
    pairs: list[tuple[str, str]] = []
    scheme = text.find("://")
    if scheme >= 0:
        authority = re.split(r"[/?]", text[scheme + 3:], maxsplit=1)[0]
        for host in authority.rpartition("@")[2].split(","):
            pairs.append(("host", unquote(host.split(":", 1)[0] if not host.startswith("[") else host)))
    if "?" in text:
        for item in text.split("?", 1)[1].split("&"):
            key, _, value = item.partition("=")
            pairs.append((unquote(key), unquote(value)))
    return pairs


def psql_paths(args: Sequence[str], index: int) -> list[str]:
    """The files libpq would open for one psql argument read as a connection string or URI.

    The argument is read whole and, for an option, from after its name (`-dsslkey=/x`,
    `--dbname=host=h sslkey=/x`); keys in any case, every `host` of a list."""
    text = args[index]
    texts = [text]
    if text.startswith("--") and "=" in text:
        texts.append(text.split("=", 1)[1])
    elif text.startswith("-") and len(text) > 2:
        texts.append(text[2:])
    found: list[str] = []
    for each in texts:
        for key, value in _conninfo_pairs(each) + _uri_pairs(each):
            if key.strip().lower() not in _LIBPQ_FILES or not value:
                continue
            found += [v for v in value.split(",") if v] if key.strip().lower() == "host" else [value]
    return found


PSQL = Grammar(
    "psql",
    shorts_known=False,
    options=_options("-f --file=", {"-f": "reads a script whose meta-commands (`\\!`) run programs"})
    + DEFAULT.options,
    text_check=_psql_danger,
    path_values=psql_paths,
)

# OpenSSL: `-engine`, `-keygen_engine`, `-ssl_client_engine` load an engine, and an engine id may be
# a path (the dynamic engine dlopens it); `-provider` loads a provider module (a path, or a name found
# in `-provider-path`); `-config` reads a file whose `providers`/`engines` sections name the modules
# to load (`module = ./x.so`, `dynamic_path = …`). A library in the root ran its code in every one.
# openssl's parser takes each option with one or two dashes, exactly, its value after `=` or in the
# next argument; `openssl engine ID…` loads the engines its arguments name.
_OPENSSL_LOADS = frozenset({"engine", "keygen_engine", "ssl_client_engine", "provider", "provider-path", "config"})
_OPENSSL_OPTION = re.compile(r"--?([^=]*)")


def _openssl_danger(text: str) -> str | None:
    """Why an openssl argument loads a shared library, or None."""
    match = _OPENSSL_OPTION.match(text)
    if match is not None and match.group(1) in _OPENSSL_LOADS:
        return (f"is `-{match.group(1)}`: it loads a shared library (an engine, a provider module, or the "
                "modules a config file names), which runs its code")
    return None


OPENSSL = Grammar(
    "openssl",
    shorts_known=False,
    options=DEFAULT.options,
    text_check=_openssl_danger,
    program_subcommands=frozenset({"engine"}),  # `openssl engine ./x.so` loads the engines it names
)

# jq: a program names the modules and data files it loads in its own text, where no path check
# looks: `import "../elsewhere/s" as $s;` printed `../elsewhere/s.json`, `include "m"
# {search: "/elsewhere"};` loaded `/elsewhere/m.jq`, and `modulemeta` loads a module whose name
# the program computes (with `-L .`, `"../else" + "where/m"` read that file's metadata). While paths
# are confined such programs are refused, and so are programs jq reads from a file (`-f`/`--from-file`,
# bundled as `-nf`, and `--run-tests`), whose text no check sees.
_JQ_MODULES = re.compile(r"(?<![\w.$\"@])(?:import|include|modulemeta)(?!\w)")
_JQ_FILE = ("reads the jq program from a file, where no check sees the modules it imports "
            "(`include \"../elsewhere/m\";` in it loaded that file)")


def jq_reads(text: str) -> str | None:
    """Why a jq program text may load a file no argument names, or None.

    Read as text, not parsed: the words `import`, `include` and `modulemeta`, except as a field
    (`.import`), a variable, a format or right after a quote (`"import"`, a string value). A
    module directive is a keyword at the start of the program (after `module {…};` and other
    directives) and jq has no `eval`, so no program can load a module without one of these words.
    """
    if _JQ_MODULES.search(text):
        return ("names `import`, `include` or `modulemeta`: jq loads the module or data file it names "
                "(`import \"../elsewhere/s\" as $s;`, `{search: \"/elsewhere\"}`); give the data as "
                "input files or with `--slurpfile`/`--rawfile` instead")
    return None


JQ = Grammar(
    "jq",
    shorts_known=False,
    options=_options("-f --from-file; --run-tests[=]", escapes={"-f": _JQ_FILE, "--run-tests": _JQ_FILE})
    + DEFAULT.options,
    escape_check=jq_reads,
)

# less: `--lesskey-src=FILE`, `-k FILE`/`--lesskey-file` (compiled) read a lesskey file whose `#env`
# section sets `LESSOPEN=|cmd %s`, the preprocessor less runs for every file it opens (also when
# its output is no terminal); `--lesskey-content` (less 643+) takes that text as the value. less
# takes long options in any case (`--LESSKEY-SRC`) and by unique prefix; letters bundle (`-Sklk`).
LESS = Grammar(
    "less",
    shorts_known=False,
    ignore_case=True,
    options=_options(
        "-k --lesskey-file=; --lesskey-src=; --lesskey-content=",
        {name: "reads a lesskey file, whose `#env` section sets `LESSOPEN`, a command less runs for every file"
         for name in ("-k", "--lesskey-src", "--lesskey-content")},
    ) + DEFAULT.options,
)

# libarchive's bsdtar (short options from its `aBb:C:cf:HhI:JjkLlmnOoPpqrSs:T:tUuvW:wX:xyZz`, long
# ones by unique prefix). `-T`/`-I`/`--files-from` read the names to archive from a file, `-P` extracts
# members at the absolute and `..` names they carry, and an `@archive` operand adds the entries of
# another archive, where an mtree archive (a text file) takes each entry's data from any path
# (`./x type=file contents=/elsewhere/secret`): `bsdtar -cf o.tar @spec` archived that file.
_MTREE = ("adds the entries of another archive, and an mtree archive (a text file) takes each entry's "
          "data from any path it names (`contents=/elsewhere/x`)")


def _bsdtar_reads(text: str) -> str | None:
    """An `@archive` operand of bsdtar (while paths are confined)."""
    return f"is an `@archive` operand: bsdtar {_MTREE}" if text.startswith("@") and len(text) > 1 else None


BSDTAR = Grammar(
    "bsdtar",
    old_style_first=True,
    options=_options(
        """-a --auto-compress; -B --read-full-blocks; -b --block-size=; -C --cd --directory=; -c --create;
        -f --file=; -H; -h; -I=; -J --xz; -j --bzip --bzip2 --bunzip2; -k --keep-old-files; -L --dereference;
        -l --check-links; -m --modification-time; -n --norecurse --no-recursion; -O --to-stdout; -o;
        -P --absolute-paths; -p --insecure --preserve-permissions; -q --fast-read; -r --append; -S; -s=;
        -T --files-from=; -t --list; -U --unlink --unlink-first; -u --update; -v --verbose; -W=;
        -w --confirmation --interactive; -X --exclude-from=; -x --extract; -y; -Z --compress --uncompress;
        -z --gunzip --gzip; --use-compress-program=; --exclude=; --include=; --format=; --options=;
        --newer=; --newer-mtime=; --newer-than=; --newer-mtime-than=; --older=; --older-mtime=;
        --older-than=; --older-mtime-than=; --strip-components=; --passphrase=; --gid=; --gname=;
        --uid=; --uname=; --null; --totals; --version; --help""",
        {"--use-compress-program": "runs the given program as the compressor",
         "-W": "is another spelling of any long option (`-W use-compress-program=cmd` ran `cmd`, "
               "`-W files-from=list` read a name list); write the long option itself"},
        escapes={"-T": _NAME_LIST, "-I": _NAME_LIST,
                 "-P": "extracts members at the absolute or `..` names written in the archive, wherever they point"},
        follows={"-L": _DEREFERENCES, "-h": _DEREFERENCES, "-H": _DEREFERENCES},
    ) + DEFAULT.options,
    escape_check=_bsdtar_reads,
)

# 7-Zip: switches are case-insensitive words. A list file (`@list`, `-i@list`, `-ir-@list`, and
# `-ai@list`/`-ax@list`, the archives to open) holds the names 7z works on, where no path check sees
# them: `7z a o.7z @list` archived `/elsewhere/secret`, `7z e -so -an -ai@list` printed an archive
# outside. `-spf` extracts members at the absolute names they carry (7z strips them otherwise).
_7Z_LIST = re.compile(r"@|-a?[ix][^@!]{0,3}@", re.IGNORECASE)
_7Z_ABSOLUTE = re.compile(r"-spf(?![a-z0-9])", re.IGNORECASE)


def _7z_reads(text: str) -> str | None:
    """A 7-Zip list file or `-spf` (while paths are confined)."""
    if _7Z_LIST.match(text):
        return f"names a list file: 7z {_NAME_LIST}"
    if _7Z_ABSOLUTE.match(text):
        return "is `-spf`: 7z extracts members at the absolute names written in the archive, wherever they point"
    return None


SEVENZIP = Grammar("7z", shorts_known=False, abbreviations=False, options=DEFAULT.options, escape_check=_7z_reads)

# man-db (argp: unique prefixes). `-C`/`--config-file` reads a man_db.conf whose `DEFINE nroff …`
# names the formatter man runs through a shell (`man -C mdb.conf -l y.1` ran it); `-P`, `-H`, `-X`
# name a pager, browser, viewer. A page the agent wrote (`-l x.1`, `./x.1`, a folder of pages given
# with `-M`) is formatted with its `.so ../elsewhere/x` request, which printed that file.
_MAN_PAGE = ("formats a manual page from the root, whose `.so ../elsewhere/x` request prints any file "
             "(`man -l x.1` printed a file outside)")


def _man_reads(text: str) -> str | None:
    """A man page argument with a `/` is a page file (man-db), read while paths are confined."""
    return f"names a page file: man {_MAN_PAGE}" if "/" in text else None


MAN = Grammar(
    "man",
    options=_options(
        """-C --config-file=; -d --debug; -D --default; --warnings[=]; -f --whatis; -k --apropos;
        -K --global-apropos; -w --where --path --location; -W --where-cat --location-cat; -l --local-file;
        -u --update; -L --locale=; -m --systems=; -M --manpath=; -S -s --sections=; -e --extension=;
        -i --ignore-case; -I --match-case; --regex; --wildcard; --names-only; -a --all; --no-subpages;
        -P --pager=; -r --prompt=; -7 --ascii; -E --encoding=; --no-hyphenation --nh;
        --no-justification --nj; -p --preprocessor=; -t --troff; -T --troff-device[=]; -H --html[=];
        -X --gxditview[=]; -Z --ditroff; -R --recode=; -? --help; --usage; -V --version""",
        {"-C": "reads a man_db.conf, whose `DEFINE` lines name the programs man runs (nroff, the pager)",
         "-P": "runs the given pager", "-H": "runs the given web browser", "-X": "runs gxditview"},
        escapes={"-l": _MAN_PAGE, "-M": "reads manual pages from the given folder: " + _MAN_PAGE},
    ) + DEFAULT.options,
    escape_check=_man_reads,
)

_BY_NAME = {
    "tar": TAR, "gtar": TAR, "git": GIT, "sort": SORT, "find": FIND, "env": ENV,
    "sed": SED, "gsed": SED, "awk": AWK, "gawk": AWK, "mawk": AWK, "nawk": AWK,
    "original-awk": AWK, "busybox": LAUNCHER, "rsync": RSYNC, "zip": ZIP, "unzip": UNZIP, "wget": WGET,
    "split": SPLIT, "gsplit": SPLIT, "wc": WC, "du": DU, "ssh": SSH, "scp": SSH, "sftp": SFTP, "slogin": SSH,
    "ssh-keygen": SSH_KEYGEN, "gpg": GPG, "gpg2": GPG,
    **{name: GROFF for name in ("groff", "nroff", "troff", "gtroff", "gnroff")},
    **{name: CHECKSUMS for name in ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum",
                                    "b2sum", "cksum")},
    "shasum": SHASUM, "file": FILE, "curl": CURL, "ctags": CTAGS, "ctags-universal": CTAGS,
    "cp": CP, "chown": CP, "chgrp": CP, "diff": DIFF, "ls": LS,
    "grep": GREP, "egrep": GREP, "fgrep": GREP, "rgrep": GREP, "sqlite3": SQLITE, "psql": PSQL,
    "openssl": OPENSSL, "jq": JQ, "gojq": JQ, "less": LESS, "bsdtar": BSDTAR, "man": MAN,
    **{name: SEVENZIP for name in ("7z", "7za", "7zr", "7zz", "7zzs")},
    **{name: XZ for name in ("xz", "unxz", "xzcat", "lzma", "unlzma", "lzcat")},
    **{name: GETTEXT for name in ("xgettext", "msgcat", "msgcomm")},
    **{name: LAUNCHER for name in LAUNCHERS},
    **{name: RESPONSE_FILES for name in _RESPONSE_NAMES},
}
_DECLARED = {
    "tar": TAR, "git": GIT, "sort": SORT, "find": FIND, "default": DEFAULT, "env": ENV,
    "launcher": LAUNCHER, "sed": SED, "awk": AWK, "response-files": RESPONSE_FILES,
    "rsync": RSYNC, "zip": ZIP, "wget": WGET, "ssh": SSH, "sftp": SFTP, "split": SPLIT, "checksums": CHECKSUMS,
    "shasum": SHASUM, "file": FILE, "xz": XZ, "gettext": GETTEXT, "ctags": CTAGS, "curl": CURL,
    "openssl": OPENSSL, "jq": JQ, "less": LESS, "bsdtar": BSDTAR, "7z": SEVENZIP,
    "man": MAN, "ssh-keygen": SSH_KEYGEN, "gpg": GPG, "groff": GROFF,
}


#: Folders where the known programs are looked for when telling what a binary really is (`identify`).
_SYSTEM_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin")


def _link_names(binary: str) -> list[str]:
    """The names a binary goes by, the real file's first: `tar -> bsdtar` is bsdtar.

    Every hop of a chain of links counts (`awk -> /etc/alternatives/awk -> /usr/bin/mawk`), the
    real file's name first and the name the binary was found by last."""
    names: list[str] = []
    at = os.path.abspath(binary)
    for _ in range(40):
        names.append(Path(at).name)
        try:
            target = os.readlink(at)
        except OSError:
            break
        at = os.path.normpath(os.path.join(os.path.dirname(at), target))
    names.append(Path(os.path.realpath(binary)).name)
    return list(dict.fromkeys(reversed(names)))


def _same_program(real: str, other: str, size: int) -> bool:
    """Whether `other` is the file `real` (a hard link) or a byte-for-byte copy of it."""
    try:
        if os.path.samefile(real, other):
            return True
        return os.path.getsize(other) == size and filecmp.cmp(real, other, shallow=False)
    except OSError:
        return False


def identify(binary: str) -> list[str]:
    """The known programs' names under which the file `binary` is installed, whatever its own name.

    A program's name says little: `tar` may be a copy or a hard link of bsdtar, `sort` of GNU
    tar, in a folder on the search path the deployment (or the agent, where it can write there)
    filled. Its options are the real program's, so the file is compared with the known programs
    of the system folders, other than itself: the same file (a hard link), or the same bytes (a
    copy). Only the system folders, not the search path: a copy the agent planted in a search-path
    folder it can write (`sort` holding bsdtar's bytes) must not decide what the real bsdtar is,
    and planting one in a system folder takes a write outside the root already.
    """
    real = os.path.realpath(binary)
    try:
        size = os.path.getsize(real)
    except OSError:
        return []
    found = []
    for name in _BY_NAME:
        for folder in _SYSTEM_DIRS:
            candidate = os.path.join(folder, name)
            if (os.path.isfile(candidate) and os.path.realpath(candidate) != real
                    and _same_program(real, candidate, size)):
                found.append(name)
                break
    return found


def grammar_for(command: str, binary: str, declared: str | None = None) -> Grammar:
    """The grammar named in config, else the one of the program the binary really is, else the default.

    What the binary is: the one known program it is the same file as or a copy of (`identify`:
    a `tar` copied from bsdtar is bsdtar); else, and when it is several (a multi-call binary such
    as a hard-linked busybox, whose applet is chosen by the name it is called by), the names of
    its links, the real file's first (`tar -> bsdtar` is bsdtar, not GNU tar); else the
    configured command's name.
    """
    if declared is not None:
        return _DECLARED[declared]
    same = {id(_BY_NAME[name]): _BY_NAME[name] for name in identify(binary)}
    if len(same) == 1:
        return next(iter(same.values()))
    for name in (*_link_names(binary), command):
        if name in _BY_NAME:
            return _BY_NAME[name]
    return DEFAULT
