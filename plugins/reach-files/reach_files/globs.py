"""Glob patterns for search_files, matched without backtracking.

``*`` and ``?`` stay within one folder, ``**`` as a whole path segment
crosses folders (``docs/**/*.md``; anywhere else it is the same as ``*``),
``[abc]`` / ``[a-z]`` / ``[!abc]`` is a character class. A pattern without
``/`` matches the file name at any depth (``*.md`` finds every Markdown
file), which is what people mean.

Why not a regular expression (or ``fnmatch``): a glob such as
``*a*a*a*a*a*a*b`` or ``**/**/**/**/zz`` translates to nested unbounded
quantifiers, and Python's backtracking engine then takes exponential time on
a long name or a deep path -- inside one C call that holds the GIL, so no
deadline can fire and the whole event loop stops. Here nothing backtracks:

* A path is matched **segment by segment** against a small automaton whose
  states are positions in the pattern's segment list; a walk carries the set
  of live states per folder (at most one per segment), so a folder no state
  can continue into is never opened. Repeated ``**`` segments collapse to one.
* Within a segment, the ``*``-separated pieces have a fixed length each
  (literals, ``?``, classes: one character apiece). The first piece must sit
  at the start, the last at the end, and every middle piece is taken at its
  **leftmost** occurrence after the previous one (greedy is exact for globs:
  an earlier end never leaves less room for what follows). Each piece is
  found with ``str.find`` or a quantifier-free regular expression, so one
  segment costs at most O(len(name) x len(pattern)) in C, with no exponential
  case. A segment with at most one ``*`` (``*.py``, ``test_*``) is a single
  regex call with a single ``.*``, which can only slide once over the name.

Pattern length and the number of wildcards are capped (``GlobError``), which
bounds the automaton and the per-name work. Compiled globs are cached like
``re.compile``'s patterns.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

from .jail import NAME_MAX

__all__ = ["MAX_PATTERN_CHARS", "MAX_WILDCARDS", "Glob", "GlobError", "compile_glob"]

MAX_PATTERN_CHARS = 1024
MAX_WILDCARDS = 128

_SURROGATE = re.compile("[\ud800-\udfff]")


class GlobError(ValueError):
    """The pattern cannot be used; ``str()`` tells the model what to send instead."""


class _Piece:
    """A fixed-length run of literals, ``?`` and classes between two ``*``.

    ``atoms`` are ``(literal, None)`` or ``(None, regex_atom)``, one character each.
    """

    __slots__ = ("length", "text", "rx", "source")

    def __init__(self, atoms: list[tuple[str | None, str | None]]) -> None:
        self.length = len(atoms)
        self.source = "".join(_esc(lit) if lit is not None else str(rx) for lit, rx in atoms)
        if all(lit is not None for lit, _ in atoms):  # all literal: plain str methods
            self.text: str | None = "".join(lit for lit, _ in atoms)  # type: ignore[misc]
            self.rx: re.Pattern[str] | None = None
        else:  # single-character atoms in a row: a regex with no quantifier, nothing to backtrack
            self.text = None
            self.rx = re.compile(self.source, re.DOTALL)

    def at(self, s: str, i: int) -> bool:
        if self.text is not None:
            return s.startswith(self.text, i)
        assert self.rx is not None
        return self.rx.match(s, i) is not None

    def find(self, s: str, start: int, end: int) -> int:
        """Leftmost start ``>= start`` of an occurrence lying wholly before ``end``, else -1."""
        if self.text is not None:
            return s.find(self.text, start, end)
        assert self.rx is not None
        m = self.rx.search(s, start, end)
        return -1 if m is None else m.start()


class _Segment:
    """One path segment of a pattern (no ``/``), e.g. ``test_*.py``.

    ``match(name)`` is chosen once: with no ``*`` or one ``*``, one C call of a
    regular expression with at most one quantifier, which cannot backtrack more
    than once over the name (``head.*tail``: O(len(name) x len(tail))); with more
    stars, the leftmost-piece walk below, which never backtracks at all.
    """

    __slots__ = ("pieces", "minimum", "min_bytes", "match")

    def __init__(self, pieces: list[_Piece]) -> None:
        self.pieces = pieces  # split at the stars: head, middles..., tail (any may be empty)
        self.minimum = sum(p.length for p in pieces)
        self.min_bytes = sum(len(p.text.encode()) if p.text is not None else p.length for p in pieces)
        self.match: Callable[[str], object]
        if len(pieces) == 1:
            piece = pieces[0]
            self.match = piece.text.__eq__ if piece.text is not None else re.compile(piece.source, re.DOTALL).fullmatch
        elif len(pieces) == 2:
            self.match = re.compile(f"{pieces[0].source}.*{pieces[1].source}", re.DOTALL).fullmatch
        else:
            self.match = self._walk_pieces

    def _walk_pieces(self, name: str) -> bool:
        n = len(name)
        if n < self.minimum:
            return False
        head, tail = self.pieces[0], self.pieces[-1]
        end = n - tail.length
        if not head.at(name, 0) or not tail.at(name, end):
            return False
        pos = head.length
        for piece in self.pieces[1:-1]:
            found = piece.find(name, pos, end)
            if found < 0:
                return False
            pos = found + piece.length
        return True


def _always(_: str) -> bool:
    return True


def _never(_: str) -> bool:
    return False


_ANY = None  # the ``**`` token: any number of whole segments


class Glob:
    """A compiled pattern: a list of segment matchers and ``**`` tokens.

    ``start()`` is the set of live states before the first segment,
    ``step(states, name)`` the set after one more segment (a folder or the
    file name), ``accepts(states)`` whether a path ending there matches.
    """

    def __init__(self, pattern: str, tokens: tuple[_Segment | None, ...]) -> None:
        self.pattern = pattern
        self.tokens = tokens
        self.end = len(tokens)
        self._start = self._closure((0,))
        self._finals: dict[frozenset[int], Callable[[str], object]] = {}
        self._plans: dict[frozenset[int], tuple[frozenset[int], tuple[tuple[Callable[[str], object], int], ...]]] = {}

    def _closure(self, states: Iterable[int]) -> frozenset[int]:
        """Add the state after every ``**`` that is live (``**`` may match no segment)."""
        out: set[int] = set()
        tokens, end = self.tokens, self.end
        for s in states:
            while s not in out:
                out.add(s)
                if s < end and tokens[s] is _ANY:
                    s += 1
                else:
                    break
        return frozenset(out)

    def start(self) -> frozenset[int]:
        return self._start

    def step(self, states: frozenset[int], name: str) -> frozenset[int]:
        plan = self._plans.get(states)
        if plan is None:  # what every name does from these states, worked out once per state set
            stay = self._closure(s for s in states if s < self.end and self.tokens[s] is _ANY)
            moves = tuple(
                (token.match, s + 1) for s in sorted(states) if s < self.end and (token := self.tokens[s]) is not _ANY
            )
            plan = self._plans[states] = (stay, moves)
        stay, moves = plan
        hits = [nxt for match, nxt in moves if match(name)]
        return self._closure((*stay, *hits)) if hits else stay

    def accepts(self, states: frozenset[int]) -> bool:
        return self.end in states

    def file_predicate(self, states: frozenset[int]) -> Callable[[str], object]:
        """For the files of a folder in ``states``: whether a name matches (truthy), i.e.
        ``accepts(step(states, name))`` without building state sets per file. Worked out
        once per state set; usually one segment's ``match``."""
        pred = self._finals.get(states)
        if pred is None:
            matchers: list[Callable[[str], object]] = []
            for s in states:
                if s == self.end:
                    continue
                token = self.tokens[s]
                if token is _ANY:
                    if self.end in self._closure((s,)):
                        matchers = [_always]
                        break
                elif self.end in self._closure((s + 1,)):
                    matchers.append(token.match)
            if not matchers:
                pred = _never
            elif len(matchers) == 1:
                pred = matchers[0]
            else:
                pred = lambda name: any(m(name) for m in matchers)  # noqa: E731
            self._finals[states] = pred
        return pred

    def can_continue(self, states: frozenset[int]) -> bool:
        """Whether a folder in ``states`` may hold a match (some state short of the end)."""
        return len(states) > (self.end in states)

    def matches(self, path: str) -> bool:
        """Whether a relative path such as ``docs/a/b.md`` matches (the walk uses the steps)."""
        states = self._start
        for name in path.split("/"):
            states = self.step(states, name)
            if not states:
                return False
        return self.accepts(states)


def _check(pattern: str) -> None:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise GlobError(
            f"`pattern` is {len(pattern)} characters long; the limit is {MAX_PATTERN_CHARS}. "
            "Send a shorter glob such as docs/**/*.md, or narrow with `path`."
        )
    if "\x00" in pattern:
        raise GlobError("`pattern` contains a NUL byte; send a plain glob such as *.md")
    bad = _SURROGATE.search(pattern)
    if bad:
        raise GlobError(
            f"`pattern` contains a lone surrogate (U+{ord(bad.group()):04X} at character {bad.start()}), "
            "which is not valid Unicode text; send the characters themselves, e.g. *.md"
        )
    wildcards = len(re.findall(r"\*+|\?|\[", pattern))
    if wildcards > MAX_WILDCARDS:
        raise GlobError(
            f"`pattern` has {wildcards} wildcards (`*`, `?`, `[`); the limit is {MAX_WILDCARDS}. "
            "Use fewer, e.g. src/**/*.py, and narrow with `path`."
        )


def _class(seg: str, i: int) -> tuple[str, int] | None:
    """The regex atom for the class starting at ``seg[i] == "["`` and the index after it,
    or None if the bracket is never closed (then ``[`` is a literal)."""
    j = i + 1
    negate = j < len(seg) and seg[j] in "!^"
    if negate:
        j += 1
    items: list[tuple[str, str]] = []
    first = True
    while j < len(seg):
        c = seg[j]
        if c == "]" and not first:
            for lo, hi in items:
                if lo > hi:
                    raise GlobError(
                        f"`pattern` has the character range `{lo}-{hi}` backwards in `{seg[i:j + 1]}` "
                        f"(`{lo}` comes after `{hi}`); write it as `{hi}-{lo}`"
                    )
            body = "".join(_esc(lo) if lo == hi else f"{_esc(lo)}-{_esc(hi)}" for lo, hi in items)
            return ("[^" if negate else "[") + body + "]", j + 1
        first = False
        if j + 2 < len(seg) and seg[j + 1] == "-" and seg[j + 2] != "]":
            items.append((c, seg[j + 2]))
            j += 3
        else:
            items.append((c, c))
            j += 1
    return None


def _esc(c: str) -> str:
    """Any character as an escape that means itself inside and outside a class."""
    return f"\\U{ord(c):08x}"


def _segment(seg: str) -> _Segment:
    pieces: list[_Piece] = []
    atoms: list[tuple[str | None, str | None]] = []
    i, n = 0, len(seg)
    while i < n:
        c = seg[i]
        if c == "*":
            pieces.append(_Piece(atoms))
            atoms = []
            while i < n and seg[i] == "*":
                i += 1
            continue
        if c == "?":
            atoms.append((None, "."))
        elif c == "[" and (cls := _class(seg, i)) is not None:
            atom, i = cls
            atoms.append((None, atom))
            continue
        else:
            atoms.append((c, None))
        i += 1
    pieces.append(_Piece(atoms))
    return _Segment(pieces)


def compile_glob(pattern: str) -> Glob:
    """Check and compile ``pattern`` (``GlobError`` says what is wrong with it).

    The segment matchers are cached like ``re.compile``'s patterns (a model
    repeats its globs); the state tables a walk fills in belong to this one
    ``Glob``, so nothing a call learns outlives it.
    """
    return Glob(pattern, _tokens(pattern))


@functools.lru_cache(maxsize=128)
def _tokens(pattern: str) -> tuple[_Segment | None, ...]:
    _check(pattern)
    text = pattern.strip() or "*"
    if "/" not in text:
        text = "**/" + text
    segments = [s for s in text.split("/") if s not in ("", ".")] or ["*"]
    if ".." in segments:
        raise GlobError("`pattern` may not contain `..`; send a glob inside the folder, e.g. docs/**/*.md")
    tokens: list[_Segment | None] = []
    for seg in segments:
        if seg == "**":
            if tokens and tokens[-1] is _ANY:
                continue  # **/** is **
            tokens.append(_ANY)
        else:
            segment = _segment(seg)
            if segment.min_bytes > NAME_MAX:
                raise GlobError(
                    f"`pattern` has the part `{seg[:40]}…`, which only matches names of at least {segment.min_bytes} "
                    f"bytes; no file or folder name can be longer than {NAME_MAX} bytes. Shorten that part."
                )
            tokens.append(segment)
    if tokens[-1] is _ANY:  # a trailing ** names files below: at least one more segment
        tokens[-1:] = [_segment("*"), _ANY]
    return tuple(tokens)
