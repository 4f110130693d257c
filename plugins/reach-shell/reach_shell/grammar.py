"""How a program reads its own command line: option grammars, and parsing argv with them.

An allow-list is only as good as its reading of the arguments. `tar tvf x` has
no dash, yet `t`, `v` and `f` are options; `tar --use-compress-prog=sh` is
`--use-compress-program` to tar (argp takes unique prefixes); `git -c k=v`
consumes the next argument. Checking the text of each argument misses all three.

So a known program is described by its grammar (which letters and names exist,
which take a value, which make the program run another program) and the
arguments are parsed the way the program parses them. Every option found, in
whatever spelling (bundled, abbreviated, with an attached value, in tar's
dash-less first argument) is then checked as that option.

Where the grammar and the real program could disagree, the parse errs towards
reading *more* options, never fewer:

* a value consumed from the next argument is still checked as an option when it
  starts with `-`;
* options after `--` are still options (not every program honours `--`);
* any prefix of a program-running long option is that option, even when the
  real program would find it ambiguous;
* an unknown letter in a bundle is an option of its own and the bundle goes on.

Programs without a grammar get the conservative default: every argument that
starts with `-` is an option, read both as a whole and as a bundle of letters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Takes = Literal["no", "required", "optional"]


@dataclass(frozen=True)
class Option:
    """One option with every spelling the program accepts for it."""

    names: tuple[str, ...]
    takes: Takes = "no"
    #: Why it is refused whatever the allow-list says (it runs another program), or "".
    runs: str = ""
    #: Why it is refused while the command's paths are confined (`confine_paths`): it makes the
    #: program place files at names it reads from its input, not from the arguments (tar -P), or "".
    escapes: str = ""
    #: Why it is refused while paths are confined *and* the root holds a symbolic link leading out
    #: (a deployment's own): the program follows the links it meets in its input, where no path
    #: check sees them (tar `-x` extracts `data/x` through `data -> /srv/data`, `grep -R`), or "".
    follows: str = ""
    #: The shortest abbreviation read as this dangerous option (0: any of 3 characters or more).
    #: Lets a default-grammar entry (`--files0-from`) leave the common `--file` of grep alone.
    least: int = 0

    @property
    def shorts(self) -> tuple[str, ...]:
        return tuple(n for n in self.names if not n.startswith("--"))

    @property
    def longs(self) -> tuple[str, ...]:
        return tuple(n for n in self.names if n.startswith("--"))


@dataclass(frozen=True)
class Grammar:
    """The option syntax of one program (or of one level of it, as git's global options)."""

    name: str
    options: tuple[Option, ...] = ()
    #: tar: a first argument without a dash is a bundle of option letters.
    old_style_first: bool = False
    #: getopt_long / argp / git parse-options accept unique prefixes of long options.
    abbreviations: bool = True
    #: Perl's Getopt::Long (shasum) matches long names in any case: `--CHECK` is `--check`.
    #: The grammar's long names are then written in lower case.
    ignore_case: bool = False
    #: False: the letters of a short bundle are not known, so a `-xyz` argument is checked
    #: as a whole and letter by letter (the default grammar), plus any program-running letter.
    shorts_known: bool = True
    #: Grammar of the options after the first plain argument (git's subcommand).
    after_subcommand: Grammar | None = None
    #: Per subcommand, extra options that run programs (`rebase -x`, `grep -O`).
    subcommand_dangers: dict[str, tuple[Option, ...]] = field(default_factory=dict)
    #: Subcommands that exist to run other programs: refused whatever the allow-list says.
    program_subcommands: frozenset[str] = frozenset()
    #: Launchers (`env`, `xargs`, `timeout`): why a plain argument is refused (it is a program
    #: to run), or "". With `operand_assignments`, `NAME=value` operands are not programs (env).
    operands_run: str = ""
    operand_assignments: bool = False
    #: The program reads `@file` as more arguments (gcc, binutils): options the check never sees.
    response_files: bool = False
    #: A program text the program runs (awk): says why an argument is refused, or None.
    #: Applied to plain arguments and to options the grammar does not know (their text may be a
    #: program given to an option it does not describe); the values of known options are exempt.
    text_check: Callable[[str], str | None] | None = None
    #: Like `text_check`, applied while paths are confined only: a program text that opens files
    #: the arguments do not name (awk's `ARGV[1] = "/elsewhere/x"`, `getline < f`).
    escape_check: Callable[[str], str | None] | None = None
    #: Arguments put first that switch off what runs programs (`sed --sandbox`), when the binary
    #: accepts them (checked at start-up by running it with `sandbox_probe` after them); else
    #: `unsandboxed` is used instead, and when that is None the command is a ConfigError.
    sandbox: tuple[str, ...] = ()
    sandbox_probe: tuple[str, ...] = ()
    unsandboxed: Grammar | None = None
    #: Like `Option.follows`, for the program's default mode (unzip extracts through links),
    #: unless one of `follows_unless` is given (a letter in any bundle, or a long name).
    follows: str = ""
    follows_unless: tuple[str, ...] = ()
    #: While paths are confined: the paths the program reads from argument `i` of `args` in a syntax
    #: of its own, checked as paths too (psql's connection string `host=h sslkey=/x`, ssh's `-o` line
    #: `IdentityFile /x`, which the generic reading of an argument does not split).
    path_values: Callable[[Sequence[str], int], list[str]] | None = None

    def short(self, letter: str) -> Option | None:
        flag = "-" + letter
        return next((o for o in self.options if flag in o.names), None)

    def exact_long(self, name: str) -> Option | None:
        return next((o for o in self.options if name in o.longs), None)

    def resolve_long(self, name: str) -> Option | None:
        """The option `--name` means to the program, abbreviations included.

        Exact names win (as in getopt_long and git). Then a prefix of a
        program-running option *is* that option, ambiguity or not: refusing an
        ambiguous spelling costs nothing, missing a dangerous one costs the host.
        """
        if self.ignore_case:
            name = name.lower()
        exact = self.exact_long(name)
        if exact is not None or not self.abbreviations or len(name) < 3:
            return exact
        dangerous = [o for o in self.options if (o.runs or o.escapes or o.follows) and len(name) >= o.least
                     and any(n.startswith(name) for n in o.longs)]
        if dangerous:
            return dangerous[0]
        matches = {o for o in self.options if any(n.startswith(name) for n in o.longs)}
        return matches.pop() if len(matches) == 1 else None

    def for_subcommand(self, subcommand: str) -> Grammar:
        extra = self.subcommand_dangers.get(subcommand, ())
        if not extra:
            return self
        return Grammar(
            name=f"{self.name} {subcommand}",
            options=extra + self.options,  # the subcommand's meaning of `-x` comes first
            abbreviations=self.abbreviations,
            ignore_case=self.ignore_case,
            shorts_known=self.shorts_known,
        )


@dataclass
class Found:
    """One option as the program will read it, or one plain argument."""

    index: int
    raw: str
    option: Option | None = None  # None: a plain argument, or an option the grammar does not know
    spelling: str = ""  # the name as written: "-f", "--use-compress-prog"
    value: str | None = None
    plain: bool = False

    @property
    def forms(self) -> list[str]:
        """Every spelling of this option, bare and with its value, for pattern matching."""
        if self.option is None:
            return [self.raw]
        forms = list(self.option.names)
        if self.value is not None:
            forms += [f"{n}{self.value}" for n in self.option.shorts]
            forms += [f"{n}={self.value}" for n in self.option.longs]
        return forms

    @property
    def display(self) -> str:
        if self.option is None:
            return self.raw.split("=", 1)[0] if self.raw.startswith("--") else self.raw
        longs = self.option.longs
        return longs[0] if longs else self.option.names[0]


@dataclass
class Parsed:
    """Everything found in one argument list."""

    found: list[Found]
    subcommand: str | None = None
    subcommand_index: int | None = None

    @property
    def options(self) -> list[Found]:
        return [f for f in self.found if not f.plain]


def is_option(arg: str) -> bool:
    return arg.startswith("-") and arg != "-"


def parse(args: Sequence[str], grammar: Grammar) -> Parsed:
    """Read `args` as the program would, over-reading where unsure (see the module doc)."""
    parsed = Parsed(found=[])
    current = grammar
    index = 0
    if grammar.old_style_first and args and args[0] and not args[0].startswith("-"):
        index = _old_style(args, grammar, parsed)
    while index < len(args):
        arg = args[index]
        if arg == "--" or not is_option(arg):
            if arg != "--":
                parsed.found.append(Found(index, arg, plain=True))
                if current.after_subcommand is not None and parsed.subcommand is None:
                    parsed.subcommand, parsed.subcommand_index = arg, index
                    current = current.after_subcommand.for_subcommand(arg)
            index += 1
            continue
        index = _option_at(args, index, current, parsed)
    return parsed


def _old_style(args: Sequence[str], grammar: Grammar, parsed: Parsed) -> int:
    """tar's `cvf archive dir`: each letter an option; their values follow in order."""
    waiting: list[Found] = []
    for letter in args[0]:
        option = grammar.short(letter)
        found = Found(0, args[0], option or Option((f"-{letter}",)), spelling=f"-{letter}")
        parsed.found.append(found)
        if option is not None and option.takes == "required":
            waiting.append(found)
    index = 1
    for found in waiting:
        if index < len(args):
            found.value = args[index]
            _recheck_value(args, index, grammar, parsed)
            index += 1
    return index


def _option_at(args: Sequence[str], index: int, grammar: Grammar, parsed: Parsed) -> int:
    arg = args[index]
    if arg.startswith("--"):
        name, has_value, value = arg.partition("=")
        option = grammar.resolve_long(name)
        if option is None:
            parsed.found.append(Found(index, arg))
            return index + 1
        found = Found(index, arg, option, spelling=name, value=value if has_value else None)
        parsed.found.append(found)
        if option.takes == "required" and not has_value and index + 1 < len(args):
            found.value = args[index + 1]
            _recheck_value(args, index + 1, grammar, parsed)
            return index + 2
        return index + 1
    if not grammar.shorts_known:
        parsed.found.append(Found(index, arg))
        word = next((o for o in grammar.options if arg in o.names), None)
        if word is not None:  # a single-dash word (find's -exec) the grammar knows whole
            parsed.found.append(Found(index, arg, word, spelling=arg))
        for letter in arg[1:]:
            option = grammar.short(letter)
            if option is not None and (option.runs or option.escapes or option.follows):
                parsed.found.append(Found(index, arg, option, spelling=f"-{letter}"))
        return index + 1
    position = 1
    while position < len(arg):
        letter = arg[position]
        option = grammar.short(letter)
        found = Found(index, arg, option or Option((f"-{letter}",)), spelling=f"-{letter}")
        parsed.found.append(found)
        if option is not None and option.takes != "no":
            rest = arg[position + 1 :]
            if rest:
                found.value = rest
            elif option.takes == "required" and index + 1 < len(args):
                found.value = args[index + 1]
                _recheck_value(args, index + 1, grammar, parsed)
                return index + 2
            break
        position += 1
    return index + 1


def _recheck_value(args: Sequence[str], index: int, grammar: Grammar, parsed: Parsed) -> None:
    """A value that looks like an option is checked as one too: the grammar may be wrong."""
    if is_option(args[index]):
        _option_at(args, index, grammar, parsed)
