"""Configuration problems as a person reads them: the table, the key, what is wrong,
and the closest valid name.

Why one place: a misspelt key must never be ignored (``[agents.support] alow``
would leave ``support`` with every tool), and the error is only useful when it
says where the mistake is and what was meant. The pydantic models
(``reach_core.config``), the plugin-name checks done once plugins are discovered
(``reach_core.config_names``) and ``reach config check`` all report
:class:`Problem` objects, and raise them together as one ``ConfigError``.

No pydantic here: plugin discovery (``reach plugins``) uses :func:`suggest` and
must stay fast.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

__all__ = ["Problem", "look_alike", "named", "oddities", "raise_problems", "shown", "suggest", "unknown"]


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def suggest(name: str, valid: Iterable[str]) -> str | None:
    """The valid name ``name`` most likely meant, or ``None`` when none is close.

    Case and ``-``/``_`` differences are tried first (``Max-Tier`` means
    ``max_tier``), then ``difflib``'s closest match."""
    choices = sorted({v for v in valid if isinstance(v, str)})
    if not choices or not isinstance(name, str):
        return None
    by_norm: dict[str, str] = {}
    for choice in choices:
        by_norm.setdefault(_norm(choice), choice)
    same = by_norm.get(_norm(name))
    if same is not None and same != name:
        return same
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        return close[0]
    close = difflib.get_close_matches(_norm(name), list(by_norm), n=1, cutoff=0.6)
    if close:
        return by_norm[close[0]]
    # a misspelt part of a longer name: `timout` for `default_timeout`
    parts: dict[str, str] = {}
    for norm, choice in by_norm.items():
        for part in norm.split("_"):
            if len(part) >= 4:
                parts.setdefault(part, choice)
    close = difflib.get_close_matches(_norm(name), list(parts), n=1, cutoff=0.75)
    return parts[close[0]] if close else None


# Cyrillic and Greek letters drawn like Latin ones: `suppоrt` (Cyrillic о) is a different name
_LOOK_ALIKES = str.maketrans(
    "аеорсухіјѕԁһԛԝӏвкмнтАВЕКМНОРСТХУІЈЅαοιρνκτυχεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdhqwlbkmhtABEKMHOPCTXYIJSaoipvktuxeABEZHIKMNOPTYX",
)
_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")


def _script(char: str) -> str | None:
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    return next((s for s in _SCRIPTS if name.startswith(s)), "OTHER")


def _mixed_word(name: str) -> bool:
    """A word (letters between non-letters) holding Latin letters and Cyrillic or Greek ones:
    a look-alike letter typed or pasted into a name (``filesуstem``). Words wholly in one
    script (``файлы``, ``mcp:файлы``) are names in that language, not look-alikes."""
    word: set[str] = set()
    for char in name + " ":
        script = _script(char)
        if script is None:
            if "LATIN" in word and word & {"CYRILLIC", "GREEK"}:
                return True
            word = set()
        else:
            word.add(script)
    return False


def oddities(name: str) -> list[str]:
    """What makes ``name`` almost, but not quite, the name a person typed: empty, spaces
    around it, control characters (line breaks, tabs), invisible characters (zero-width
    space, BOM, direction marks), unusual spaces (no-break space), look-alikes of ASCII
    characters (full-width letters) and Latin words with a Cyrillic or Greek letter in
    them. Config compares names exactly, so such a name matches nothing it was meant
    to: ``[agents."support "]`` is a table no caller reaches. Empty list: none of these."""
    if name == "":
        return ["is empty"]
    found = []
    if name != name.strip():
        found.append("has spaces or line breaks around it")
    cats = [unicodedata.category(c) for c in name]
    if any(unicodedata.category(c) == "Cc" for c in name.strip()):
        found.append("holds a control character (a line break, tab or NUL)")
    if "Cf" in cats:
        found.append("holds an invisible character (zero-width space, BOM or direction mark)")
    if any(c in ("Zs", "Zl", "Zp") and ch != " " for c, ch in zip(cats, name, strict=True)):
        found.append("holds an unusual space (a no-break or other non-ASCII space)")
    if any(not ch.isascii() and unicodedata.normalize("NFKC", ch).isascii() and ch.isprintable()
           and unicodedata.category(ch) not in ("Zs",) for ch in name):
        found.append("holds a look-alike of an ASCII character (full-width or styled)")
    if _mixed_word(name):
        found.append("mixes Latin letters with Cyrillic or Greek look-alikes")
    return found


def look_alike(name: str, *, space: str = " ") -> str:
    """The name ``name`` most likely was meant to be: invisible and control characters
    dropped, spaces around it removed, unusual spaces as ``space``, full-width and
    Cyrillic/Greek look-alikes as the ASCII letters they are drawn like."""
    kept = "".join(" " if unicodedata.category(c) in ("Zs", "Zl", "Zp") else c for c in name
                   if unicodedata.category(c) not in ("Cc", "Cf") or c in "\t\n\r")
    text = unicodedata.normalize("NFKC", kept).translate(_LOOK_ALIKES)
    return space.join(text.split())


def shown(value: str, limit: int = 80, *, escape: bool = False) -> str:
    """``value`` as a config error quotes a name: ``repr`` (invisible and look-alike
    characters show as escapes: ``'support\\u200b'``; every non-ASCII one with ``escape``,
    for names that must be ASCII), a URL password masked, long
    ones cut in the middle so both ends (where stray spaces are) stay visible."""
    from .redact import mask_userinfo  # (only when a config is refused)

    text = mask_userinfo(ascii(value) if escape or _needs_escapes(value) else repr(value))
    return text if len(text) <= limit else text[: limit - 33] + "..." + text[-30:]


def named(value: str) -> str:
    """A name in a message: ```name``` when it reads as what it is, else :func:`shown`
    (``'reach\\u200b-shell'``), so a name that only looks right shows why it is not."""
    return f"`{value}`" if not oddities(value) else shown(value)


def _needs_escapes(value: str) -> bool:
    """Non-ASCII letters a person cannot tell from ASCII ones are shown as ``\\uXXXX``."""
    return bool(oddities(value)) and not value.isascii()


@dataclass
class Problem:
    """One thing wrong in the configuration.

    ``table`` is written as in TOML (``agents.support``; ``""`` for the top level
    or an environment variable's own name), ``key`` the key in it (``None`` when
    the whole table is wrong)."""

    table: str
    key: str | None
    message: str
    suggestion: str | None = None

    @property
    def where(self) -> str:
        if self.table.startswith("REACH_"):
            return self.table  # an environment variable
        if self.key is None:
            return f"[{self.table}]"
        return f"[{self.table}] {self.key}" if self.table else self.key

    def __str__(self) -> str:
        text = f"`{self.where}`: {self.message}"
        if self.suggestion is not None:
            shown = (f"[{self.suggestion}]" if self.key is None and not self.table.startswith("REACH_")
                     else self.suggestion)
            text += f"; did you mean `{shown}`?"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "key": self.key, "where": self.where, "message": self.message,
                "suggestion": self.suggestion, "text": str(self)}


def unknown(table: str, key: str | None, name: str, valid: Sequence[str], *, what: str = "key",
            listing: str | None = None) -> Problem:
    """``name`` is not one of ``valid``: a problem with the closest valid name, or the
    list of valid names when none is close (``listing`` names them, e.g. "installed plugins")."""
    hint = suggest(name, valid)
    message = f"unknown {what}"
    if hint is None:
        shown = ", ".join(f"`{v}`" for v in sorted(valid)[:40]) or "none"
        message += f"; valid {listing or what + 's'}: {shown}"
    return Problem(table, key, message, hint)


def raise_problems(problems: Sequence[Problem], *, source: Any = None) -> None:
    """Raise one ``ConfigError`` listing every problem (first line: the first problem).

    The problems stay on the exception as ``problems`` for ``reach config check --json``."""
    if not problems:
        return
    where = f" in {source}" if source else ""
    lines = [str(p) for p in problems]
    head = f"invalid config{where}: {lines[0]}"
    if len(lines) > 1:
        head += "\n" + "\n".join(f"  also: {line}" for line in lines[1:])
    err = ConfigError(head)
    err.problems = list(problems)  # type: ignore[attr-defined]
    raise err
