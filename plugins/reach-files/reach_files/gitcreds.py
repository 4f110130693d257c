"""Credentials written into git's config files, masked before the model sees them.

``git clone https://user:TOKEN@host/repo`` leaves the token in ``.git/config``'s ``url``;
CI systems and scripts add ``[http] extraheader = AUTHORIZATION: basic ...``; people put
tokens in ``[url "https://TOKEN@github.com/"] insteadOf``, ``sendemail.smtpPass`` or an
inline ``credential.helper``. The rest of such a file (remotes, branches, submodules) is
what an honest question about a repository needs, so the file is read with those values
replaced by ``[REDACTED]`` instead of being refused (``docs/plugins/reach-files.md``).

Which files: git's own config files by name (``config`` and ``config.worktree`` inside a
``.git`` folder or a git directory, ``.git/modules/*/config``, ``.gitmodules``,
``.gitconfig`` and its copies, ``.config/git/config``), and any text file with a section
header of the kinds that carry URLs or credentials (``[remote "x"]``, ``[url "..."]``,
``[http]``, ``[credential]`` ...), which is how a file pulled in by ``[include] path = ...``
looks whatever its name. Spans are found on *logical* lines (a value continued with a
backslash at the end of a line is one value), and positions are byte offsets into the file,
so a page of a big file masks what lies in it, also when a token is cut by the page edge.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from reach_core.redact import MASK, key_is_secret

from .protect import fold, uncopied, vcs_name

__all__ = ["MASK_BYTES", "git_config_name", "git_config_text", "hooks_paths", "mask", "merged_spans", "secret_spans",
           "url_spans"]

MASK_BYTES = MASK.encode()

# the sections git keeps URLs and credentials in (`[http "https://h/"]`, old style `[http.https://h/]`)
_SECTIONS = re.compile(
    rb"(?im)^[ \t]*\[[ \t]*(?:remote|url|https?|credential|submodule|lfs|sendemail|include|includeif|branch)"
    rb"(?:[ \t]+\"|[ \t]*\]|\.)"
)
_CONTINUED = re.compile(rb"\\\r?\n")
# scheme://USERINFO@host: everything up to the last `@` before the host's `/` (a `?` or `#` in a
# password, which git would not read as one, is masked too: the text is a secret all the same).
# Every pattern here runs over a whole file (up to max_search_file_bytes) in one call that holds
# the GIL, so each must try a match at most once per run of the characters it starts with: a
# scheme starts where a run of scheme characters starts (the lookbehind), not at every `\b` in it
_URL = re.compile(rb"(?i)(?<![a-z0-9+.-])(?P<scheme>[a-z0-9+.-]+)://(?P<ui>[^/\n]*)@")
# a token in a URL's query (`?access_token=...`, GitLab's `private_token`)
_QUERY = re.compile(rb"(?i)[?&](?:access_token|private_token|oauth_token|token|auth|key|password)=(?P<v>[^&\s\"';#]+)")
# user:secret@host without a scheme (scp-like spelling of a URL): a word (no space, `/` or `@`) just
# before `@host`, from the start of the name before its first `:` (`_scp_userinfo`). Found from the
# word's start only (the lookbehind): a pattern that may start anywhere inside the word and scan
# hundreds of bytes from each start took seconds per megabyte of `+++:` (a stalled event loop)
_AT_WORD = re.compile(rb"(?<![^\s/@])[^\s/@]+(?=@[\w-])")
_USER_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+%~-")
# `key = value` at the start of a line (after LF or a lone CR); `http.extraheader = ...` as people write it too
_ENTRY = re.compile(rb"(?m)(?:^|(?<=\r))[ \t]*(?P<k>[A-Za-z][A-Za-z0-9.-]*)[ \t]*=[ \t]*(?P<v>[^\r\n]*)")
# an inline helper that prints the password: helper = "!f() { echo password=TOKEN; }; f"
_HELPER_SECRET = re.compile(rb"(?i)\b(?:password|token|secret|pass)\s*=\s*(?P<v>[^\s;\"'`|&)]+)")
# git keys whose name sounds secret but whose value is a path, a boolean or a key's id
_NOT_SECRET = frozenset({"signingkey", "cookiefile", "sslkey", "sslcert", "sslcainfo", "sslcapath",
                         "sslkeypasswordprotected", "sslcertpasswordprotected", "sshcommand", "askpass"})
_SSH = frozenset({b"ssh", b"git+ssh", b"ssh+git"})
_GITCONFIG = re.compile(r"\.gitconfig[._-].*|.+\.gitconfig", re.DOTALL)


def git_config_name(names: Sequence[str]) -> bool:
    """Do the path components ``names`` (below a root) name one of git's config files?"""
    if not names:
        return False
    last = uncopied(fold(names[-1]))  # the last name first: a search asks this of every file it opens
    if last in ("config", "config.worktree"):
        if any(vcs_name(n) for n in names[:-1]):
            return True  # .git/config, .git/modules/sub/config, .git/worktrees/w/config.worktree
        return last == "config" and [fold(n) for n in names[-3:-1]] == [".config", "git"]
    return last in (".gitmodules", ".gitconfig") or _GITCONFIG.fullmatch(last) is not None


def git_config_text(data: bytes) -> bool:
    """Does ``data`` have a section header of the kinds that carry URLs and credentials?"""
    return _SECTIONS.search(data) is not None


def _logical(data: bytes) -> tuple[bytes, list[int], list[int]]:
    """``data`` with backslash-newline continuations removed, and the map back to ``data``:
    joined offset ``j`` lies at ``origin[i] + j - starts[i]`` for the last ``starts[i] <= j``."""
    starts, origin, pieces = [0], [0], []
    pos = 0
    length = 0
    for m in _CONTINUED.finditer(data):
        pieces.append(data[pos:m.start()])
        length += m.start() - pos
        pos = m.end()
        starts.append(length)
        origin.append(pos)
    pieces.append(data[pos:])
    return b"".join(pieces), starts, origin


def secret_spans(data: bytes, base: int = 0) -> list[tuple[int, int]]:
    """The byte ranges of credentials in git-config text ``data`` (which starts at file
    offset ``base``), as file offsets, sorted and merged."""
    joined, starts, origin = _logical(data)
    found = url_spans(joined)
    for m in _AT_WORD.finditer(joined):
        if b"://" not in joined[max(0, m.start() - 3):m.start()]:  # a URL's userinfo: _URL's
            start = _scp_userinfo(m.group())
            if start is not None:
                found.append((m.start() + start, m.end()))
    for m in _ENTRY.finditer(joined):
        key = m.group("k").decode("ascii").lower().rsplit(".", 1)[-1]
        value = m.group("v").rstrip(b" \t")
        if not value:
            continue
        if key == "extraheader" or (key not in _NOT_SECRET and key_is_secret(key)):
            found.append((m.start("v"), m.start("v") + len(value)))
        elif key == "helper":
            found.extend((h.start("v") + m.start("v"), h.end("v") + m.start("v"))
                         for h in _HELPER_SECRET.finditer(value))

    def where(j: int) -> int:
        i = bisect.bisect_right(starts, j) - 1
        return origin[i] + j - starts[i]

    return merged_spans([(base + where(a), base + where(b - 1) + 1) for a, b in found if b > a])


def merged_spans(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` sorted, the ones that overlap or touch joined: the form `mask` takes, and how
    the spans of several finders (git config, configuration files) are put together."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def url_spans(data: bytes) -> list[tuple[int, int]]:
    """The spans of credentials in the URLs of ``data``: a userinfo (``https://TOKEN@host``,
    ``postgres://app:pw@db``; ``ssh://git@host`` keeps its user name) and a token in a query
    (``?password=``, ``&private_token=``). Used for configuration files too (`confcreds`)."""
    found: list[tuple[int, int]] = []
    for m in _URL.finditer(data):
        ui = m.group("ui")
        if ui and (b":" in ui or m.group("scheme").lower() not in _SSH):
            found.append(m.span("ui"))
    found.extend(m.span("v") for m in _QUERY.finditer(data))
    return found


def _scp_userinfo(word: bytes) -> int | None:
    """Where ``user:secret`` starts in ``word`` (the text just before ``@host``), or None: the
    name before the first ``:`` (letters, digits, ``_.+%~-``, at least one), then a non-empty
    rest. ``x=user:tok`` gives ``user:tok``; ``git`` (``git@host:o/r``) has no secret."""
    colon = word.find(b":")
    if colon <= 0 or colon == len(word) - 1:
        return None
    start = colon
    while start > 0 and word[start - 1] in _USER_CHARS:
        start -= 1
    return None if start == colon else start


def mask(data: bytes, spans: Sequence[tuple[int, int]], base: int = 0) -> tuple[bytes, int]:
    """``data`` (which starts at file offset ``base``) with every span that touches it replaced
    by ``[REDACTED]``, and how many were."""
    out: list[bytes] = []
    pos = 0
    count = 0
    for a, b in spans:
        a, b = max(a - base, pos), min(b - base, len(data))
        if b <= a:
            continue
        out += [data[pos:a], MASK_BYTES]
        pos = b
        count += 1
    out.append(data[pos:])
    return b"".join(out), count


_HOOKS_PATH = re.compile(rb"(?im)^[ \t]*hookspath[ \t]*=[ \t]*(?P<v>\"[^\"\n]*\"|[^;#\n]*)")


def hooks_paths(data: bytes) -> list[str]:
    """The folders a repository's config tells git to run hooks from (``core.hooksPath``; husky
    sets ``.husky/_``, others ``.githooks``), as written: relative ones are relative to the
    working tree's top folder, ``~/`` is the home folder."""
    joined = _logical(data)[0]
    found = []
    for m in _HOOKS_PATH.finditer(joined):
        value = m.group("v").strip().strip(b'"').strip()
        if value:
            found.append(value.decode("utf-8", "surrogateescape"))
    return found
